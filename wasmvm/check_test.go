// check_test.go feeds checkStep results that lie about a real step.

package wasmvm

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/port"
)

func TestCheckStep(t *testing.T) {
	ctx := context.Background()
	native := port.NewNative()
	src := []byte("emit(\"e\", 1)\nlet r = act \"t\" {a: 1}\nvar n = 0\nwhile n < 50 { n += 1 }\nreturn n + r")
	cp, err := native.Start(ctx, port.Input{Source: src, Invocation: "inv"})
	if err != nil {
		t.Fatal(err)
	}
	h0, _ := checkpoint.DecodeHeader(cp)
	req := port.Request{Checkpoint: cp, Slice: 1000}
	act, err := native.Step(ctx, req)
	if err != nil || act.Kind != port.Act {
		t.Fatal(act, err)
	}
	if err := checkStep(h0, req, act); err != nil {
		t.Fatalf("an honest act: %v", err)
	}
	h1, _ := checkpoint.DecodeHeader(act.Checkpoint)
	reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	req2 := port.Request{Checkpoint: act.Checkpoint, Reply: reply, Slice: 10}
	yield, err := native.Step(ctx, req2)
	if err != nil || yield.Kind != port.Yield {
		t.Fatal(yield, err)
	}
	other, _ := native.Start(ctx, port.Input{Source: []byte("return 1"), Invocation: "inv"})

	for _, tc := range []struct {
		name string
		h    *checkpoint.Header
		req  port.Request
		base *port.Result
		lie  func(r *port.Result)
		want string
	}{
		{"used backwards", h1, req2, yield, func(r *port.Result) { r.Used = 0 }, "used went back"},
		{"used beyond slice", h1, req2, yield, func(r *port.Result) { r.Used += 50 }, "in a step of at most 10"},
		{"kind", h1, req2, yield, func(r *port.Result) { r.Kind = port.Done }, "result is done, its checkpoint says yield"},
		{"truncated checkpoint", h1, req2, yield, func(r *port.Result) { r.Checkpoint = r.Checkpoint[:len(r.Checkpoint)-1] }, "malformed"},
		{"other program", h1, req2, yield, func(r *port.Result) { r.Checkpoint = other }, "another program"},
		{"act tag", h0, req, act, func(r *port.Result) { r.Tag = "x" }, "suspension differs"},
		{"act args", h0, req, act, func(r *port.Result) { r.Args = []byte{0xf6} }, "suspension differs"},
		{"emit garbage", h0, req, act, func(r *port.Result) { r.Emits = append(r.Emits, machine.Emit{Kind: "k", Data: []byte{0xff}}) }, "emit data"},
		{"emit without kind", h0, req, act, func(r *port.Result) { r.Emits = append(r.Emits, machine.Emit{Data: []byte{0xf6}}) }, "malformed emit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := *tc.base
			r.Emits = append([]machine.Emit(nil), r.Emits...)
			tc.lie(&r)
			err := checkStep(tc.h, tc.req, &r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReferenceHeader: the reference decoder reads the header as the
// hand-written one does, and refuses what does not end with the body.
func TestReferenceHeader(t *testing.T) {
	native := port.NewNative()
	cp, err := native.Start(context.Background(), port.Input{Source: []byte("return 1"), Invocation: "inv", Context: []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := checkpoint.DecodeHeader(cp)
	if got, err := referenceHeader(cp); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("reference header %+v, %v; want %+v", got, err, want)
	}
	for name, b := range map[string][]byte{
		"trailing byte":   append(append([]byte(nil), cp...), 0),
		"body cut":        cp[:len(cp)-1],
		"not an array":    append([]byte{0x83}, cp[1:]...),
		"header only":     cp[:len(cp)-len(cp)/2],
		"empty":           nil,
		"text, not bytes": textBody(t, cp),
	} {
		if _, err := referenceHeader(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// textBody turns a checkpoint's body from a byte string into a text one.
func textBody(t *testing.T, cp []byte) []byte {
	b := append([]byte(nil), cp...)
	for i := len(b) - 1; i > 0; i-- { // the body's head is the last 0x58/0x59 before a 0xab map head
		if (b[i] == 0x58 || b[i] == 0x59) && b[i+1+int(b[i]-0x57)] == 0xab {
			b[i] += 0x20
			return b
		}
	}
	t.Fatal("no body head found")
	return nil
}
