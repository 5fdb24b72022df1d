// scheduler.go holds the scheduler: fair turns over runnable invocations,
// round robin from a persisted cursor, waking awaits whose deadline passed.

package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"

	"github.com/runehost/runehost/store"
)

// DefaultQuantum is how many slices one turn runs.
const DefaultQuantum = 8

// TurnTime is the least time a turn of the default quantum runs (in
// quanta), while its invocation can run.
const TurnTime = 5 * time.Millisecond

// Scheduler gives runnable invocations turns. Only Running invocations are
// read (through the run index); parked ones cost nothing and hold no machine.
// The cursor (the last invocation served) is kept in the store, so a
// restarted host goes on where the last one stopped instead of starting over
// at the first id.
type Scheduler struct {
	E       *Engine
	Scope   string // a root invocation: only its tree; "" for every invocation
	Quantum int    // slices per turn; DefaultQuantum when 0
}

// Turn is one invocation's turn.
type Turn struct {
	Invocation string
	State      *RunState
	Err        error // the engine failed on it; the others go on
}

func (s *Scheduler) cursorKey() store.Key { return store.K("sched", s.Scope) }

type cursor struct {
	Last string `cbor:"1,keyasint"`
}

// Next returns the runnable invocation after the cursor (wrapping round),
// or "" when none is runnable.
func (s *Scheduler) Next() (string, error) {
	var c cursor
	if err := s.E.Store.View(func(tx *store.Tx) error {
		_, err := tx.Get(s.cursorKey(), &c)
		return err
	}); err != nil {
		return "", err
	}
	return s.nextAfter(c.Last, func(string) bool { return false })
}

// Step gives the next runnable invocation one turn and moves the cursor
// past it. It returns false when nothing is runnable.
func (s *Scheduler) Step(ctx context.Context) (Turn, bool, error) {
	id, err := s.Next()
	if err != nil || id == "" {
		return Turn{}, false, err
	}
	if err := s.E.Store.Retry(store.Buffered, func(tx *store.Tx) error {
		return tx.Put(s.cursorKey(), cursor{Last: id})
	}); err != nil {
		return Turn{}, false, err
	}
	t := s.turn(ctx, id)
	if t.State == nil && ctx.Err() != nil {
		return Turn{}, false, ctx.Err()
	}
	return t, true, nil
}

// Wake makes runnable every waiting invocation in scope whose await's
// deadline has passed, and returns how many it woke.
func (s *Scheduler) Wake() (int, error) {
	now := s.E.Clock()
	type dueWait struct {
		id       string
		deadline int64
		key      store.Key
	}
	var due []dueWait
	err := s.E.Store.View(func(tx *store.Tx) error {
		due = nil // a View may run again
		return tx.Scan(store.K("due"), func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			if len(parts) != 3 {
				return false, fmt.Errorf("index key %s: %w", k, store.ErrCorrupt)
			}
			id := parts[2]
			if s.Scope != "" && rootOf(id) != s.Scope {
				return true, nil
			}
			deadline, err := strconv.ParseUint(parts[1], 16, 64)
			if err != nil {
				return false, fmt.Errorf("index key %s: %w", k, store.ErrCorrupt)
			}
			if int64(deadline) > now {
				return false, nil // the rest are later
			}
			due = append(due, dueWait{id, int64(deadline), k})
			return true, nil
		})
	})
	if err != nil {
		return 0, err
	}
	woke := 0
	for _, d := range due {
		wokeThis := false
		err := s.E.Store.Retry(store.Synced, func(tx *store.Tx) error {
			tx.NoCheck() // a deadline wakes a tree whichever host drives it: its records order the two
			wokeThis = false
			var w wait
			found, err := tx.Get(waitKey(d.id), &w)
			if errors.Is(err, store.ErrCorrupt) {
				return nil // it stays waiting, listed and inspectable; the others wake
			} else if err != nil {
				return err
			}
			inv, ierr := getInv(tx, d.id)
			if !found || w.Deadline != d.deadline || ierr != nil || inv.Status.Terminal() {
				return tx.Delete(d.key) // stale: no such wait any more
			}
			if inv.Status != Waiting {
				return nil
			}
			inv.Status, wokeThis = Running, true
			return putInv(tx, inv)
		})
		if err != nil {
			return woke, err
		}
		if wokeThis {
			woke++
		}
	}
	return woke, nil
}

// Run gives turns until nothing in scope is runnable, calling each (if not
// nil) after every turn; each may stop the run by returning false.
func (s *Scheduler) Run(ctx context.Context, each func(Turn) bool) error {
	for {
		t, ok, err := s.Step(ctx)
		if err != nil {
			return err
		}
		if !ok {
			n, err := s.Wake()
			if err != nil || n == 0 {
				return err
			}
			continue
		}
		if each != nil && !each(t) {
			return nil
		}
	}
}

