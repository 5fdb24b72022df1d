// inspect.go holds the read-only queries of invocations: the list, the
// statuses shown for them, and one invocation's records. A record that
// cannot be read fails only what it belongs to: the invocation is listed
// as damaged with the reason, and inspect shows its other records.

package host

import (
	"errors"
	"fmt"
	"slices"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// The projections: statuses computed, never stored.
const (
	Queued  = "queued"  // Running, and has not run a slice yet
	Unknown = "unknown" // Waiting on an attempt whose outcome is unknown
	Damaged = "damaged" // a record of it cannot be read: Invocation.Damage says which and why
)

// List returns the invocations, in id order, whose status is in statuses
// (all when empty). An invocation whose record cannot be read is listed,
// with only its id and its Damage, when statuses is empty.
func (e *Engine) List(statuses ...Status) ([]*Invocation, error) {
	var out []*Invocation
	err := e.Store.View(func(tx *store.Tx) error {
		out = nil // a View may run again
		return tx.Scan(store.K("inv"), func(k store.Key, decode func(any) error) (bool, error) {
			var inv Invocation
			if err := decode(&inv); err != nil {
				if !errors.Is(err, store.ErrCorrupt) {
					return false, err
				}
				if len(statuses) == 0 {
					out = append(out, damagedInvocation(k, err))
				}
				return true, nil
			}
			if len(statuses) == 0 || slices.Contains(statuses, inv.Status) {
				out = append(out, &inv)
			}
			return true, nil
		})
	})
	return out, err
}

// InvocationIDs returns the ids of the invocations after after (all when
// ""), in the store's order (the ids' bytewise order), at most n of them
// (all when 0), reading keys only: a million of them cost their ids'
// memory, not their records'.
func (e *Engine) InvocationIDs(after string, n int) ([]string, error) {
	var out []string
	start := store.K("inv")
	if after != "" {
		start = invKey(after)
	}
	err := e.Store.View(func(tx *store.Tx) error {
		out = out[:0] // a View may run again
		return tx.ScanFrom(store.K("inv"), start, func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			if id := parts[len(parts)-1]; id != after {
				out = append(out, id)
			}
			return n == 0 || len(out) < n, nil
		})
	})
	return out, err
}

// Invocations returns the invocations of ids, in that order, whose status
// is in statuses (all when empty); one gone since is left out, and one
// whose record cannot be read is listed with only its id and its Damage,
// when statuses is empty.
func (e *Engine) Invocations(ids []string, statuses ...Status) ([]*Invocation, error) {
	var out []*Invocation
	err := e.Store.View(func(tx *store.Tx) error {
		out = out[:0]
		for _, id := range ids {
			var inv Invocation
			ok, err := tx.Get(invKey(id), &inv)
			switch {
			case errors.Is(err, store.ErrCorrupt):
				if len(statuses) == 0 {
					out = append(out, damagedInvocation(invKey(id), err))
				}
				continue
			case err != nil:
				return err
			case !ok:
				continue
			}
			if len(statuses) == 0 || slices.Contains(statuses, inv.Status) {
				out = append(out, &inv)
			}
		}
		return nil
	})
	return out, err
}

// damagedInvocation stands for an invocation whose record at key is unreadable.
func damagedInvocation(key store.Key, err error) *Invocation {
	parts := key.Parts()
	return &Invocation{ID: parts[len(parts)-1], Damage: err.Error()}
}

