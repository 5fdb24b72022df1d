// fuzz_test.go holds the differential fuzzers: the same source, checkpoint
// or data run natively and in the sandbox must give the same answers and the
// same checkpoints, byte for byte.

package wasmvm

import (
	"context"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/guest/port/porttest"
)

// seqReply answers a suspension with its sequence number.
func seqReply(r *port.Result) []byte {
	b, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(r.Seq)})
	return b
}

// sameErr fails t unless both errors are absent or say the same.
func sameErr(t *testing.T, what string, errN, errW error) {
	t.Helper()
	if (errN == nil) != (errW == nil) || errN != nil && errN.Error() != errW.Error() {
		t.Fatalf("%s: native %v, sandbox %v", what, errN, errW)
	}
}

// FuzzRunParity compiles arbitrary source natively and in the sandbox (the
// same errors), and runs what compiles on both in varying slices, answering
// acts and awaits alternately with their arguments and their sequence
// number. The sandbox runs compiled code, for half the inputs with
// switches to its interpreter at random entries.
func FuzzRunParity(f *testing.F) {
	porttest.AddProgSeeds(f, "..")
	for _, file := range porttest.ProgFiles(f, "..") {
		if b, err := modules.Load(file, nil); err == nil && modules.IsSet(b) {
			f.Add(b) // the source sets of the progs that import
		}
	}
	for _, p := range parityProgs {
		if len(p.src) < 4096 {
			f.Add([]byte(p.src))
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		sb := testRuntime(t)
		native := port.NewNative()
		native.NoReuse = true
		ctx := context.Background()
		_, errN := native.Load(ctx, src)
		_, errW := sb.Load(ctx, src)
		sameErr(t, "load", errN, errW)
		if errN != nil {
			return
		}
		n := 0
		reply := func(r *port.Result) []byte {
			if n++; n%2 == 0 {
				return seqReply(r)
			}
			return echoReply(r)
		}
		if len(src)%2 == 1 {
			sb = mixedRuntime(t) // compiled, with switches to the interpreter
		}
		lockstep(t, sb, native, port.Input{Source: src, Limit: 3000, Invocation: "fuzz"}, 0, reply)
	})
}

// FuzzStepParity steps mutated checkpoints of one program natively and in the
// sandbox: a checkpoint one refuses, the other refuses with the same words;
// one both accept gives the same result and checkpoint on both.
func FuzzStepParity(f *testing.F) {
	src := []byte(`
fn count(l) { var n = 0; for x in l { n += x }; return n }
let cells = []
for i in range(3) { append(cells, fn () { return i }) }
var t = 0
try { t = count([1, 2, 3]) + act "x" {a: [1, {b: 2}]} } catch e { t = -1 }
for k, v in {a: 1, b: "two"} { t += len(str(v)) }
for i, c in "héllo" { t += i }
let w = await {key: "k"}
return [t + cells[2]() + w, random(), now()]`)
	ctx := context.Background()
	native := port.NewNative()
	cp, err := native.Start(ctx, port.Input{Source: src, Seed: 7})
	if err != nil {
		f.Fatal(err)
	}
	one, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	f.Add(cp, []byte(nil))
	for i := 0; i < 200; i++ {
		var reply []byte
		if h, _ := checkpoint.DecodeHeader(cp); h.Status == checkpoint.Acting || h.Status == checkpoint.Awaiting {
			reply = one
		}
		r, err := native.Step(ctx, port.Request{Checkpoint: cp, Reply: reply, Slice: 5})
		if err != nil {
			f.Fatal(err)
		}
		cp = r.Checkpoint
		f.Add(cp, reply)
		if r.Kind == port.Done || r.Kind == port.Error {
			break
		}
	}
	f.Fuzz(func(t *testing.T, cp, reply []byte) {
		sb := testRuntime(t)
		native := port.NewNative()
		native.NoReuse = true
		if _, err := native.Load(ctx, src); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.Load(ctx, src); err != nil {
			t.Fatal(err)
		}
		req := port.Request{Checkpoint: cp, Reply: reply, Slice: 50, Clock: 1700000000000}
		rN, errN := native.Step(ctx, req)
		rW, errW := sb.Step(ctx, req)
		sameErr(t, "step", errN, errW)
		if errN == nil {
			if d := sameResult(rN, rW); d != "" {
				t.Fatalf("%s differ: native %s, sandbox %s", d, describe(rN), describe(rW))
			}
		}
	})
}

// FuzzDataParity starts a prog with arbitrary input and state bytes and
// answers its act with arbitrary reply bytes, natively and in the sandbox:
// the data codec must accept and refuse the same bytes, with the same words,
// and give the prog the same values.
func FuzzDataParity(f *testing.F) {
	src := []byte(`let r = act "x" {}
return [input, state, r, json_encode([input, state, r])]`)
	for _, s := range []string{`null`, `[1, 2.5, "é", {"a": [true, false, null]}]`, `{"deep": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}`, `"` + "x" + `"`} {
		d := porttest.EncodeJSON(f, s)
		reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: nil})
		f.Add(d, d, reply)
	}
	bad, _ := checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "denied", Msg: "no", Data: porttest.EncodeJSON(f, `[1]`)}})
	f.Add([]byte{0x80}, []byte{0xf6}, bad)
	f.Add([]byte(nil), []byte(nil), []byte{}) // an empty reply is none, on both

	f.Fuzz(func(t *testing.T, input, state, reply []byte) {
		sb := testRuntime(t)
		native := port.NewNative()
		native.NoReuse = true
		in := port.Input{Source: src, Input: input, State: state, Invocation: "data"}
		lockstep(t, sb, native, in, port.DefaultSlice, func(*port.Result) []byte { return reply })
	})
}
