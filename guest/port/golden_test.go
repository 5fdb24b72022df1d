// golden_test.go runs testdata/progs/*.rune against their expectation comments,
// and checks the slicing property on each.

package port

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/port/porttest"
)

// outcome is everything one run of a prog produced.
type outcome struct {
	result string // canonical JSON, or "error: ..."
	used   uint64
	final  []byte // final checkpoint
	emits  []string
	steps  int
	at     map[uint64][]byte // the checkpoint of each Yield that has one, by steps used
	emitAt []uint64          // the steps used at each result that emitted
}

// runScript runs src to its end in slices of the given size, answering
// suspensions from the script. Every slice boundary round-trips the
// checkpoint through bytes, since Step takes and returns bytes.
func runScript(t testing.TB, rt RuntimePort, src []byte, s *script, slice uint64) outcome {
	return runScriptLazy(t, rt, src, s, slice, false)
}

// runScriptLazy is runScript; lazy asks for no checkpoint at Yields.
func runScriptLazy(t testing.TB, rt RuntimePort, src []byte, s *script, slice uint64, lazy bool) outcome {
	t.Helper()
	return runScriptBatched(t, rt, src, s, slice, lazy, 1)
}

// runScriptBatched is runScriptLazy with up to slices slices a Step.
func runScriptBatched(t testing.TB, rt RuntimePort, src []byte, s *script, slice uint64, lazy bool, slices uint64) outcome {
	t.Helper()
	ctx := context.Background()
	cp, err := rt.Start(ctx, Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: "inv-1"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	out := outcome{at: map[uint64][]byte{}}
	var reply []byte
	next := 0
	var prevUsed uint64
	for {
		req := Request{Checkpoint: cp, Reply: reply, Slice: slice, Clock: s.Clock, Lazy: lazy, Slices: slices}
		if cp == nil {
			req.Invocation = "inv-1"
		}
		r, err := rt.Step(ctx, req)
		if err != nil {
			t.Fatalf("slice %d, step %d: %v", slice, out.steps, err)
		}
		out.steps++
		if r.Used < prevUsed || r.Used-prevUsed > slice*max(slices, 1) {
			t.Fatalf("used went from %d to %d in %d slices of %d", prevUsed, r.Used, max(slices, 1), slice)
		}
		prevUsed = r.Used
		if r.Checkpoint == nil && len(r.Emits) > 0 {
			t.Fatalf("slice %d: a lazy yield with %d events and no checkpoint", slice, len(r.Emits))
		}
		reply = nil
		cp = r.Checkpoint
		if len(r.Emits) > 0 {
			out.emitAt = append(out.emitAt, r.Used)
		}
		for _, e := range r.Emits {
			d, err := checkpoint.DecodeData(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			j, _ := checkpoint.DataToJSON(d)
			out.emits = append(out.emits, e.Kind+" "+string(j))
		}
		switch r.Kind {
		case Yield:
			if r.Checkpoint != nil {
				out.at[r.Used] = r.Checkpoint
			}
			continue
		case Act, Event:
			if next >= len(s.Suspends) {
				t.Fatalf("unexpected %s %s %s: no more act/await directives", r.Kind, r.Tag, jsonOf(t, r.Args))
			}
			want := s.Suspends[next]
			next++
			if want.Act != (r.Kind == Act) || (want.Act && want.Tag != r.Tag) || want.Args != jsonOf(t, r.Args) {
				t.Fatalf("suspension %d: got %s %s %s, want act=%v %s %s", next, r.Kind, r.Tag, jsonOf(t, r.Args), want.Act, want.Tag, want.Args)
			}
			if r.Seq != uint64(next) {
				t.Fatalf("suspension seq %d, want %d", r.Seq, next)
			}
			reply = want.Reply
			continue
		case Done:
			out.result = jsonOf(t, r.Result)
		case Error:
			out.result = "error: " + r.Err.Error()
		}
		out.used, out.final = r.Used, r.Checkpoint
		if next != len(s.Suspends) {
			t.Fatalf("prog ended after %d of %d act/await directives", next, len(s.Suspends))
		}
		return out
	}
}

const unsliced = porttest.Unsliced

type script = porttest.Script

func parseScript(t testing.TB, src []byte) *script { return porttest.ParseScript(t, src) }
func jsonOf(t testing.TB, b []byte) string         { return porttest.JSONOf(t, b) }
func progFiles(t testing.TB) []string              { return porttest.ProgFiles(t, "../..") }

func TestGolden(t *testing.T) {
	for _, file := range progFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			src := readProg(t, file)
			s := parseScript(t, src)
			rt := NewNative()
			if s.CompileErr != "" {
				_, err := rt.Load(context.Background(), src)
				if err == nil || err.Error() != s.CompileErr {
					t.Fatalf("compile error:\n got %v\nwant %s", err, s.CompileErr)
				}
				return
			}
			if s.Want == "" && s.WantErr == "" {
				t.Fatalf("%s has no want:, error: or compile-error: directive", file)
			}
			base := runScript(t, rt, src, s, unsliced)
			switch {
			case s.WantErr != "":
				if base.result != "error: "+s.WantErr {
					t.Fatalf("result:\n got %s\nwant error: %s", base.result, s.WantErr)
				}
			case base.result != s.Want:
				t.Fatalf("result:\n got %s\nwant %s", base.result, s.Want)
			}
			if len(s.Emits) > 0 || len(base.emits) > 0 {
				if !reflect.DeepEqual(base.emits, s.Emits) {
					t.Fatalf("emits:\n got %q\nwant %q", base.emits, s.Emits)
				}
			}
		})
	}
}

