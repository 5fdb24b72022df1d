// check_test.go feeds checkStep results that lie about a real step.

package wasmvm

import (
	"context"
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
		{"used beyond slice", h1, req2, yield, func(r *port.Result) { r.Used += 50 }, "in a slice of 10"},
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