// Project returns what to show as an invocation's status: a projection
// where one applies, else its persisted status. An invocation with a
// record that cannot be read is Damaged, and its Damage says why.
func (e *Engine) Project(invs []*Invocation) (map[string]string, error) {
	out := make(map[string]string, len(invs))
	err := e.Store.View(func(tx *store.Tx) error {
		open := map[string]bool{}
		err := tx.Scan(store.K("open"), func(k store.Key, _ func(any) error) (bool, error) {
			open[k.Parts()[1]] = true
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, i := range invs {
			out[i.ID] = i.Status.String()
			switch {
			case i.Damage != "":
				out[i.ID] = Damaged
			case i.Status == Waiting:
				if open[i.ID] {
					out[i.ID] = Unknown
				}
			case i.Status == Running:
				var al Allowance
				if _, err := tx.Get(allowanceKey(i.ID), &al); errors.Is(err, store.ErrCorrupt) {
					i.Damage, out[i.ID] = err.Error(), Damaged
				} else if err != nil {
					return err
				} else if al.Charged == 0 && al.Held == 0 {
					out[i.ID] = Queued
				}
			}
		}
		return nil
	})
	return out, err
}

// Inspection is what `runehost inspect` shows of an invocation.
type Inspection struct {
	Invocation *Invocation // only its ID when its record is unreadable
	Prog       *Prog       // nil when unreadable
	Allowance  Allowance
	Tokens     Allowance          // model tokens
	Header     *checkpoint.Header // nil when the checkpoint is unreadable
	Checkpoint []byte             // as stored
	Operations []*Operation
	// Damage lists the records that could not be read, each with why;
	// everything else is shown.
	Damage []string
}

// Inspect gathers an invocation's records. Only an invocation that does
// not exist is an error; a record that cannot be read is listed in Damage.
func (e *Engine) Inspect(inv string) (*Inspection, error) {
	out := &Inspection{}
	// note keeps a record's damage; any other error is the store's.
	note := func(err error) error {
		if errors.Is(err, store.ErrCorrupt) || errors.Is(err, checkpoint.ErrMalformed) || errors.Is(err, checkpoint.ErrSemantics) {
			out.Damage = append(out.Damage, err.Error())
			return nil
		}
		return err
	}
	i, err := e.invs.get(inv)
	if errors.Is(err, ErrNoSuchInvocation) {
		return nil, err
	}
	if err != nil {
		if err := note(err); err != nil {
			return nil, err
		}
		i = &Invocation{ID: inv, Damage: out.Damage[0]}
	}
	out.Invocation = i
	if i.Damage == "" {
		if out.Prog, err = e.invs.Prog(i.Prog); err != nil {
			if err := note(err); err != nil {
				return nil, err
			}
		}
	}
	if out.Allowance, err = e.accounts.Get(inv); err != nil && !errors.Is(err, ErrNoAllowance) {
		if err := note(err); err != nil {
			return nil, err
		}
	}
	if out.Tokens, err = e.accounts.Tokens(inv); err != nil && !errors.Is(err, ErrNoAllowance) {
		if err := note(err); err != nil {
			return nil, err
		}
	}
	if cp, err := e.checkpoint(inv); err != nil && !errors.Is(err, ErrNoSuchInvocation) {
		if err := note(err); err != nil {
			return nil, err
		}
	} else if err == nil {
		out.Checkpoint = cp
		if out.Header, err = checkpoint.DecodeHeader(cp); err != nil {
			out.Header = nil
			out.Damage = append(out.Damage, fmt.Sprintf("record %s: stored checkpoint: %v", cpKey(inv), err))
		}
	}
	damage := len(out.Damage)
	err = e.Store.View(func(tx *store.Tx) error {
		out.Operations, out.Damage = nil, out.Damage[:damage] // a View may run again
		return tx.Scan(store.K("op", inv), func(k store.Key, decode func(any) error) (bool, error) {
			var op Operation
			if err := decode(&op); err != nil {
				return true, note(err)
			}
			parts := k.Parts()
			var id OpID
			if _, err := fmt.Sscanf(parts[len(parts)-1], "%x", &id.Ordinal); err != nil {
				return true, note(fmt.Errorf("record %s: %w: not an operation's key", k, store.ErrCorrupt))
			}
			id.Invocation = inv
			if err := op.check(id); err != nil {
				return true, note(err)
			}
			out.Operations = append(out.Operations, &op)
			return true, nil
		})
	})
	return out, err
}

// Runnable returns the root invocations of prog that are runnable (Running,
// not paused), from the scheduler's index: with no scheduler running (no
// runehost serve), runs an interrupt or a crash stopped, for a command to
// point out.
func (e *Engine) Runnable(prog string) ([]string, error) {
	var out []string
	err := e.Store.View(func(tx *store.Tx) error {
		out = nil // a View may run again
		return tx.Scan(store.K("run"), func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			id := parts[len(parts)-1]
			if id != rootOf(id) {
				return true, nil
			}
			inv, err := getInv(tx, id)
			if err == nil && inv.Prog == prog && inv.Runnable() {
				out = append(out, id)
			}
			return true, nil // a damaged record is not this list's to report
		})
	})
	return out, err
}
