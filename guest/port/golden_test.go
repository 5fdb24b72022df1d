// golden_test.go runs testdata/progs/*.rune against their expectation comments,
// and checks the slicing property on each.

package port

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
)

// script is what a golden prog's comments expect.
type script struct {
	input, state []byte
	limit, seed  uint64
	clock        int64
	suspends     []suspend // in order
	emits        []string  // "kind json"
	want         string    // canonical JSON of the result
	wantErr      string    // "L:C: kind: msg"
	compileErr   string    // "L:C: msg"
}

type suspend struct {
	act   bool
	tag   string
	args  string // canonical JSON
	reply []byte // encoded reply
}

func canonJSON(t testing.TB, text string) string {
	t.Helper()
	d, err := checkpoint.DataFromJSON([]byte(text))
	if err != nil {
		t.Fatalf("bad JSON %q: %v", text, err)
	}
	b, err := checkpoint.DataToJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func encodeJSON(t testing.TB, text string) []byte {
	t.Helper()
	d, err := checkpoint.DataFromJSON([]byte(text))
	if err != nil {
		t.Fatalf("bad JSON %q: %v", text, err)
	}
	b, err := checkpoint.EncodeData(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseReply reads "JSON" or "!kind: msg".
func parseReply(t testing.TB, text string) []byte {
	var r checkpoint.Reply
	if strings.HasPrefix(text, "!") {
		kind, msg, _ := strings.Cut(text[1:], ":")
		r.Err = &checkpoint.Error{Kind: strings.TrimSpace(kind), Msg: strings.TrimSpace(msg)}
	} else {
		d, err := checkpoint.DataFromJSON([]byte(text))
		if err != nil {
			t.Fatalf("bad reply %q: %v", text, err)
		}
		r.Value = d
	}
	b, err := checkpoint.EncodeReply(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseScript(t testing.TB, src []byte) *script {
	s := &script{}
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "// ") {
			continue
		}
		key, val, ok := strings.Cut(line[3:], ": ")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "input":
			s.input = encodeJSON(t, val)
		case "state":
			s.state = encodeJSON(t, val)
		case "limit", "seed", "clock":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				t.Fatalf("bad %s: %v", key, err)
			}
			switch key {
			case "limit":
				s.limit = n
			case "seed":
				s.seed = n
			default:
				s.clock = int64(n)
			}
		case "act", "await":
			head, reply, ok := strings.Cut(val, " -> ")
			if !ok {
				t.Fatalf("%s directive needs ' -> reply': %q", key, val)
			}
			sp := suspend{act: key == "act", reply: parseReply(t, strings.TrimSpace(reply))}
			args := head
			if sp.act {
				sp.tag, args, _ = strings.Cut(head, " ")
			}
			sp.args = canonJSON(t, args)
			s.suspends = append(s.suspends, sp)
		case "emit":
			kind, data, _ := strings.Cut(val, " ")
			s.emits = append(s.emits, kind+" "+canonJSON(t, data))
		case "want":
			s.want = canonJSON(t, val)
		case "error":
			s.wantErr = val
		case "compile-error":
			s.compileErr = val
		}
	}
	return s
}

// outcome is everything one run of a prog produced.
type outcome struct {
	result string // canonical JSON, or "error: ..."
	used   uint64
	final  []byte // final checkpoint
	emits  []string
	steps  int
}

// runScript runs src to its end in slices of the given size, answering
// suspensions from the script. Every slice boundary round-trips the
// checkpoint through bytes, since Step takes and returns bytes.
func runScript(t testing.TB, rt RuntimePort, src []byte, s *script, slice uint64) outcome {
	t.Helper()
	ctx := context.Background()
	cp, err := rt.Start(ctx, Input{Source: src, Input: s.input, State: s.state, Limit: s.limit, Seed: s.seed, Invocation: "inv-1"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var out outcome
	var reply []byte
	next := 0
	var prevUsed uint64
	for {
		r, err := rt.Step(ctx, Request{Checkpoint: cp, Reply: reply, Slice: slice, Clock: s.clock})
		if err != nil {
			t.Fatalf("slice %d, step %d: %v", slice, out.steps, err)
		}
		out.steps++
		if r.Used < prevUsed || r.Used-prevUsed > slice {
			t.Fatalf("used went from %d to %d in a slice of %d", prevUsed, r.Used, slice)
		}
		prevUsed = r.Used
		reply = nil
		cp = r.Checkpoint
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
			continue
		case Act, Event:
			if next >= len(s.suspends) {
				t.Fatalf("unexpected %s %s %s: no more act/await directives", r.Kind, r.Tag, jsonOf(t, r.Args))
			}
			want := s.suspends[next]
			next++
			if want.act != (r.Kind == Act) || (want.act && want.tag != r.Tag) || want.args != jsonOf(t, r.Args) {
				t.Fatalf("suspension %d: got %s %s %s, want act=%v %s %s", next, r.Kind, r.Tag, jsonOf(t, r.Args), want.act, want.tag, want.args)
			}
			if r.Seq != uint64(next) {
				t.Fatalf("suspension seq %d, want %d", r.Seq, next)
			}
			reply = want.reply
			continue
		case Done:
			out.result = jsonOf(t, r.Result)
		case Error:
			out.result = "error: " + r.Err.Error()
		}
		out.used, out.final = r.Used, r.Checkpoint
		if next != len(s.suspends) {
			t.Fatalf("prog ended after %d of %d act/await directives", next, len(s.suspends))
		}
		return out
	}
}

func jsonOf(t testing.TB, b []byte) string {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		t.Fatal(err)
	}
	j, err := checkpoint.DataToJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

func progFiles(t testing.TB) []string {
	files, err := filepath.Glob("../../testdata/progs/*.rune")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata progs: %v", err)
	}
	return files
}

// unsliced is a slice large enough for any testdata prog to run in one step.
const unsliced = 1 << 40

// sliceSizes are the slice sizes of the slicing property.
var sliceSizes = []uint64{1, 2, 3, 7, 64, 1000}

func TestGolden(t *testing.T) {
	for _, file := range progFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := parseScript(t, src)
			rt := NewNative()
			if s.compileErr != "" {
				_, err := rt.Load(context.Background(), src)
				if err == nil || err.Error() != s.compileErr {
					t.Fatalf("compile error:\n got %v\nwant %s", err, s.compileErr)
				}
				return
			}
			if s.want == "" && s.wantErr == "" {
				t.Fatalf("%s has no want:, error: or compile-error: directive", file)
			}
			base := runScript(t, rt, src, s, unsliced)
			switch {
			case s.wantErr != "":
				if base.result != "error: "+s.wantErr {
					t.Fatalf("result:\n got %s\nwant error: %s", base.result, s.wantErr)
				}
			case base.result != s.want:
				t.Fatalf("result:\n got %s\nwant %s", base.result, s.want)
			}
			if len(s.emits) > 0 || len(base.emits) > 0 {
				if !reflect.DeepEqual(base.emits, s.emits) {
					t.Fatalf("emits:\n got %q\nwant %q", base.emits, s.emits)
				}
			}
		})
	}
}

// TestSlicing checks the slicing property: any slice size gives the same
// result, the same used steps and the same final checkpoint bytes.
func TestSlicing(t *testing.T) {
	for _, file := range progFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := parseScript(t, src)
			if s.compileErr != "" {
				return
			}
			rt := NewNative()
			base := runScript(t, rt, src, s, unsliced)
			for _, size := range sliceSizes {
				got := runScript(t, rt, src, s, size)
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

var _ = fmt.Sprint

func addSeeds(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/progs/*.rune")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
}
