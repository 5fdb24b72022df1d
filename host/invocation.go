// invocation.go holds invocations, their persisted statuses and the
// compare-and-swap that publishes a result as a prog's new state.

package host

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
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
	Joining: {Completed, Conflict, Cancelled}, // when the last child settles, or by a person
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
	Source   string `cbor:"4,keyasint,omitempty"` // hash of its latest admitted source (key of src)
	// Bound is what may admit it: "file:PATH" (any source read from that
	// file) or "sha256:HASH" (that source only). A different one is
	// refused unless the caller asks to replace it (BoundError), so two
	// files that share a name never share state or grants by accident.
	Bound string `cbor:"5,keyasint,omitempty"`
}

// BoundError is an admission refused because the prog's name is bound to
// another file or source.
type BoundError struct {
	Prog  string
	Bound string // what the name is bound to
	Want  string // what asked to be admitted under it
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("prog %s is %s; this is %s: the name and its state and grants are another's", e.Prog, boundText(e.Bound), boundText(e.Want))
}

func (e *BoundError) Unwrap() error { return ErrBound }

// boundText says what a binding is, for a person.
func boundText(b string) string {
	switch kind, what, _ := strings.Cut(b, ":"); kind {
	case "file":
		return "the file " + what
	case "sha256":
		return "the source sha256:" + what[:min(12, len(what))]
	}
	return b
}

// admits is nil if bind may admit a run of p.
func (p *Prog) admits(bind Binding) error {
	if bind.To != "" && p.Bound != "" && p.Bound != bind.To && !bind.Replace {
		return &BoundError{Prog: p.Name, Bound: p.Bound, Want: bind.To}
	}
	return nil
}

// Binding is what an admission binds its prog to (Prog.Bound): the file
// the source was read from, or, when there is none, the source's hash.
type Binding struct {
	To      string
	Replace bool // rebind a prog bound to something else
}

// FileBinding binds a prog to the file at path.
func FileBinding(path string) string { return "file:" + path }

// SourceBinding binds a prog to one source, by its hash in hex.
func SourceBinding(hash string) string { return "sha256:" + hash }

// Invocation is one run of a prog, admitted at a revision of it. A child
// (spawned by another invocation) is named after its parent: r3.2 is the
// child that r3's act 2 spawned; r3 is the root of its tree.
type Invocation struct {
	ID       string            `cbor:"1,keyasint"`
	Prog     string            `cbor:"2,keyasint"`
	Revision uint64            `cbor:"3,keyasint"` // of the prog when admitted
	Status   Status            `cbor:"4,keyasint"`
	Result   []byte            `cbor:"5,keyasint,omitempty"` // data value, once Completed or Conflict, or held while Joining
	Err      *checkpoint.Error `cbor:"6,keyasint,omitempty"` // once Failed
	Parent   string            `cbor:"7,keyasint,omitempty"`
	Depth    uint64            `cbor:"8,keyasint,omitempty"`  // 0 for a root
	Live     uint64            `cbor:"9,keyasint,omitempty"`  // children not yet settled
	Tree     uint64            `cbor:"10,keyasint,omitempty"` // on a root: descendants not yet settled
	Admitted int64             `cbor:"11,keyasint,omitempty"` // unix ms
	Ended    int64             `cbor:"12,keyasint,omitempty"` // unix ms, once terminal
	Paused   string            `cbor:"13,keyasint,omitempty"` // why the engine cannot run it, until an operator resumes or migrates it
	Origin   string            `cbor:"14,keyasint,omitempty"` // where it came from, for its caller (StartFrom)

	// Damage, never stored, is why a record of it cannot be read, when one
	// cannot (List, Project, Inspect): the rest of it may then be unknown.
	Damage string `cbor:"-"`
}

// Runnable reports whether a scheduler may give it a turn.
func (inv *Invocation) Runnable() bool { return inv.Status == Running && inv.Paused == "" }

// Errors of invocations.
var (
	ErrNoSuchInvocation = errors.New("no such invocation")
	ErrNoSuchProg       = errors.New("no such prog")
	ErrBadTransition    = errors.New("status transition not allowed")
	ErrEnded            = errors.New("has ended")
	ErrBound            = errors.New("prog bound to another source")
)

// Invocations keeps invocations and progs in a store.
type Invocations struct {
	s     *store.Store
	clock func() int64
}

