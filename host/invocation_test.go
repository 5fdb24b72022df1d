// invocation_test.go tables the status transitions and races publications.

package host

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestStatusTransitions(t *testing.T) {
	all := []Status{Running, Waiting, Joining, Completed, Failed, Cancelled, Conflict}
	allowed := map[[2]Status]bool{}
	for _, p := range [][2]Status{
		{Running, Waiting}, {Running, Joining}, {Running, Completed}, {Running, Failed}, {Running, Cancelled}, {Running, Conflict},
		{Waiting, Running}, {Waiting, Failed}, {Waiting, Cancelled},
		{Joining, Completed}, {Joining, Conflict}, {Joining, Cancelled},
	} {
		allowed[p] = true
	}
	for _, from := range all {
		for _, to := range all {
			if got := CanMove(from, to); got != allowed[[2]Status{from, to}] {
				t.Errorf("%s -> %s: allowed %v", from, to, got)
			}
		}
		if from.Terminal() != (from >= Completed) {
			t.Errorf("%s terminal %v", from, from.Terminal())
		}
	}
}

func TestMove(t *testing.T) {
	iv := NewInvocations(memStore(t))
	iv.Admit("i1", "p")
	for _, step := range []struct {
		to  Status
		err error
	}{{Waiting, nil}, {Joining, ErrBadTransition}, {Running, nil}, {Completed, ErrBadTransition}, {Cancelled, nil}, {Running, ErrBadTransition}} {
		_, err := iv.Move("i1", step.to)
		if !errors.Is(err, step.err) || (step.err == nil && err != nil) {
			t.Fatalf("move to %s: got %v, want %v", step.to, err, step.err)
		}
	}
	if _, err := iv.Move("nobody", Running); !errors.Is(err, ErrNoSuchInvocation) {
		t.Fatalf("unknown invocation: %v", err)
	}
}

// Many invocations admitted at the same revision publish at once: exactly
// one completes, the others end in Conflict with their results kept.
func TestPublishCAS(t *testing.T) {
	iv := NewInvocations(memStore(t))
	const n = 16
	for i := 0; i < n; i++ {
		if _, err := iv.Admit(fmt.Sprintf("i%d", i), "p"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	results := make([]*Invocation, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv, err := iv.Publish(fmt.Sprintf("i%d", i), []byte{byte(i)})
			if err != nil {
				t.Error(err)
			}
			results[i] = inv
		}()
	}
	wg.Wait()
	completed := -1
	for i, inv := range results {
		switch inv.Status {
		case Completed:
			if completed >= 0 {
				t.Fatalf("two completed: %d and %d", completed, i)
			}
			completed = i
		case Conflict:
			if len(inv.Result) != 1 || inv.Result[0] != byte(i) {
				t.Fatalf("conflict %d lost its result", i)
			}
		default:
			t.Fatalf("invocation %d ended %s", i, inv.Status)
		}
	}
	p, _ := iv.Prog("p")
	if completed < 0 || p.Revision != 1 || p.State[0] != byte(completed) {
		t.Fatalf("prog %+v, completed %d", p, completed)
	}
	// An invocation admitted after the publication sees the new revision.
	iv.Admit("late", "p")
	if inv, _ := iv.Publish("late", []byte{99}); inv.Status != Completed {
		t.Fatalf("late invocation: %s", inv.Status)
	}
}
