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
	if _, err := mb.Take("i", []string{"other"}); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("got %v, want ErrNoEvent", err)
	}
	// Several tags: the earliest delivered of any of them.
	ev, err := mb.Take("i", []string{"cancel", "approve"})
	if err != nil || ev.Tag != "approve" || ev.Seq != 1 {
		t.Fatalf("got %+v, %v", ev, err)
	}
	ev, _ = mb.Take("i", []string{"cancel", "approve"})
	if ev.Tag != "cancel" {
		t.Fatalf("second take: %+v", ev)
	}
	ev, _ = mb.Take("i", []string{"approve"})
	if ev.Seq != 3 || ev.Payload[0] != 0xf4 {
		t.Fatalf("third take: %+v", ev)
	}
	if _, err := mb.Take("i", []string{"approve", "cancel"}); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("every event taken once: %v", err)
	}
	if _, err := mb.Deliver("nobody", "x", nil); !errors.Is(err, ErrNoSuchInvocation) {
		t.Fatalf("event for an unknown invocation: %v", err)
	}
	iv.Move("i", Cancelled)
	if _, err := mb.Deliver("i", "x", nil); !errors.Is(err, ErrBadTransition) {
		t.Fatalf("event for a finished invocation: %v", err)
	}
}