// NewInvocations returns the invocations of a store.
func NewInvocations(s *store.Store) *Invocations {
	return &Invocations{s: s, clock: func() int64 { return time.Now().UnixMilli() }}
}

func progKey(name string) store.Key { return store.K("prog", name) }
func invKey(id string) store.Key    { return store.K("inv", id) }

// runKey indexes the runnable (Running) invocations by the root of their
// tree, so that a scheduler finds them without reading parked ones.
func runKey(id string) store.Key { return store.K("run", rootOf(id), id) }

// kidKey indexes a parent's children that have not settled.
func kidKey(parent, child string) store.Key { return store.K("kid", parent, child) }

// rootOf is the root of an invocation's tree: r3 for r3.2.1.
func rootOf(id string) string {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		return id[:i]
	}
	return id
}

// putInv writes an invocation and keeps the runnable index in step.
func putInv(tx *store.Tx, inv *Invocation) error {
	if err := tx.Put(invKey(inv.ID), inv); err != nil {
		return err
	}
	if inv.Runnable() {
		return tx.Put(runKey(inv.ID), true)
	}
	return tx.Delete(runKey(inv.ID))
}

func getInv(tx *store.Tx, id string) (*Invocation, error) {
	var inv Invocation
	found, err := tx.Get(invKey(id), &inv)
	if err == nil && !found {
		err = fmt.Errorf("%s: %w", id, ErrNoSuchInvocation)
	}
	return &inv, err
}

// update retries a transaction that conflicts.
func (iv *Invocations) update(d store.Durability, f func(tx *store.Tx) error) error {
	return iv.s.Retry(d, f)
}

// stop is update for the writes that stop or end work (a pause, a failure,
// a cancel, a result): they may use the disk reserve.
func (iv *Invocations) stop(d store.Durability, f func(tx *store.Tx) error) error {
	return iv.s.RetryInReserve(d, f)
}

// pauseDamaged pauses an invocation one of whose records is unreadable,
// with why, if its own record can be read and it has not ended.
func pauseDamaged(s *store.Store, id, why string) error {
	return s.RetryInReserve(store.Synced, func(tx *store.Tx) error {
		inv, err := getInv(tx, id)
		if errors.Is(err, store.ErrCorrupt) || errors.Is(err, ErrNoSuchInvocation) {
			return nil // listed as damaged, or gone
		}
		if err != nil || inv.Status.Terminal() || inv.Paused == why {
			return err
		}
		inv.Paused = why
		return putInv(tx, inv)
	})
}

// Admit records a new invocation of prog at the prog's current revision,
// creating the prog at revision 0 if it is new.
func (iv *Invocations) Admit(id, prog string) (*Invocation, error) {
	var inv *Invocation
	err := iv.update(store.Synced, func(tx *store.Tx) error {
		var err error
		inv, err = iv.admit(tx, id, prog, "", Binding{})
		return err
	})
	return inv, err
}

// admit is Admit within a transaction; source, if set, becomes the prog's,
// and bind.To, if set, what it is bound to: a prog bound to something else
// is refused unless bind.Replace. A prog bound to nothing yet (admitted
// before bindings, or with none) takes the first binding it is given.
func (iv *Invocations) admit(tx *store.Tx, id, prog, source string, bind Binding) (*Invocation, error) {
	var p Prog
	found, err := tx.Get(progKey(prog), &p)
	if err != nil {
		return nil, err
	}
	if found {
		if err := p.admits(bind); err != nil {
			return nil, err
		}
	}
	if !found || (source != "" && p.Source != source) || (bind.To != "" && p.Bound != bind.To) {
		if !found {
			p = Prog{Name: prog}
		}
		if source != "" {
			p.Source = source
		}
		if bind.To != "" {
			p.Bound = bind.To
		}
		if err := tx.Put(progKey(prog), p); err != nil {
			return nil, err
		}
	}
	var old Invocation
	if ok, err := tx.Get(invKey(id), &old); err != nil || ok {
		if err == nil {
			err = fmt.Errorf("invocation %s exists", id)
		}
		return nil, err
	}
	inv := &Invocation{ID: id, Prog: prog, Revision: p.Revision, Status: Running, Admitted: iv.clock()}
	return inv, putInv(tx, inv)
}

// Move changes an invocation's status, if the transition is allowed. A move
// to Failed or Cancelled ends the invocation (see end).
func (iv *Invocations) Move(id string, to Status) (*Invocation, error) {
	return iv.MoveFailed(id, to, nil)
}

