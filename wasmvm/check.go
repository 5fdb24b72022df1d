// check.go validates the guest's answers against the requests that caused them.

package wasmvm

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/port"
)

func checkStart(cp []byte, hash [32]byte, in port.Input) error {
	c, err := checkpoint.Decode(cp, checkpoint.Expect{Semantics: compile.Version, Program: hash[:]})
	if err != nil {
		return err
	}
	h := &c.Header
	if h.Status != checkpoint.Runnable || h.Used != 0 {
		return fmt.Errorf("a new checkpoint is %s with %d steps used", h.Status, h.Used)
	}
	if h.Invocation != in.Invocation || !bytes.Equal(h.Context, in.Context) {
		return fmt.Errorf("checkpoint does not carry the invocation and context given")
	}
	return nil
}

// checkStep checks a step's result: accounting, checkpoint, and that the
// result says what the checkpoint says.
func checkStep(prev *checkpoint.Header, req port.Request, res *port.Result) error {
	if res.Used < prev.Used {
		return fmt.Errorf("used went back from %d to %d", prev.Used, res.Used)
	}
	if res.Used-prev.Used > req.Steps() {
		return fmt.Errorf("used grew by %d in a step of at most %d", res.Used-prev.Used, req.Steps())
	}
	if err := checkEmits(req, res); err != nil {
		return err
	}
	if res.Checkpoint == nil {
		if !req.Lazy || res.Kind != port.Yield {
			return fmt.Errorf("a %s without a checkpoint", res.Kind)
		}
		if len(res.Emits) > 0 {
			return fmt.Errorf("a lazy yield with %d events and no checkpoint", len(res.Emits))
		}
		return nil
	}
	sc := scratches.Get().(*checkpoint.Scratch)
	defer scratches.Put(sc)
	c, err := checkpoint.DecodeInto(res.Checkpoint, checkpoint.Expect{Semantics: compile.Version, Program: prev.Program}, sc)
	if err != nil {
		return err
	}
	h := &c.Header
	if ref, err := referenceHeader(res.Checkpoint); err != nil || !reflect.DeepEqual(ref, h) {
		return fmt.Errorf("checkpoint header reads differently with the reference decoder (%v)", err)
	}
	if h.Used != res.Used {
		return fmt.Errorf("result says %d steps used, its checkpoint %d", res.Used, h.Used)
	}
	if h.Invocation != prev.Invocation || !bytes.Equal(h.Context, prev.Context) {
		return fmt.Errorf("checkpoint changed invocation or context")
	}
	settled := c.Machine.Steps == h.Used
	want := port.Yield
	if settled {
		switch h.Status {
		case checkpoint.Done:
			want = port.Done
		case checkpoint.Failed:
			want = port.Error
		case checkpoint.Acting:
			want = port.Act
		case checkpoint.Awaiting:
			want = port.Event
		}
	}
	if res.Kind != want {
		return fmt.Errorf("result is %s, its checkpoint says %s", res.Kind, want)
	}
	switch res.Kind {
	case port.Done:
		if !bytes.Equal(res.Result, h.Result) {
			return fmt.Errorf("result differs from its checkpoint's")
		}
	case port.Act, port.Event:
		p := h.Pending
		if !bytes.Equal(res.Args, p.Args) || res.Seq != p.Seq || (res.Kind == port.Act && res.Tag != p.Tag) {
			return fmt.Errorf("suspension differs from its checkpoint's")
		}
	case port.Error:
		if res.Err == nil || res.Err.Kind != h.Error.Kind || res.Err.Msg != h.Error.Msg || len(res.Err.Msg) > machine.MaxErrorText || len(res.Err.Kind) > machine.MaxKind {
			return fmt.Errorf("error differs from its checkpoint's")
		}
	}
	return nil
}

// scratches are reused to decode the checkpoints checkStep checks: it reads
// only their header and step count.
var scratches = sync.Pool{New: func() any { return new(checkpoint.Scratch) }}

func checkEmits(req port.Request, res *port.Result) error {
	if uint64(len(res.Emits)) > req.Steps()+1 {
		return fmt.Errorf("%d emits in a step of at most %d steps", len(res.Emits), req.Steps())
	}
	for _, e := range res.Emits {
		if e.Kind == "" || len(e.Kind) > machine.MaxKind || len(e.Data) > machine.MaxEmit {
			return fmt.Errorf("malformed emit")
		}
		if _, err := checkpoint.DecodeData(e.Data); err != nil {
			return fmt.Errorf("emit data: %w", err)
		}
	}
	return nil
}
