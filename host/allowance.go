// allowance.go holds step allowance accounting: reservations before a slice
// runs, charges after, steps lent to children, and the invariant
// charged + held + lent <= limit, which holds across restarts because every
// change is one synced transaction.

package host

import (
	"errors"
	"fmt"

	"github.com/runehost/runehost/store"
)

// MaxSlice is the largest reservation for one slice.
const MaxSlice = 1000

// Allowance is the step budget of an invocation.
type Allowance struct {
	Limit   uint64 `cbor:"1,keyasint"`
	Charged uint64 `cbor:"2,keyasint"`           // steps spent, or lost and counted as spent
	Held    uint64 `cbor:"3,keyasint"`           // reserved by a slice that has not settled
	Lent    uint64 `cbor:"4,keyasint,omitempty"` // given to children that have not settled
}

// Available is what can still be reserved or lent.
func (a Allowance) Available() uint64 { return a.Limit - a.Charged - a.Held - a.Lent }

// check is the invariant, written to catch overflow as well.
func (a Allowance) check(inv string) error {
	if sum := a.Charged + a.Held + a.Lent; sum > a.Limit || sum < a.Charged || a.Charged+a.Held < a.Charged {
		return fmt.Errorf("allowance of %s: charged %d + held %d + lent %d over limit %d", inv, a.Charged, a.Held, a.Lent, a.Limit)
	}
	return nil
}

// Errors of accounting.
var (
	ErrExhausted     = errors.New("allowance exhausted")
	ErrBadSettlement = errors.New("settlement does not match the reservation")
	ErrNoAllowance   = errors.New("no allowance for this invocation")
)

// Accounts keeps allowances in a store.
type Accounts struct{ s *store.Store }

// NewAccounts returns the accounts of a store.
func NewAccounts(s *store.Store) *Accounts { return &Accounts{s: s} }

func allowanceKey(inv string) store.Key { return store.K("alw", inv) }

func (a *Accounts) change(inv string, f func(al *Allowance, found bool) error) (Allowance, error) {
	return a.changeIn(a.s.Retry, inv, f)
}

// changeIn is change committed by retry (Retry, or RetryInReserve).
func (a *Accounts) changeIn(retry func(store.Durability, func(*store.Tx) error) error, inv string, f func(al *Allowance, found bool) error) (Allowance, error) {
	var out Allowance
	err := retry(store.Synced, func(tx *store.Tx) error {
		var err error
		out, err = changeAllowance(tx, inv, f)
		return err
	})
	return out, err
}

// changeAllowance applies f to an allowance within tx and checks the
// invariant before writing it back.
func changeAllowance(tx *store.Tx, inv string, f func(al *Allowance, found bool) error) (Allowance, error) {
	return changeAt(tx, allowanceKey(inv), inv, f)
}

// changeAt is changeAllowance for the allowance stored at key: the steps'
// (alw), or the model tokens' (tok, tokens.go).
func changeAt(tx *store.Tx, key store.Key, inv string, f func(al *Allowance, found bool) error) (Allowance, error) {
	var al Allowance
	found, err := tx.Get(key, &al)
	if err != nil {
		return al, err
	}
	if err := f(&al, found); err != nil {
		return al, err
	}
	if err := al.check(inv); err != nil {
		return al, err
	}
	return al, tx.Put(key, al)
}

// Open sets up the allowance of a new invocation.
func (a *Accounts) Open(inv string, limit uint64) (Allowance, error) {
	return a.change(inv, func(al *Allowance, found bool) error {
		if found {
			return fmt.Errorf("allowance of %s exists", inv)
		}
		*al = Allowance{Limit: limit}
		return nil
	})
}

// Reserve holds up to MaxSlice steps (no more than is available) for the
// next slice, durably, before the slice runs; it returns the amount held.
func (a *Accounts) Reserve(inv string, want uint64) (uint64, error) {
	var got uint64
	_, err := a.change(inv, reserve(inv, want, &got))
	if err == nil && got == 0 {
		err = exhausted(inv)
	}
	return got, err
}

// reserve is the change Reserve makes; it holds nothing when nothing is left.
func reserve(inv string, want uint64, got *uint64) func(al *Allowance, found bool) error {
	return func(al *Allowance, found bool) error {
		if !found {
			return fmt.Errorf("%s: %w", inv, ErrNoAllowance)
		}
		*got = min(want, MaxSlice, al.Available())
		al.Held += *got
		return nil
	}
}

func exhausted(inv string) error { return fmt.Errorf("%s: %w", inv, ErrExhausted) }

// Settle ends a reservation after its slice: the steps used are charged,
// the rest returns. used may not exceed the reservation.
func (a *Accounts) Settle(inv string, reserved, used uint64) (Allowance, error) {
	return a.change(inv, settle(inv, reserved, used))
}

// settle is the change Settle makes.
func settle(inv string, reserved, used uint64) func(al *Allowance, found bool) error {
	return func(al *Allowance, found bool) error {
		if !found {
			return fmt.Errorf("%s: %w", inv, ErrNoAllowance)
		}
		if used > reserved || reserved > al.Held {
			return fmt.Errorf("%s: %w: used %d of %d reserved, %d held", inv, ErrBadSettlement, used, reserved, al.Held)
		}
		al.Held -= reserved
		al.Charged += used
		return nil
	}
}

// Forfeit ends a reservation whose slice failed or whose settlement was
// lost: the whole reservation is charged.
func (a *Accounts) Forfeit(inv string, reserved uint64) (Allowance, error) {
	return a.Settle(inv, reserved, reserved)
}

// Recover charges every reservation left held by a process that died
// before settling it: a lost settlement counts as spent. It may use the
// disk reserve: a cancel begins with it.
func (a *Accounts) Recover(inv string) (Allowance, error) {
	return a.changeIn(a.s.RetryInReserve, inv, func(al *Allowance, found bool) error {
		if !found {
			return fmt.Errorf("%s: %w", inv, ErrNoAllowance)
		}
		al.Charged += al.Held
		al.Held = 0
		return nil
	})
}

// Get returns an allowance.
func (a *Accounts) Get(inv string) (Allowance, error) { return a.getAt(allowanceKey(inv), inv) }

// getAt is Get for the allowance stored at key.
func (a *Accounts) getAt(key store.Key, inv string) (Allowance, error) {
	var al Allowance
	err := a.s.View(func(tx *store.Tx) error {
		found, err := tx.Get(key, &al)
		if err == nil && !found {
			err = fmt.Errorf("%s: %w", inv, ErrNoAllowance)
		}
		return err
	})
	return al, err
}