// MoveFailed is Move that records why an invocation failed.
func (iv *Invocations) MoveFailed(id string, to Status, failure *checkpoint.Error) (*Invocation, error) {
	var inv *Invocation
	err := iv.stop(store.Synced, func(tx *store.Tx) error {
		var err error
		if inv, err = getInv(tx, id); err != nil {
			return err
		}
		if to == Completed || to == Conflict {
			return fmt.Errorf("%s: %w: a result is published with Publish", id, ErrBadTransition)
		}
		if !CanMove(inv.Status, to) {
			return fmt.Errorf("%s: %w: %s to %s", id, ErrBadTransition, inv.Status, to)
		}
		if to.Terminal() {
			inv.Err = failure
			return iv.end(tx, inv, to)
		}
		inv.Status = to
		return putInv(tx, inv)
	})
	return inv, err
}

// Publish ends a finished invocation with its result. A root's result
// becomes the prog's new state by one compare-and-swap against the revision
// it was admitted at: if the prog has moved on since, the invocation becomes
// Conflict and its result is kept, not published. A child's result goes to
// its parent, not to the prog. An invocation with children not yet settled
// is Joining, its result held, until the last of them settles. It returns
// the invocation as it stands.
func (iv *Invocations) Publish(id string, result []byte) (*Invocation, error) {
	var inv *Invocation
	err := iv.stop(store.Synced, func(tx *store.Tx) error {
		var err error
		if inv, err = getInv(tx, id); err != nil {
			return err
		}
		if inv.Status != Running {
			return fmt.Errorf("%s: %w: publish from %s", id, ErrBadTransition, inv.Status)
		}
		inv.Result = result
		if inv.Live > 0 {
			inv.Status = Joining
			return putInv(tx, inv)
		}
		return iv.end(tx, inv, Completed)
	})
	return inv, err
}

// end makes inv terminal within tx: a completed root publishes by
// compare-and-swap; an ending parent cancels its children first (it is
// written as ended before, so they do not report back to it); an ending child
// settles with its parent.
func (iv *Invocations) end(tx *store.Tx, inv *Invocation, to Status) error {
	if !CanMove(inv.Status, to) {
		return fmt.Errorf("%s: %w: %s to %s", inv.ID, ErrBadTransition, inv.Status, to)
	}
	if to == Completed && inv.Parent == "" {
		var p Prog
		if found, err := tx.Get(progKey(inv.Prog), &p); err != nil || !found {
			if err == nil {
				err = fmt.Errorf("%s: %w", inv.Prog, ErrNoSuchProg)
			}
			return err
		}
		if p.Revision != inv.Revision {
			to = Conflict
		} else {
			p.Revision++
			p.State = inv.Result
			if err := tx.Put(progKey(inv.Prog), p); err != nil {
				return err
			}
		}
	}
	inv.Status, inv.Ended = to, iv.clock()
	if err := putInv(tx, inv); err != nil {
		return err
	}
	if err := dropWait(tx, inv.ID); err != nil {
		return err
	}
	if inv.Live > 0 {
		var kids []string
		err := tx.Scan(store.K("kid", inv.ID), func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			kids = append(kids, parts[len(parts)-1])
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, k := range kids {
			kid, err := getInv(tx, k)
			if err != nil {
				return err
			}
			if !kid.Status.Terminal() {
				if _, err := changeAllowance(tx, k, recoverHeld); err != nil {
					return err
				}
				if err := iv.end(tx, kid, Cancelled); err != nil {
					return err
				}
			}
		}
	}
	if inv.Parent != "" {
		return iv.settleChild(tx, inv)
	}
	return nil
}

// Pause takes an invocation out of the scheduler's turns, with the reason,
// or (with reason "") puts it back. Its status and records do not change.
func (iv *Invocations) Pause(id, reason string) (*Invocation, error) {
	var inv *Invocation
	err := iv.stop(store.Synced, func(tx *store.Tx) error {
		var err error
		if inv, err = getInv(tx, id); err != nil {
			return err
		}
		if inv.Status.Terminal() || inv.Paused == reason {
			return nil
		}
		inv.Paused = reason
		return putInv(tx, inv)
	})
	return inv, err
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
	var inv *Invocation
	err := iv.s.View(func(tx *store.Tx) error {
		var err error
		inv, err = getInv(tx, id)
		return err
	})
	return inv, err
}
