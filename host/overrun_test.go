// overrun_test.go: an adapter that overruns its time limit without giving
// up (blocked in a call that ignores its context) cannot wedge the engine:
// its outcome is unknown, the invocation waits on it, and the engine and
// its store go on serving.

package host

import (
	"context"
	"strings"
	"testing"
	"time"
)

// stuck ignores its context until released.
type stuck struct{ release chan struct{} }

func (s stuck) Do(context.Context, *Operation) (any, error) { <-s.release; return "late", nil }
func (s stuck) Limits() Limits                              { return Limits{Time: 50 * time.Millisecond} }

func TestOverrunningAdapterLeftBehind(t *testing.T) {
	e := engine(t, memStore(t), 1)
	release := make(chan struct{})
	defer close(release)
	e.Adapters["stuck"] = stuck{release}
	e.Adapters["calc"] = &recorder{}
	if _, err := e.Ward().Grant(AnyProg, "stuck"); err != nil {
		t.Fatal(err)
	}
	type ran struct {
		out *RunState
		err error
	}
	done := make(chan ran, 1)
	go func() {
		out, err := e.Start(context.Background(), "r1", "p", []byte(`return act "stuck" {}`), nil, 100_000, 1)
		done <- ran{out, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-time.After(30 * time.Second): // a hang guard, not a speed check
		t.Fatal("the engine is wedged by an adapter past its time limit")
	}
	if r.err != nil || r.out.Status != Waiting || r.out.Unknown == nil || !strings.Contains(r.out.Waiting, "act stuck") {
		t.Fatalf("got %+v %v", r.out, r.err)
	}
	evs, err := e.Events("r1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var noted bool
	for _, ev := range evs {
		noted = noted || ev.RunNote != nil && strings.Contains(ev.RunNote.Summary, "act-overrun")
	}
	if !noted {
		t.Error("no note says the act overran")
	}
	// The engine still serves: another invocation runs to its end.
	out, err := e.Start(context.Background(), "r2", "p", []byte(`return act "calc" {n: 4}`), nil, 100_000, 1)
	if err != nil || out.Status != Completed {
		t.Fatalf("after the overrun: %+v %v", out, err)
	}
}
