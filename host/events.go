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

	"github.com/runehost/runehost/store"
)

// Event is one delivered event.
type Event struct {
	Invocation string `cbor:"1,keyasint"`
	Seq        uint64 `cbor:"2,keyasint"` // order of delivery within the invocation, from 1
	Tag        string `cbor:"3,keyasint"`
	Payload    []byte `cbor:"4,keyasint,omitempty"` // data value
	Taken      bool   `cbor:"5,keyasint,omitempty"` // consumed by an await
}

// mailbox is the per-invocation counter of deliveries.
type mailbox struct {
	Next uint64 `cbor:"1,keyasint"`
}

// Errors of the mailbox.
var ErrNoEvent = errors.New("no event for the awaited tags")

// Mailboxes keeps events in a store.
type Mailboxes struct{ s *store.Store }

// NewMailboxes returns the mailboxes of a store.
func NewMailboxes(s *store.Store) *Mailboxes { return &Mailboxes{s: s} }

func eventKey(inv string, seq uint64) store.Key { return store.K("rcv", inv, seq) }

// Deliver records an event for an invocation, which must exist. It is synced:
// a delivered event is never lost.
func (mb *Mailboxes) Deliver(inv, tag string, payload []byte) (*Event, error) {
	if tag == "" {
		return nil, fmt.Errorf("deliver to %s: an event needs a tag", inv)
	}
	var ev *Event
	err := mb.s.Retry(store.Synced, func(tx *store.Tx) error {
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
		var box mailbox
		if _, err := tx.Get(store.K("box", inv), &box); err != nil {
			return err
		}
		box.Next++
		ev = &Event{Invocation: inv, Seq: box.Next, Tag: tag, Payload: payload}
		if err := tx.Put(store.K("box", inv), box); err != nil {
			return err
		}
		return tx.Put(eventKey(inv, box.Next), ev)
	})
	return ev, err
}

// Take consumes the earliest untaken event of inv under any of tags, or
// returns ErrNoEvent (the invocation then waits).
func (mb *Mailboxes) Take(inv string, tags []string) (*Event, error) {
	var got *Event
	err := mb.s.Retry(store.Synced, func(tx *store.Tx) error {
		got = nil
		err := tx.Scan(store.K("rcv", inv), func(key store.Key, decode func(any) error) (bool, error) {
			var ev Event
			if err := decode(&ev); err != nil {
				return false, err
			}
			if ev.Taken || !slices.Contains(tags, ev.Tag) {
				return true, nil
			}
			got = &ev
			return false, nil
		})
		if err != nil || got == nil {
			return err
		}
		got.Taken = true
		return tx.Put(eventKey(inv, got.Seq), got)
	})
	if err == nil && got == nil {
		return nil, fmt.Errorf("%s awaiting %v: %w", inv, tags, ErrNoEvent)
	}
	return got, err
}
