// events_test.go checks the mailbox: early events kept, first of several
// tags, unknown and finished invocations refused.

package host

import (
	"errors"
	"testing"
)

func TestMailbox(t *testing.T) {
	s := memStore(t)
	iv, mb := NewInvocations(s), NewMailboxes(s)
	iv.Admit("i", "p")
	// Delivered before anyone awaits: kept.
	mb.Deliver("i", "approve", []byte{0xf5})
	mb.Deliver("i", "cancel", []byte{0xf6})
	mb.Deliver("i", "approve", []byte{0xf4})
	if _, err := mb.Take("i", Await{Seq: 1, Tags: []string{"other"}}, 0); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("got %v, want ErrNoEvent", err)
	}
	// Several tags: the earliest delivered of any of them.
	ev, err := mb.Take("i", Await{Seq: 2, Tags: []string{"cancel", "approve"}}, 0)
	if err != nil || ev.Tag != "approve" || ev.Seq != 1 {
		t.Fatalf("got %+v, %v", ev, err)
	}
	ev, _ = mb.Take("i", Await{Seq: 3, Tags: []string{"cancel", "approve"}}, 0)
	if ev.Tag != "cancel" {
		t.Fatalf("second take: %+v", ev)
	}
	ev, _ = mb.Take("i", Await{Seq: 4, Tags: []string{"approve"}}, 0)
	if ev.Seq != 3 || ev.Payload[0] != 0xf4 {
		t.Fatalf("third take: %+v", ev)
	}
	if _, err := mb.Take("i", Await{Seq: 5, Tags: []string{"approve", "cancel"}}, 0); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("every event taken once: %v", err)
	}
	if _, err := mb.Deliver("nobody", "x", nil); !errors.Is(err, ErrNoSuchInvocation) {
		t.Fatalf("event for an unknown invocation: %v", err)
	}
	// The await at 3 took "cancel"; asked again (a crash came before the
	// machine that consumed it was stored), it gets the same event back.
	if ev, err := mb.Take("i", Await{Seq: 3, Tags: []string{"cancel", "approve"}}, 0); err != nil || ev.Tag != "cancel" || ev.Seq != 2 {
		t.Fatalf("replayed take: %+v %v", ev, err)
	}
	iv.Move("i", Cancelled)
	if _, err := mb.Deliver("i", "x", nil); !errors.Is(err, ErrBadTransition) {
		t.Fatalf("event for a finished invocation: %v", err)
	}
}

func TestAwaitTimeout(t *testing.T) {
	s := memStore(t)
	iv, mb := NewInvocations(s), NewMailboxes(s)
	iv.Admit("i", "p")
	a := Await{Seq: 1, Tags: []string{"go"}, Timeout: 100}
	if _, err := mb.Take("i", a, 1000); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("first wait: %v", err)
	}
	// The deadline counts from the first wait, not from each look.
	if _, err := mb.Take("i", a, 1099); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("before the deadline: %v", err)
	}
	if d, _ := mb.Deadline("i"); d != 1100 {
		t.Fatalf("deadline %d, want 1100", d)
	}
	// Woken at its deadline (the scheduler's Wake), it takes the timeout
	// and stays running: waiting without a wait reads as stuck (a CLI
	// following a sleeping run left at this moment).
	if _, err := iv.Move("i", Running); err != nil {
		t.Fatal(err)
	}
	ev, err := mb.Take("i", a, 1100)
	if err != nil || !ev.Timeout {
		t.Fatalf("at the deadline: %+v %v", ev, err)
	}
	if i, err := iv.get("i"); err != nil || i.Status != Running {
		t.Fatalf("after its timeout: %+v %v, want running", i, err)
	}
	// The timeout is recorded: a later event does not undo it.
	mb.Deliver("i", "go", nil)
	if ev2, err := mb.Take("i", a, 2000); err != nil || !ev2.Timeout || ev2.Seq != ev.Seq {
		t.Fatalf("replayed timeout: %+v %v", ev2, err)
	}
	// The next await takes the late event at once.
	if ev, err := mb.Take("i", Await{Seq: 2, Tags: []string{"go"}, Timeout: 5}, 5000); err != nil || ev.Timeout {
		t.Fatalf("next await: %+v %v", ev, err)
	}
	if d, _ := mb.Deadline("i"); d != 0 {
		t.Fatalf("deadline left behind: %d", d)
	}
}

// A delivery that commits while an await looks for its event (between
// Take's scan and its commit) is never missed: the await takes it, or the
// invocation is left runnable; never waiting beside the event it awaits.
func TestTakeDoesNotMissAConcurrentDelivery(t *testing.T) {
	s := memStore(t)
	iv, mb := NewInvocations(s), NewMailboxes(s)
	if _, err := iv.Admit("r1", "p"); err != nil {
		t.Fatal(err)
	}
	delivered := false
	takeScanned = func() {
		if !delivered {
			delivered = true
			if _, err := mb.Deliver("r1", "go", nil); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { takeScanned = nil }()
	ev, err := mb.Take("r1", Await{Seq: 1, Tags: []string{"go"}}, 1000)
	inv, _ := iv.get("r1")
	if !delivered {
		t.Fatal("the delivery did not run inside Take")
	}
	if err != nil || ev == nil || ev.Tag != "go" {
		t.Fatalf("Take: %+v %v, the invocation %s: the delivery made during the await was missed", ev, err, inv.Status)
	}
}