// TestSlicing checks the slicing property: any slice size gives the same
// result, the same used steps and the same final checkpoint bytes. Every
// prog runs at every size with RUNEHOST_LONG=1 (make test-long); make test
// leaves out all but one of the smallest sizes of the longest progs
// (porttest.SizesFor).
func TestSlicing(t *testing.T) {
	for _, file := range progFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := readProg(t, file)
			s := parseScript(t, src)
			if s.CompileErr != "" {
				return
			}
			rt := NewNative()
			rt.NoReuse = true // every slice boundary decodes the checkpoint
			live := NewNative()
			base := runScript(t, rt, src, s, unsliced)
			for _, size := range porttest.SizesFor(t, name, base.used) {
				got := runScript(t, rt, src, s, size)
				if got2 := runScript(t, live, src, s, size); got2.result != got.result || got2.used != got.used || !bytes.Equal(got2.final, got.final) || !reflect.DeepEqual(got2.emits, got.emits) {
					t.Fatalf("slice %d: a live machine and a decoded one disagree", size)
				}
				got3 := runScriptLazy(t, live, src, s, size, true)
				if got3.result != got.result || got3.used != got.used || !bytes.Equal(got3.final, got.final) || !reflect.DeepEqual(got3.emits, got.emits) {
					t.Fatalf("slice %d: lazy slices and checkpointed ones disagree", size)
				}
				// Many slices a Step, lazy or each batch checkpointed: the
				// same run, and at every boundary a checkpoint was asked
				// for, the same bytes as a Step a slice gave there.
				for _, k := range []uint64{2, 7, 64} {
					for _, lazy := range []bool{true, false} {
						got4 := runScriptBatched(t, live, src, s, size, lazy, k)
						if got4.result != got.result || got4.used != got.used || !bytes.Equal(got4.final, got.final) || !reflect.DeepEqual(got4.emits, got.emits) {
							t.Fatalf("slice %d, %d a step (lazy %v): the run differs from a slice a step", size, k, lazy)
						}
						if lazy && !slices.Equal(got4.emitAt, got3.emitAt) {
							t.Fatalf("slice %d, %d a step: events came at %v steps, a slice a step at %v", size, k, got4.emitAt, got3.emitAt)
						}
						for used, cp := range got4.at {
							if want, ok := got.at[used]; !ok || !bytes.Equal(cp, want) {
								t.Fatalf("slice %d, %d a step (lazy %v): the checkpoint at %d steps differs from a slice a step's (found %v)", size, k, lazy, used, ok)
							}
						}
					}
				}
				if got.result != base.result || got.used != base.used || !reflect.DeepEqual(got.emits, base.emits) {
					t.Fatalf("slice %d: result %s used %d emits %d; unsliced: %s used %d emits %d",
						size, got.result, got.used, len(got.emits), base.result, base.used, len(base.emits))
				}
				if !bytes.Equal(got.final, base.final) {
					t.Fatalf("slice %d: final checkpoint differs (%d vs %d bytes)", size, len(got.final), len(base.final))
				}
			}
		})
	}
}

// addSeeds adds every testdata prog, and the source set of each that imports.
func addSeeds(f *testing.F) {
	porttest.AddProgSeeds(f, "../..")
	for _, file := range progFiles(f) {
		if b, err := modules.Load(file, nil); err == nil && modules.IsSet(b) {
			f.Add(b)
		}
	}
}

// readProg reads a testdata prog with the modules it imports (from beside
// it and the standard library), as the host gives it.
func readProg(t testing.TB, file string) []byte {
	src, err := modules.Load(file, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return src
}
