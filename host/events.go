// events.go holds the mailbox of recorded events that `await` consumes.
//
// An event is delivered to an invocation under a tag, and kept until an
// await of that invocation takes it: an event that arrives before the prog
// reaches its await is not lost. An await names one or more tags and takes
// the earliest event delivered under any of them.

package host

import (
	"errors"
	"fmt"
	"slices"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// Event is one delivered event, or the timeout of an await recorded as one.
type Event struct {
	Invocation string `cbor:"1,keyasint"`
	Seq        uint64 `cbor:"2,keyasint"` // order of delivery within the invocation, from 1
	Tag        string `cbor:"3,keyasint"`
	Payload    []byte `cbor:"4,keyasint,omitempty"` // data value
	TakenBy    uint64 `cbor:"5,keyasint,omitempty"` // the suspension (Seq) of the await that took it
	Timeout    bool   `cbor:"6,keyasint,omitempty"` // not delivered: the await's deadline passed
}

// Await is an await an invocation is suspended at.
type Await struct {
	Seq     uint64   // the machine's suspension counter at the await
	Tags    []string // the tags it takes, first delivered first
	Timeout int64    // milliseconds from the first time it waited; 0 for none
}

// mailbox is the per-invocation counter of deliveries.
type mailbox struct {
	Next uint64 `cbor:"1,keyasint"`
}

// wait records the await an invocation is parked at, with its deadline, so
// that a timeout counts from the first time it waited, across restarts.
type wait struct {
	Seq      uint64 `cbor:"1,keyasint"`
	Deadline int64  `cbor:"2,keyasint,omitempty"` // unix ms; 0 for none
}

// Errors of the mailbox.
var ErrNoEvent = errors.New("no event for the awaited tags")

// Mailboxes keeps events in a store.
type Mailboxes struct{ s *store.Store }

// NewMailboxes returns the mailboxes of a store.
func NewMailboxes(s *store.Store) *Mailboxes { return &Mailboxes{s: s} }

func eventKey(inv string, seq uint64) store.Key { return store.K("rcv", inv, seq) }
func waitKey(inv string) store.Key              { return store.K("wait", inv) }

// dueKey indexes the waits that have a deadline, by deadline, so that waking
// them reads only those due, not every parked invocation.
func dueKey(deadline int64, inv string) store.Key { return store.K("due", uint64(deadline), inv) }

// putWait records the await an invocation is parked at, replacing any other.
func putWait(tx *store.Tx, inv string, w wait) error {
	if err := dropWait(tx, inv); err != nil {
		return err
	}
	if w.Deadline != 0 {
		if err := tx.Put(dueKey(w.Deadline, inv), true); err != nil {
			return err
		}
	}
	return tx.Put(waitKey(inv), w)
}

// dropWait removes an invocation's wait, if it has one.
func dropWait(tx *store.Tx, inv string) error {
	var w wait
	found, err := tx.Get(waitKey(inv), &w)
	if errors.Is(err, store.ErrCorrupt) {
		return tx.Delete(waitKey(inv)) // its deadline's index entry, unknown, is dropped as stale by Wake
	}
	if err != nil || !found {
		return err
	}
	if w.Deadline != 0 {
		if err := tx.Delete(dueKey(w.Deadline, inv)); err != nil {
			return err
		}
	}
	return tx.Delete(waitKey(inv))
}

// Deliver records an event for an invocation, which must exist and not have
// ended, and makes a waiting invocation runnable. It is synced: a delivered
// event is never lost.
func (mb *Mailboxes) Deliver(inv, tag string, payload []byte) (*Event, error) {
	if tag == "" {
		return nil, fmt.Errorf("deliver to %s: an event needs a tag", inv)
	}
	if payload == nil {
		payload = []byte{0xf6} // nil
	} else if _, err := checkpoint.DecodeData(payload); err != nil {
		return nil, fmt.Errorf("deliver %q to %s: the payload is not data: %w", tag, inv, err)
	}
	var ev *Event
	err := mb.s.Retry(store.Synced, func(tx *store.Tx) error {
		tx.NoCheck() // any host delivers to any tree: the records order it with the tree's turns
		var i Invocation
		found, err := tx.Get(invKey(inv), &i)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("deliver %q: %w: %s", tag, ErrNoSuchInvocation, inv)
		}
		if i.Status.Terminal() {
			return fmt.Errorf("deliver %q to %s: %w: it is %s", tag, inv, ErrBadTransition, i.Status)
		}
		if ev, err = appendEvent(tx, Event{Invocation: inv, Tag: tag, Payload: payload}); err != nil {
			return err
		}
		if i.Status == Waiting { // it may be awaiting this: runnable again
			i.Status = Running
			return putInv(tx, &i)
		}
		return nil
	})
	return ev, err
}