// RunTree drives a root invocation and then gives turns to its tree until
// nothing in it is runnable, and returns where the root stands. A child's
// failure of the engine is returned as an error after the others ran.
func (e *Engine) RunTree(ctx context.Context, root string) (*RunState, error) {
	var failed error
	err := (&Scheduler{E: e, Scope: rootOf(root)}).Run(ctx, func(t Turn) bool {
		if t.Err != nil && failed == nil {
			failed = fmt.Errorf("invocation %s: %w", t.Invocation, t.Err)
		}
		return true
	})
	if errors.Is(err, store.ErrNoSpace) {
		// The scheduler's own write met the disk's reserve between turns:
		// the tree stops where its last stored steps are, paused (as a turn
		// that meets it), never left looking as if it ran.
		ids, terr := e.Tree(rootOf(root))
		for _, id := range ids {
			if terr == nil {
				_, terr = e.invs.Pause(id, err.Error())
			}
		}
		return nil, errors.Join(err, terr)
	}
	if err != nil {
		return nil, err
	}
	if err := e.concludeTree(rootOf(root)); err != nil {
		return nil, err
	}
	st, err := e.State(root)
	if err != nil {
		return nil, err
	}
	return st, failed
}

// IsTimer says whether an await on tags is a timer: every tag is one that
// nothing sends, by convention "sleep" or one ending in ".sleep" (std/retry's
// "std/retry.sleep"), so only its timeout ends it.
func IsTimer(tags []string) bool {
	for _, t := range tags {
		if t != "sleep" && !strings.HasSuffix(t, ".sleep") {
			return false
		}
	}
	return len(tags) > 0
}

// Sleeps says when the tree of root goes on by itself, when nothing in it
// waits for anything but timers and turns: the earliest deadline of its
// timers, or now when one of it is runnable (woken since its state was
// read, say); else 0, and something else must happen first (an event, an
// operator's answer, a pause lifted).
func (e *Engine) Sleeps(root string) (int64, error) {
	ids, err := e.Tree(root)
	if err != nil {
		return 0, err
	}
	var first int64
	soonest := func(t int64) {
		if first == 0 || t < first {
			first = t
		}
	}
	for _, id := range ids {
		st, err := e.State(id)
		if err != nil {
			return 0, err
		}
		switch {
		case st.Paused != "":
			return 0, nil
		case st.Status.Terminal() || st.Status == Joining:
		case st.Status == Running:
			soonest(e.Clock())
		case st.Status == Waiting && st.Deadline != 0 && IsTimer(st.Awaits):
			soonest(st.Deadline)
		default:
			return 0, nil
		}
	}
	return first, nil
}

// Spent is what an invocation has been charged, for a person: steps and
// model tokens. An allowance that cannot be read shows as none spent. Not
// in State: the scheduler and the streams read State at every look.
func (e *Engine) Spent(inv string) (steps, tokens uint64) {
	if al, err := e.accounts.Get(inv); err == nil {
		steps = al.Charged
	}
	if tk, err := e.accounts.Tokens(inv); err == nil {
		tokens = tk.Charged
	}
	return steps, tokens
}

// State says where an invocation stands, from its records.
func (e *Engine) State(inv string) (*RunState, error) {
	// One read of the records: a drive between two reads would pair a
	// waiting status with the checkpoint of the turn after it, and a timer
	// already taken (0: nothing to wake it).
	var i *Invocation
	var h *checkpoint.Header
	var parked wait
	err := e.Store.View(func(tx *store.Tx) error {
		var err error
		if i, err = getInv(tx, inv); err != nil || i.Status != Waiting {
			return err
		}
		cp, ok, err := getCheckpoint(tx, inv)
		if err == nil && !ok {
			err = fmt.Errorf("invocation %s: %w", inv, ErrNoSuchInvocation)
		}
		if err != nil {
			return err
		}
		if h, err = checkpoint.DecodeHeader(cp); err != nil {
			return fmt.Errorf("invocation %s: stored checkpoint: %w", inv, err)
		}
		if h.Pending != nil && h.Pending.Kind == checkpoint.PendingAwait {
			_, err = tx.Get(waitKey(inv), &parked)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	st := &RunState{Status: i.Status, Result: i.Result, Err: i.Err, Paused: i.Paused, Admitted: i.Admitted, Ended: i.Ended}
	switch i.Status {
	case Joining:
		st.Waiting = fmt.Sprintf("%d children", i.Live)
	case Waiting:
		if h.Pending == nil {
			st.Waiting = "its turn"
			break
		}
		if h.Pending.Kind == checkpoint.PendingAwait {
			aw, _ := parseAwait(h.Pending)
			st.Waiting, st.Awaits, st.Deadline = fmt.Sprintf("an event %v", aw.Tags), aw.Tags, parked.Deadline
			return st, nil
		}
		st.Waiting = "the outcome of act " + h.Pending.Tag
		op, err := e.ledger.Get(OpID{inv, h.Pending.Seq})
		if err == nil && (op.Phase == Unresolved || op.Phase == Attempted) {
			st.Unknown = op
		}
	}
	return st, nil
}
