// invocation.go holds invocations, their persisted statuses and the
// compare-and-swap that publishes a result as a prog's new state.

package host

import (
	"errors"
	"fmt"

	"github.com/runehost/runehost/store"
)

// Status is the persisted status of an invocation. Queued (admitted and
// runnable) and Unknown (waiting on an attempt with no outcome) are
// projections computed from these and the ledger, never stored.
type Status uint8

// The statuses.
const (
	Running   Status = iota + 1 // runnable or running
	Waiting                     // suspended at an act or an await
	Joining                     // waiting for its children
	Completed                   // its result was published as the prog's state
	Failed                      // ended with an error
	Cancelled                   // stopped by a person
	Conflict                    // its result was stale: the prog moved on; kept, not published
)

var statusNames = [...]string{"", "running", "waiting", "joining", "completed", "failed", "cancelled", "conflict"}

func (s Status) String() string {
	if int(s) < len(statusNames) && s > 0 {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", s)
}

// Terminal reports whether no transition leaves s.
func (s Status) Terminal() bool { return s >= Completed }

// transitions lists the allowed moves between statuses.
var transitions = map[Status][]Status{
	Running: {Waiting, Joining, Completed, Failed, Cancelled, Conflict},
	Waiting: {Running, Failed, Cancelled},
	Joining: {Running, Failed, Cancelled},
}

// CanMove reports whether an invocation may go from one status to another.
func CanMove(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Prog is an admitted prog: its current state and the revision it is at.
type Prog struct {
	Name     string `cbor:"1,keyasint"`
	Revision uint64 `cbor:"2,keyasint"`
	State    []byte `cbor:"3,keyasint,omitempty"` // data value
}

// Invocation is one run of a prog, admitted at a revision of it.
type Invocation struct {
	ID       string `cbor:"1,keyasint"`
	Prog     string `cbor:"2,keyasint"`
	Revision uint64 `cbor:"3,keyasint"` // of the prog when admitted
	Status   Status `cbor:"4,keyasint"`
	Result   []byte `cbor:"5,keyasint,omitempty"` // data value, once Completed or Conflict
}

// Errors of invocations.
var (
	ErrNoSuchInvocation = errors.New("no such invocation")
	ErrNoSuchProg       = errors.New("no such prog")
	ErrBadTransition    = errors.New("status transition not allowed")
)

// Invocations keeps progs and invocations in a store.
type Invocations struct{ s *store.Store }

// NewInvocations returns the invocations of a store.
func NewInvocations(s *store.Store) *Invocations { return &Invocations{s: s} }

func progKey(name string) store.Key { return store.K("prog", name) }
func invKey(id string) store.Key    { return store.K("inv", id) }

// update retries a transaction that conflicts.
func (iv *Invocations) update(d store.Durability, f func(tx *store.Tx) error) error {
	return iv.s.Retry(d, f)
}

// Admit records a new invocation of prog at the prog's current revision,
// creating the prog at revision 0 if it is new.
func (iv *Invocations) Admit(id, prog string) (*Invocation, error) {
	var inv *Invocation
	err := iv.update(store.Synced, func(tx *store.Tx) error {
		var p Prog
		found, err := tx.Get(progKey(prog), &p)
		if err != nil {
			return err
		}
		if !found {
			p = Prog{Name: prog}
			if err := tx.Put(progKey(prog), p); err != nil {
				return err
			}
		}
		var old Invocation
		if ok, err := tx.Get(invKey(id), &old); err != nil || ok {
			if err == nil {
				err = fmt.Errorf("invocation %s exists", id)
			}
			return err
		}
		inv = &Invocation{ID: id, Prog: prog, Revision: p.Revision, Status: Running}
		return tx.Put(invKey(id), inv)
	})
	return inv, err
}

// Move changes an invocation's status, if the transition is allowed.
func (iv *Invocations) Move(id string, to Status) (*Invocation, error) {
	var inv Invocation
	err := iv.update(store.Buffered, func(tx *store.Tx) error {
		found, err := tx.Get(invKey(id), &inv)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s: %w", id, ErrNoSuchInvocation)
		}
		if to == Completed || to == Conflict {
			return fmt.Errorf("%s: %w: a result is published with Publish", id, ErrBadTransition)
		}
		if !CanMove(inv.Status, to) {
			return fmt.Errorf("%s: %w: %s to %s", id, ErrBadTransition, inv.Status, to)
		}
		inv.Status = to
		return tx.Put(invKey(id), inv)
	})
	return &inv, err
}

// Publish makes a finished invocation's result the prog's new state, by one
// compare-and-swap against the revision it was admitted at: if the prog has
// moved on since, the invocation becomes Conflict and its result is kept,
// not published. It returns the invocation as it ends.
func (iv *Invocations) Publish(id string, result []byte) (*Invocation, error) {
	var inv Invocation
	err := iv.update(store.Synced, func(tx *store.Tx) error {
		found, err := tx.Get(invKey(id), &inv)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s: %w", id, ErrNoSuchInvocation)
		}
		if inv.Status != Running {
			return fmt.Errorf("%s: %w: publish from %s", id, ErrBadTransition, inv.Status)
		}
		var p Prog
		if found, err := tx.Get(progKey(inv.Prog), &p); err != nil || !found {
			if err == nil {
				err = fmt.Errorf("%s: %w", inv.Prog, ErrNoSuchProg)
			}
			return err
		}
		inv.Result = result
		if p.Revision != inv.Revision {
			inv.Status = Conflict
			return tx.Put(invKey(id), inv)
		}
		p.Revision++
		p.State = result
		inv.Status = Completed
		if err := tx.Put(progKey(inv.Prog), p); err != nil {
			return err
		}
		return tx.Put(invKey(id), inv)
	})
	return &inv, err
}

// Prog returns a prog.
func (iv *Invocations) Prog(name string) (*Prog, error) {
	var p Prog
	err := iv.s.View(func(tx *store.Tx) error {
		found, err := tx.Get(progKey(name), &p)
		if err == nil && !found {
			err = fmt.Errorf("%s: %w", name, ErrNoSuchProg)
		}
		return err
	})
	return &p, err
}

// get returns an invocation.
func (iv *Invocations) get(id string) (*Invocation, error) {
	var inv Invocation
	err := iv.s.View(func(tx *store.Tx) error {
		found, err := tx.Get(invKey(id), &inv)
		if err == nil && !found {
			err = fmt.Errorf("%s: %w", id, ErrNoSuchInvocation)
		}
		return err
	})
	return &inv, err
}
