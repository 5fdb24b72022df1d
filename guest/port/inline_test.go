// inline_test.go checks the slicing property with acts answered inline
// (Native.OnAct): many slices a Step offer the same acts at the same steps
// as a slice a Step, and end the same.

package port

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runehost/runehost/guest/port/porttest"
)

// inlineRun is what a run with inline acts did: each act offered or
// reported, and each event, at the steps used then; how it ended.
type inlineRun struct {
	trail  []string
	result string
	used   uint64
	final  []byte
}

func runInline(t *testing.T, src []byte, s *script, slice, k uint64) inlineRun {
	t.Helper()
	rt := NewNative()
	var out inlineRun
	next := 0
	var used uint64 // as the last result said
	rt.OnAct = func(tag string, args []byte, seq uint64) ([]byte, bool) {
		if next >= len(s.Suspends) || !s.Suspends[next].Act {
			return nil, false
		}
		// Every other act is declined: the host gets it as a result.
		if seq%2 == 0 {
			return nil, false
		}
		out.trail = append(out.trail, fmt.Sprintf("inline %s #%d", tag, seq))
		next++
		return s.Suspends[next-1].Reply, true
	}
	ctx := context.Background()
	cp, err := rt.Start(ctx, Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: "inv-1"})
	if err != nil {
		t.Fatal(err)
	}
	var reply []byte
	for {
		req := Request{Checkpoint: cp, Reply: reply, Slice: slice, Clock: s.Clock, Lazy: true, Slices: k}
		if cp == nil {
			req.Invocation = "inv-1"
		}
		r, err := rt.Step(ctx, req)
		if err != nil {
			t.Fatalf("slice %d, %d a step: %v", slice, k, err)
		}
		used = r.Used
		reply, cp = nil, r.Checkpoint
		if len(r.Emits) > 0 {
			out.trail = append(out.trail, fmt.Sprintf("%d events at %d", len(r.Emits), used))
		}
		switch r.Kind {
		case Yield:
			continue
		case Act, Event:
			if next >= len(s.Suspends) {
				t.Fatalf("unexpected %s", r.Kind)
			}
			out.trail = append(out.trail, fmt.Sprintf("%s %s #%d at %d", r.Kind, r.Tag, r.Seq, r.Used))
			reply = s.Suspends[next].Reply
			next++
			continue
		case Done:
			out.result = jsonOf(t, r.Result)
		case Error:
			out.result = "error: " + r.Err.Error()
		}
		out.used, out.final = r.Used, r.Checkpoint
		return out
	}
}

func TestSlicingInlineActs(t *testing.T) {
	ran := 0
	for _, file := range progFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		src := readProg(t, file)
		s := parseScript(t, src)
		if s.CompileErr != "" || !slices.ContainsFunc(s.Suspends, func(p porttest.Suspend) bool { return p.Act }) {
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			for _, size := range []uint64{1, 3, 64, 1000} {
				base := runInline(t, src, s, size, 1)
				for _, k := range []uint64{2, 7, 64} {
					got := runInline(t, src, s, size, k)
					if !slices.Equal(got.trail, base.trail) || got.result != base.result || got.used != base.used || !bytes.Equal(got.final, base.final) {
						t.Fatalf("slice %d, %d a step:\n%v %s %d\na slice a step:\n%v %s %d", size, k, got.trail, got.result, got.used, base.trail, base.result, base.used)
					}
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no prog with acts")
	}
}
