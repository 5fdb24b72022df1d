// parity_test.go runs the same progs natively and in the sandbox, in lockstep,
// and requires the same answers and checkpoints: every limit the language
// states must bind identically on both.

package wasmvm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
)

// echoReply answers an act or await with its own arguments, so that deep or
// wide arguments come back into the machine as replies too.
func echoReply(r *port.Result) []byte {
	v, err := checkpoint.DecodeData(r.Args)
	if err != nil {
		v = int64(r.Seq)
	}
	b, err := checkpoint.EncodeReply(checkpoint.Reply{Value: v})
	if err != nil {
		b, _ = checkpoint.EncodeReply(checkpoint.Reply{Value: int64(r.Seq)})
	}
	return b
}

// lockstep runs in on both runtimes in slices of slice steps (0: by turns
// 1, 2, 3, 7, 64 and 1000), answering suspensions with reply, and fails t at the first
// difference. It returns the native runtime's last result and its text.
func lockstep(t testing.TB, sb, native port.RuntimePort, in port.Input, slice uint64, reply func(*port.Result) []byte) (*port.Result, string) {
	t.Helper()
	return lockstepN(t, sb, native, in, slice, 1, reply)
}

// lockstepN is lockstep with up to slices slices a Step.
func lockstepN(t testing.TB, sb, native port.RuntimePort, in port.Input, slice, slices uint64, reply func(*port.Result) []byte) (*port.Result, string) {
	t.Helper()
	ctx := context.Background()
	cpN, errN := native.Start(ctx, in)
	cpW, errW := sb.Start(ctx, in)
	if (errN == nil) != (errW == nil) || errN != nil && errN.Error() != errW.Error() {
		t.Fatalf("start: native %v, sandbox %v", errN, errW)
	}
	if errN != nil {
		return nil, "start: " + errN.Error()
	}
	if string(cpN) != string(cpW) {
		t.Fatal("first checkpoints differ")
	}
	req := port.Request{Checkpoint: cpN, Clock: 1700000000000}
	for i := 0; ; i++ {
		req.Slice, req.Slices = slice, slices
		if slice == 0 {
			req.Slice = compiledSizes[i%len(compiledSizes)]
		}
		rN, errN := native.Step(ctx, req)
		rW, errW := sb.Step(ctx, req)
		if (errN == nil) != (errW == nil) || errN != nil && errN.Error() != errW.Error() {
			t.Fatalf("step %d: native %v, sandbox %v", i, errN, errW)
		}
		if errN != nil {
			return nil, "step: " + errN.Error()
		}
		if d := sameResult(rN, rW); d != "" {
			t.Fatalf("step %d: %s differ: native %s, sandbox %s", i, d, describe(rN), describe(rW))
		}
		req = port.Request{Checkpoint: rN.Checkpoint, Clock: req.Clock}
		switch rN.Kind {
		case port.Act, port.Event:
			req.Reply = reply(rN)
		case port.Done, port.Error:
			return rN, describe(rN)
		}
	}
}

func describe(r *port.Result) string {
	s := fmt.Sprintf("%s after %d steps", r.Kind, r.Used)
	switch r.Kind {
	case port.Done:
		s += fmt.Sprintf(", %d bytes of result", len(r.Result))
	case port.Error:
		msg := r.Err.Msg
		if len(msg) > 120 {
			msg = msg[:120] + "..."
		}
		s += ": " + r.Err.Kind + ": " + msg
	case port.Act, port.Event:
		s += fmt.Sprintf(", %q with %d bytes of arguments", r.Tag, len(r.Args))
	}
	return s
}