// appendEvent numbers ev as the invocation's next delivery and stores it.
func appendEvent(tx *store.Tx, ev Event) (*Event, error) {
	var box mailbox
	if _, err := tx.Get(store.K("box", ev.Invocation), &box); err != nil {
		return nil, err
	}
	box.Next++
	ev.Seq = box.Next
	if err := tx.Put(store.K("box", ev.Invocation), box); err != nil {
		return nil, err
	}
	return &ev, tx.Put(eventKey(ev.Invocation, ev.Seq), ev)
}

// Take answers an await at now (unix ms). It returns the event the await
// already took, if it took one (a crash came between taking it and storing
// the machine that consumed it); else it takes the earliest untaken event
// under any of the await's tags; else, past the await's deadline, it records
// and returns a Timeout event; else it returns ErrNoEvent and the invocation
// waits. Taking is synced: an event is consumed by exactly one await.
func (mb *Mailboxes) Take(inv string, a Await, now int64) (*Event, error) {
	var got *Event
	err := mb.s.Retry(store.Synced, func(tx *store.Tx) error {
		var err error
		got, _, err = takeTx(tx, inv, a, now)
		return err
	})
	if err == nil && got == nil {
		return nil, fmt.Errorf("%s awaiting %v: %w", inv, a.Tags, ErrNoEvent)
	}
	return got, err
}

// takeTx is Take within tx: no event (nil) is no error, and the invocation
// waits with the deadline returned.
func takeTx(tx *store.Tx, inv string, a Await, now int64) (got *Event, deadline int64, err error) {
	// Read the delivery counter, which every delivery writes: one that
	// commits after this transaction began then conflicts with it. The
	// scan alone would not see it (a scan conflicts only on the keys it
	// read), and the invocation would wait beside the event it awaits.
	if _, err := tx.Get(store.K("box", inv), &mailbox{}); err != nil {
		return nil, 0, err
	}
	var first *Event
	err = tx.Scan(store.K("rcv", inv), func(key store.Key, decode func(any) error) (bool, error) {
		var ev Event
		if err := decode(&ev); err != nil {
			return false, err
		}
		if ev.TakenBy == a.Seq {
			got = &ev
			return false, nil
		}
		if first == nil && ev.TakenBy == 0 && slices.Contains(a.Tags, ev.Tag) {
			first = &ev
		}
		return true, nil
	})
	if takeScanned != nil {
		takeScanned()
	}
	if err != nil || got != nil {
		return got, 0, err
	}
	if first != nil {
		first.TakenBy = a.Seq
		if err := dropWait(tx, inv); err != nil {
			return nil, 0, err
		}
		return first, 0, tx.Put(eventKey(inv, first.Seq), first)
	}
	var w wait
	found, err := tx.Get(waitKey(inv), &w)
	if err != nil {
		return nil, 0, err
	}
	if found && w.Seq == a.Seq && w.Deadline != 0 && now >= w.Deadline {
		// Its timeout answers it: it goes on, never seen waiting without
		// a wait (a reader would take it for stuck).
		if got, err = appendEvent(tx, Event{Invocation: inv, TakenBy: a.Seq, Timeout: true}); err != nil {
			return nil, 0, err
		}
		return got, 0, dropWait(tx, inv)
	}
	// No event: the invocation waits, in this same transaction, so that
	// a delivery committed after it finds it waiting and wakes it.
	if i, err := getInv(tx, inv); err != nil {
		return nil, 0, err
	} else if i.Status == Running {
		i.Status = Waiting
		if err := putInv(tx, i); err != nil {
			return nil, 0, err
		}
	}
	if !found || w.Seq != a.Seq {
		w = wait{Seq: a.Seq}
		if a.Timeout > 0 {
			w.Deadline = now + a.Timeout
		}
		return nil, w.Deadline, putWait(tx, inv, w)
	}
	return nil, w.Deadline, nil
}

// takeScanned, when a test sets it, runs in Take's transaction after its
// scan of the mailbox: where a concurrent delivery must not be missed.
var takeScanned func()

// Deadline returns the deadline (unix ms) of the await inv is parked at, or 0.
func (mb *Mailboxes) Deadline(inv string) (int64, error) {
	var w wait
	err := mb.s.View(func(tx *store.Tx) error {
		_, err := tx.Get(waitKey(inv), &w)
		return err
	})
	return w.Deadline, err
}
