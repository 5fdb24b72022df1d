// lease.go holds the engine's leases of steps: a synced reservation in the
// invocation's allowance that slices draw from in memory, settled with an
// act's outcome or the next reservation.

package host

import (
	"fmt"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/store"
)

// maxLease is the most one reservation holds for an invocation with limit:
// MaxLease, Cadence.Steps, and a thirty-second of the limit (a crash, which
// charges what was held, costs a prog near its limit little), but no less
// than a slice.
func (e *Engine) maxLease(limit uint64) uint64 {
	return max(min(MaxLease, e.Cadence.steps(), limit/32), e.slice())
}

// settleRun is the change that charges what r ran since the allowance was
// last written, from what it held; release gives back the rest too.
func settleRun(r *run, release bool) func(al *Allowance, found bool) error {
	return func(al *Allowance, found bool) error {
		if !found {
			return fmt.Errorf("%s: %w", r.inv, ErrNoAllowance)
		}
		if r.spent > al.Held {
			return fmt.Errorf("%s: %w: ran %d steps, %d held", r.inv, ErrBadSettlement, r.spent, al.Held)
		}
		al.Held -= r.spent
		al.Charged += r.spent
		if release {
			al.Held = 0
		}
		return nil
	}
}

// settlement is what the transaction that leases the next slice also does:
// record an act's fresh outcome (if any) and mark it consumed.
type settlement struct {
	id      OpID
	tag     string
	outcome *Outcome // nil when it was recorded before
}

// leaseSlice settles s and returns the steps of the next slice, reserving
// more for the lease (want) when it runs low. Only a reservation is synced:
// a fresh outcome is written buffered, and made durable by the next synced
// commit (the next act's attempt, an await, the end) before anything else
// leaves the host; a crash before that leaves the act attempted, its
// outcome unknown, never repeated. A fresh outcome is recorded even when
// nothing is left to reserve.
func (e *Engine) leaseSlice(r *run, s *settlement, want bool) (uint64, error) {
	reserve := want && r.unspent() < e.slice()
	if s != nil || reserve {
		if err := e.settle(r, s, reserve); err != nil {
			return 0, err
		}
	}
	if want && !reserve && r.unspent() < e.slice() {
		// The act lent steps of the lease (a spawn): reserve again.
		if err := e.settle(r, nil, true); err != nil {
			return 0, err
		}
	}
	if !want {
		return 0, nil
	}
	if r.unspent() == 0 {
		return 0, exhausted(r.inv)
	}
	return min(r.unspent(), e.slice()), nil
}

// settle writes s and, with reserve, a larger lease.
func (e *Engine) settle(r *run, s *settlement, reserve bool) error {
	inv := r.inv
	var o Outcome
	if s != nil && s.outcome != nil {
		var err error
		if o, err = e.byRef(*s.outcome); err != nil {
			return err
		}
	}
	d, retry := store.Buffered, e.Store.Retry
	if reserve {
		d = store.Synced
	}
	if s != nil && s.outcome != nil {
		retry = e.Store.RetryInReserve // an effect happened: its outcome is kept, even on a nearly full disk
	}
	lease := max(r.lease, e.slice())
	var held uint64
	var stored []events.Event
	var charge *tokenCharge
	err := retry(d, func(tx *store.Tx) error {
		stored = nil
		if s != nil {
			evs, c, err := e.settleTx(tx, s, o)
			if charge = c; err != nil {
				return err
			}
			// The act's result line goes with its outcome: the log
			// never misses one the ledger has.
			if stored, err = appendLog(tx, inv, evs); err != nil {
				return err
			}
		}
		if !reserve {
			// What the lease holds now: an act may have lent of it.
			var al Allowance
			found, err := tx.Get(allowanceKey(inv), &al)
			if err == nil && !found {
				err = fmt.Errorf("%s: %w", inv, ErrNoAllowance)
			}
			held = al.Held
			return err
		}
		al, err := changeAllowance(tx, inv, func(al *Allowance, found bool) error {
			if err := settleRun(r, false)(al, found); err != nil {
				return err
			}
			al.Held += min(lease, e.maxLease(al.Limit), al.Available())
			return nil
		})
		held = al.Held
		return err
	})
	if err != nil {
		return err
	}
	if reserve {
		r.held, r.spent = held, 0
		r.lease = 8 * lease // the next lease is larger, up to MaxLease: few synced reservations
	} else {
		r.held = held
	}
	e.published(stored)
	e.warnCharge(inv, charge)
	return nil
}

// settleTx records s's fresh outcome o (if any) and marks its act consumed,
// within tx, and returns the act's result events for the caller to log in
// the same transaction.
func (e *Engine) settleTx(tx *store.Tx, s *settlement, o Outcome) ([]events.Event, *tokenCharge, error) {
	var evs []events.Event
	var charge *tokenCharge
	if s.outcome != nil {
		recorded, c, err := e.recordChargedTx(tx, s.id, o, s.outcome.Reply)
		if err != nil {
			return nil, c, err
		}
		charge, evs = c, e.resultEvents(recorded, &o, s.outcome.Reply)
	}
	_, err := consumeTx(tx, s.id)
	return evs, charge, err
}

// derefOutcome is *o, or the zero Outcome for a settlement recorded before.
func derefOutcome(o *Outcome) Outcome {
	if o == nil {
		return Outcome{}
	}
	return *o
}

// carries says whether s, settled before the slice after its act, can go
// with the checkpoint that slice stores instead of in a transaction of its
// own: one transaction an act. Not when the host is stopping (the slice may
// not run), for a reply stored by reference (its blob is a transaction of
// its own), or for a spawn, whose act lent steps of the lease.
func (e *Engine) carries(s *settlement, stopping bool) bool {
	return s != nil && !stopping && s.tag != SpawnTag && (s.outcome == nil || len(s.outcome.Reply) <= e.Bounds.ByRef)
}

// flush writes the settlement r carries, where the slice after its act
// stores no checkpoint (a lazy yield, a failure, a lost machine): an
// outcome is never held in memory past the crossing it came before.
func (e *Engine) flush(r *run) error {
	s := r.carried
	if s == nil {
		return nil
	}
	r.carried = nil
	return e.settle(r, s, false)
}