func nest(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// parityProgs are valid progs at the edges of the language's limits: each
// must behave the same natively and in the sandbox. want is a prefix of the
// native outcome (describe), checked so that a prog cannot silently stop
// exercising its edge.
type parityProg struct {
	name, src string
	limit     uint64
	want      string
	slice     uint64 // 0: port.DefaultSlice
}

var parityProgs = []parityProg{
	{"deep result", "return " + nest("[", "]", 15, ""), 0, "done", 0},
	{"deepest result", "return " + nest("[", "]", 99, "1"), 0, "done", 0},
	{"deep map result", "var m = 1\nfor i in range(100) { m = {a: m} }\nreturn m", 0, "done", 0},
	{"too deep result", "var m = 1\nfor i in range(101) { m = [m] }\nreturn m", 0, "error after 639 steps: limit: result must be data: value nested more than 100 deep", 0},
	{"deep act args", "let v = act \"t\" {x: " + nest("[", "]", 98, "1") + "}\nreturn v", 0, "done", 0},
	{"deep await selector", "let v = await {key: \"k\", x: " + nest("[", "]", 98, "1") + "}\nreturn v", 0, "done", 0},
	{"deep error data", "throw error(\"x\", \"boom\", " + nest("[", "]", 99, "1") + ")", 0, "error", 0},
	{"deep json", "return json_decode(\"" + nest("[", "]", 100, "1") + "\")", 0, "done", 0},
	{"deep emit", "emit(\"x\", " + nest("[", "]", 99, "1") + ")\nreturn 1", 0, "done", 0},
	{"deep state of globals", "var l = 1\nfor i in range(100) { l = [l] }\nlet v = act \"t\" {}\nreturn len(l)", 0, "done", 0},
	{"wide result", "var m = {}\nfor i in range(70000) { m[str(i)] = i }\nreturn m", 0, "done", 100000},
	{"wide act args", "var m = {}\nfor i in range(5000) { m[i] = [i] }\nreturn act \"t\" {m: m}", 0, "done", 0},
	{"wide error data", "var m = {}\nfor i in range(5000) { m[str(i)] = i }\nthrow error(\"x\", \"wide\", m)", 0, "error", 0},
	{"long error message", "throw error(\"x\", \"a\" * 100000)", 0, "error", 0},
	{"long thrown string", "throw \"é\" * 100000", 0, "error", 0},
	{"long error kind", "throw error(\"k\" * 100000, \"m\")", 0, "error", 0},
	{"long caught message", "try { throw error(\"x\", \"a\" * 100000) } catch e { return len(e.msg) }", 0, "done", 0},
	{"long emit kind", "emit(\"k\" * 70000, 1)\nreturn 1", 0, "error after 1099 steps: limit: emit: kind of 70000 bytes is longer than the limit of 256", 0},
	{"long act tag", "return act \"" + strings.Repeat("t", 300) + "\" {}", 0, "start: 1:8: act tag of 300 bytes is longer than the limit of 256", 0},
	{"longest act tag", "return act \"" + strings.Repeat("t", 256) + "\" {}", 0, "done", 0},
	{"many emits", "for i in range(3000) { emit(\"k\", i) }\nreturn 1", 0, "done", 0},
	{"big emit", "emit(\"k\", \"x\" * 65000)\nreturn 1", 0, "done", 0},
	{"long chain", "return 1" + strings.Repeat(" + 1", 100000), 0, "done", 0},
	{"long and chain", "return true" + strings.Repeat(" && true", 50000), 0, "done", 0},
	{"long or chain", "return false" + strings.Repeat(" || false", 50000), 0, "done", 0},
	{"long mixed chain", "var x = 1\nreturn x" + strings.Repeat(" * 1 - 0 + x % 7 == 1 || x", 10000), 0, "done", 0},
	{"long string chain", "return \"a\"" + strings.Repeat(" + \"b\"", 50000), 0, "done", 1 << 40},
	{"long dot chain", "let m = {}\nm.a = m\nreturn len(m" + strings.Repeat(".a", 50000) + ")", 0, "done", 0},
	{"long index chain", "let l = []\nappend(l, l)\nreturn len(l" + strings.Repeat("[0]", 50000) + ")", 0, "done", 0},
	{"long call chain", "fn f() { return f }\nreturn type(f" + strings.Repeat("()", 50000) + ")", 0, "done", 0},
	{"long else-if chain", "let x = 20000\n" + elseIf(20000) + "\nreturn -1", 0, "done", 0},
	{"long statement list", "var a = 1\n" + strings.Repeat("a += 1\n", 50000) + "return a", 0, "done", 0},
	{"list bomb", "var l = [1]\nwhile true { l = l + l }", 0, "error after 262291 steps: limit: list of 2097152 elements", 1 << 40},
	{"list bomb sliced", "var l = [1]\nwhile true { l = l + l }", 0, "error after 262291 steps: limit: list of 2097152 elements", 50000},
	{"string bomb", "var s = \"x\"\nwhile true { s = s + s }", 0, "error after 262311 steps: limit: string of 16777216 bytes", 1 << 40},
	{"big result", "return \"a\" * 8000000", 0, "done", 1 << 20},
}

// elseIf is an else-if chain of n arms testing x.
func elseIf(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(" else ")
		}
		fmt.Fprintf(&b, "if x == %d { return %d }", i, i)
	}
	return b.String()
}

func TestParity(t *testing.T) {
	sb := testRuntime(t)
	native := port.NewNative()
	native.NoReuse = true
	for _, tc := range parityProgs {
		t.Run(tc.name, func(t *testing.T) {
			in := port.Input{Source: []byte(tc.src), Limit: tc.limit, Invocation: "parity"}
			slice := tc.slice
			if slice == 0 {
				slice = port.DefaultSlice
			}
			_, got := lockstep(t, sb, native, in, slice, echoReply)
			if !matches(got, tc.want) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// matches reports whether got starts with want, where ".." in want stands
// for any run of digits.
func matches(got, want string) bool {
	before, after, ok := strings.Cut(want, "..")
	if !ok {
		return strings.HasPrefix(got, want)
	}
	if !strings.HasPrefix(got, before) {
		return false
	}
	rest := strings.TrimLeft(got[len(before):], "0123456789")
	return matches(rest, after)
}

// TestOutOfMemory: a prog that outgrows the sandbox's memory fails with a
// limit error and a failed checkpoint, and the same runtime answers the next
// call on a fresh instance.
func TestOutOfMemory(t *testing.T) {
	ctx := context.Background()
	sb, err := New(ctx, Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), MemoryLimitPages: 1024, PoolSize: 1}) // 64 MiB
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	run := func(src string) *port.Result {
		cp, err := sb.Start(ctx, port.Input{Source: []byte(src), Invocation: "oom"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := sb.Step(ctx, port.Request{Checkpoint: cp, Slice: 1000})
			if err != nil {
				t.Fatalf("step: %v", err)
			}
			if r.Kind != port.Yield {
				return r
			}
			cp = r.Checkpoint
		}
	}
	r := run("var keep = []\nwhile true { append(keep, range(100000)) }")
	if r.Kind != port.Error || r.Err.Kind != "limit" || !strings.HasPrefix(r.Err.Msg, "memory: the prog needs more than the sandbox's 64 MiB") {
		t.Fatalf("got %s", describe(r))
	}
	h, err := checkpoint.DecodeHeader(r.Checkpoint)
	if err != nil || h.Status != checkpoint.Failed || h.Used != r.Used || h.Error.Msg != r.Err.Msg {
		t.Fatalf("the checkpoint does not say the prog failed: %+v %v", h, err)
	}
	if r := run("return 6 * 7"); r.Kind != port.Done {
		t.Fatalf("the runtime stopped serving: %s", describe(r))
	}
}
