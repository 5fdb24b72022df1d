// hostile_test.go feeds the port hostile progs and hostile checkpoints.

package port

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

// runToEnd runs src unsliced, answering every act with nil.
func runToEnd(t testing.TB, src string, limit uint64) *Result {
	t.Helper()
	ctx := context.Background()
	rt := NewNative()
	cp, err := rt.Start(ctx, Input{Source: []byte(src), Limit: limit})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var reply []byte
	for {
		r, err := rt.Step(ctx, Request{Checkpoint: cp, Reply: reply, Slice: 1 << 40})
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		reply = nil
		cp = r.Checkpoint
		switch r.Kind {
		case Act, Event:
			reply, _ = checkpoint.EncodeReply(checkpoint.Reply{})
		case Yield:
		default:
			return r
		}
	}
}

func TestHostileProgs(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		limit     uint64
		want      string // prefix of the error, kind first
	}{
		{"infinite loop", "while true { }", 100_000, "steps: step limit of 100000 exceeded"},
		{"infinite loop caught", "while true { try { while true {} } catch e { } }", 50_000, "steps: step limit of 50000 exceeded"},
		{"unbounded recursion", "fn f(n) { return f(n + 1) }\nreturn f(0)", 0, "limit: call depth exceeds the limit of 1000"},
		{"string bomb", "var s = \"x\"\nwhile true { s = s + s }", 0, "limit: string of 16777216 bytes exceeds the limit of 8388608"},
		{"repeat bomb", "return \"abc\" * 100000000", 0, "limit: string of 3 bytes repeated 100000000 times"},
		{"list bomb", "var l = [1]\nwhile true { l = l + l }", 0, "limit: list of 2097152 elements exceeds the limit of 1048576"},
		{"list repeat bomb", "return [1, 2] * 10000000", 0, "limit: list of 2 elements repeated"},
		{"range bomb", "return range(1099511627776)", 0, "limit: range of 1099511627776 elements"},
		{"map bomb", "let m = {}\nvar i = 0\nwhile true { m[i] = i; i += 1 }", 20_000_000, "limit: map of 1048577 entries exceeds the limit of 1048576"},
		{"nested list bomb", "var l = []\nwhile true { l = [l] }", 100_000, "steps: step limit"},
		{"deep str", "var l = []\nfor i in range(500) { l = [l] }\nreturn str(l)", 0, "limit: value nested more than 100 deep"},
		{"cycle str", "let l = []\nappend(l, l)\nreturn str(l)", 0, "limit: value nested more than 100 deep"},
		{"cycle result", "let m = {}\nm.self = m\nreturn m", 0, "limit: result must be data"},
		{"join bomb", "let l = []\nfor i in range(300) { append(l, \"x\" * 30000) }\nreturn join(l, \",\")", 0, "limit: join: result exceeds the limit"},
		{"json bomb", "return json_decode(\"[\" * 200 + \"]\" * 200)", 0, "limit: json_decode: nested more than 100 deep"},
		{"shared equality", "fn dag() { var l = [1]\nfor i in range(90) { l = [l, l] }\nreturn l }\nreturn dag() == dag()", 1_000_000, "steps: step limit of 1000000 exceeded"},
		{"shared result", "var l = [1]\nfor i in range(90) { l = [l, l] }\nreturn l", 0, "limit: result must be data: value is larger than the data limit"},
		{"shared emit", "var l = [1]\nfor i in range(90) { l = [l, l] }\nemit(\"x\", l)", 0, "limit: emit: value is larger than the data limit"},
		{"shared str", "var l = [1]\nfor i in range(90) { l = [l, l] }\nreturn str(l)", 0, "limit: string exceeds the limit of 8388608 bytes"},
		{"reserved kind", "throw error(\"steps\", \"fake\")", 0, "value: error: kind \"steps\" is reserved"},
		{"shared big result", "let s = \"x\" * 100000\nreturn [s] * 700", 0, "limit: result must be data: value is larger than the data limit"},
		{"cycle equality", "let a = []\nappend(a, a)\nlet b = []\nappend(b, b)\nreturn a == b", 0, "limit: comparison nested more than 100 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runToEnd(t, tc.src, tc.limit)
			if r.Kind != Error {
				t.Fatalf("got %s, want an error %q", r.Kind, tc.want)
			}
			got := r.Err.Kind + ": " + r.Err.Msg
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestHostileSource(t *testing.T) {
	for name, src := range map[string]string{
		"deep brackets": strings.Repeat("[", 10000),
		"deep parens":   "return " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000),
		"deep unary":    "return " + strings.Repeat("-", 10000) + "1",
		"deep blocks":   strings.Repeat("if true { ", 5000) + strings.Repeat("}", 5000),
		"deep fns":      strings.Repeat("fn() { ", 5000),
		"long chain":    "return 1" + strings.Repeat(" + 1", 100000),
	} {
		_, err := NewNative().Load(context.Background(), []byte(src))
		if name == "long chain" {
			// Left-associative chains do not nest; they must compile.
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "nesting too deep") {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// FuzzStep mutates real checkpoints of one program: a step must answer with
// a result or an error, and never fault.
func FuzzStep(f *testing.F) {
	src := []byte(`
fn count(l) { var n = 0; for x in l { n += x }; return n }
let cells = []
for i in range(3) { append(cells, fn () { return i }) }
var t = 0
try { t = count([1, 2, 3]) + act "x" {a: [1, {b: 2}]} } catch e { t = -1 }
for k, v in {a: 1, b: 2} { t += v }
for i, c in "héllo" { t += i }
let w = await {key: "k"}
return t + cells[2]() + w`)
	p, err := compile.Compile(src)
	if err != nil {
		f.Fatal(err)
	}
	rt := NewNative()
	ctx := context.Background()
	cp, err := rt.Start(ctx, Input{Source: src})
	if err != nil {
		f.Fatal(err)
	}
	one, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	f.Add(cp, []byte(nil))
	for i := 0; i < 200; i++ {
		var reply []byte
		h, _ := checkpoint.DecodeHeader(cp)
		if h.Status == checkpoint.Acting || h.Status == checkpoint.Awaiting {
			reply = one
		}
		r, err := rt.Step(ctx, Request{Checkpoint: cp, Reply: reply, Slice: 5})
		if err != nil {
			f.Fatal(err)
		}
		cp = r.Checkpoint
		f.Add(cp, reply)
		if r.Kind == Done || r.Kind == Error {
			break
		}
	}
	f.Fuzz(func(t *testing.T, cp, reply []byte) {
		_, err := StepProgram(p, Request{Checkpoint: cp, Reply: reply, Slice: 50})
		if errors.Is(err, ErrFault) {
			t.Fatalf("fault: %v", err)
		}
	})
}

// FuzzRun compiles arbitrary source and, when it compiles, runs it both
// unsliced and in slices of 7: neither may fault, and both must agree.
func FuzzRun(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := compile.Compile(src)
		if err != nil {
			return
		}
		// slice 0 means varying slices of 1 to 7 steps.
		run := func(slice uint64) (string, uint64, []byte) {
			cp, err := NewNative().Start(context.Background(), Input{Source: src, Limit: 3000})
			if err != nil {
				return "start: " + err.Error(), 0, nil
			}
			var reply []byte
			for i := 0; ; i++ {
				size := slice
				if size == 0 {
					size = uint64(i%7 + 1)
				}
				r, err := StepProgram(p, Request{Checkpoint: cp, Reply: reply, Slice: size})
				if err != nil {
					t.Fatalf("slice %d: %v", slice, err)
				}
				cp, reply = r.Checkpoint, nil
				switch r.Kind {
				case Act, Event:
					reply, _ = checkpoint.EncodeReply(checkpoint.Reply{Value: int64(r.Seq)})
				case Done:
					return "done " + string(r.Result), r.Used, cp
				case Error:
					return "error " + r.Err.Error(), r.Used, cp
				}
			}
		}
		a, ua, ca := run(1 << 40)
		b, ub, cb := run(0)
		if a != b || ua != ub || string(ca) != string(cb) {
			t.Fatalf("unsliced %q (%d steps) vs sliced %q (%d steps)", a, ua, b, ub)
		}
	})
}
