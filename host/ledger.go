// Package host is the engine: admission, invocations, the act ledger,
// allowance, scheduling and the ward. This file holds the act ledger.
//
// Every host effect ("act") of an invocation is an operation, identified by
// the invocation and the act's ordinal. Its phases follow seed 003:
//
//	Proposed    the act and its arguments are recorded; nothing has happened
//	Attempted   a durable attempt names the grant, executor and generation;
//	            only now may the effect be dispatched, and only once
//	Unresolved  a restart found an attempt without an outcome: the effect may
//	            or may not have happened; it is reported Unknown and never
//	            retried on its own
//	Recorded    the outcome is durable
//	Consumed    the prog has taken the outcome
//
// A timeout, a cancellation or a lost connection never proves an effect did
// not run, so nothing here moves an attempt back to Proposed.
package host

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/runehost/runehost/store"
)

// Phase is where an operation stands.
type Phase uint8

// The phases.
const (
	Proposed Phase = iota + 1
	Attempted
	Unresolved
	Recorded
	Consumed
)

var phaseNames = [...]string{"", "proposed", "attempted", "unresolved", "recorded", "consumed"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) && p > 0 {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// OpID identifies an operation: invocation and ordinal (from 1).
type OpID struct {
	Invocation string
	Ordinal    uint64
}

func (id OpID) String() string { return fmt.Sprintf("%s#%d", id.Invocation, id.Ordinal) }

func (id OpID) key() store.Key { return store.K("op", id.Invocation, id.Ordinal) }

// openKey indexes the attempts without an outcome, so that recovery reads
// them alone, not the whole ledger.
func (id OpID) openKey() store.Key { return store.K("open", id.Invocation, id.Ordinal) }

// Operation is one act of an invocation, as the ledger keeps it.
type Operation struct {
	Invocation string   `cbor:"1,keyasint"`
	Ordinal    uint64   `cbor:"2,keyasint"`
	Tag        string   `cbor:"3,keyasint"`
	Args       []byte   `cbor:"4,keyasint,omitempty"` // data value
	Contract   string   `cbor:"5,keyasint,omitempty"` // the result contract the adapter promised
	Phase      Phase    `cbor:"6,keyasint"`
	Attempt    *Attempt `cbor:"7,keyasint,omitempty"`
	Outcome    *Outcome `cbor:"8,keyasint,omitempty"`
	Reopened   uint64   `cbor:"9,keyasint,omitempty"` // times reconciliation found an attempt never happened

	// Grants are the grants for the act's tag, as the ward read them at the
	// attempt: given to the adapter (to check a redirect, say), never stored.
	Grants []Grant `cbor:"-"`
}

// check refuses an operation record whose fields disagree with its phase
// or its key: read back from the store, it is untrusted.
func (op *Operation) check(id OpID) error {
	bad := ""
	switch {
	case op.Invocation != id.Invocation || op.Ordinal != id.Ordinal:
		bad = fmt.Sprintf("it says it is %s#%d", op.Invocation, op.Ordinal)
	case op.Phase < Proposed || op.Phase > Consumed:
		bad = fmt.Sprintf("phase %d", op.Phase)
	case op.Phase >= Attempted && op.Attempt == nil:
		bad = "phase " + op.Phase.String() + " without an attempt"
	case op.Phase >= Recorded && op.Outcome == nil:
		bad = "phase " + op.Phase.String() + " without an outcome"
	case op.Outcome != nil && op.Outcome.Ref == "" && len(op.Outcome.Reply) == 0:
		bad = "an outcome without a reply"
	}
	if bad != "" {
		return fmt.Errorf("record %s: %w: %s", id.key(), store.ErrCorrupt, bad)
	}
	return nil
}

// ID returns the operation's identity.
func (op *Operation) ID() OpID { return OpID{op.Invocation, op.Ordinal} }

// Attempt binds a dispatch to the authority that allowed it.
type Attempt struct {
	Grant      string `cbor:"1,keyasint"`           // the exact grant statement used
	Executor   string `cbor:"2,keyasint"`           // the adapter that dispatches
	Generation uint64 `cbor:"3,keyasint"`           // of the host process, to tell restarts apart
	At         int64  `cbor:"4,keyasint"`           // unix ms
	Contract   string `cbor:"5,keyasint,omitempty"` // "lookup" when the adapter can reconcile, else unknown on a crash
	Tokens     uint64 `cbor:"6,keyasint,omitempty"` // model tokens held for it (a Metered adapter's reservation)
}

// Outcome is the settled result of an operation.
type Outcome struct {
	Reply  []byte `cbor:"1,keyasint,omitempty"` // checkpoint.EncodeReply
	Source string `cbor:"2,keyasint,omitempty"` // "adapter", "reconciled" or "operator"
	At     int64  `cbor:"3,keyasint"`
	Ref    string `cbor:"4,keyasint,omitempty"` // a large reply is stored once as blob/Ref, and Reply is empty
	Size   int    `cbor:"5,keyasint,omitempty"` // of the reply stored by reference
}

// Errors of the ledger; a *LedgerError wraps one of them.
var (
	ErrUnknownOp          = errors.New("no such operation")
	ErrMismatch           = errors.New("operation differs from the one recorded")
	ErrAlreadyAttempted   = errors.New("operation already attempted: it must not be dispatched again")
	ErrNoAttempt          = errors.New("operation has no attempt to settle")
	ErrConflictingOutcome = errors.New("conflicting outcome")
	ErrNotRecorded        = errors.New("operation has no outcome to consume")
)

// LedgerError says which operation a refusal is about, and its phase.
type LedgerError struct {
	Op    OpID
	Phase Phase
	Err   error
}

func (e *LedgerError) Error() string {
	if e.Phase == 0 {
		return fmt.Sprintf("operation %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("operation %s (%s): %v", e.Op, e.Phase, e.Err)
}

func (e *LedgerError) Unwrap() error { return e.Err }

// Ledger keeps operations in a store.
type Ledger struct{ s *store.Store }

// NewLedger returns the ledger of a store.
func NewLedger(s *store.Store) *Ledger { return &Ledger{s: s} }

// update runs a read-modify-write of one operation, retrying conflicts.
func (l *Ledger) update(id OpID, d store.Durability, f func(op *Operation, found bool) (*Operation, error)) (*Operation, error) {
	var out *Operation
	err := l.s.Retry(d, func(tx *store.Tx) error {
		var err error
		out, err = updateTx(tx, id, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// updateTx is update within a transaction: f returns the operation to write,
// or nil to write nothing.
func updateTx(tx *store.Tx, id OpID, f func(op *Operation, found bool) (*Operation, error)) (*Operation, error) {
	var op Operation
	found, err := tx.Get(id.key(), &op)
	if err != nil {
		return nil, err
	}
	if found {
		if err := op.check(id); err != nil {
			return nil, err
		}
	}
	out, err := f(&op, found)
	if err != nil || out == nil {
		return out, err
	}
	if out.Phase == Attempted || out.Phase == Unresolved {
		if err := tx.Put(id.openKey(), true); err != nil {
			return nil, err
		}
	} else if err := tx.Delete(id.openKey()); err != nil {
		return nil, err
	}
	return out, tx.Put(id.key(), out)
}

// Propose records an operation in phase Proposed. Proposing the same
// operation again (after a restart re-ran the prog to it) is a no-op that
// returns the recorded one, whatever its phase; proposing a different act
// under the same identity is ErrMismatch: replay diverged.
func (l *Ledger) Propose(op Operation) (*Operation, error) {
	var out *Operation
	err := l.s.Retry(store.Buffered, func(tx *store.Tx) error {
		var err error
		out, err = proposeTx(tx, op)
		return err
	})
	return out, err
}

// proposeTx is Propose within a transaction.
func proposeTx(tx *store.Tx, op Operation) (*Operation, error) {
	id := op.ID()
	var existing *Operation
	out, err := updateTx(tx, id, func(cur *Operation, found bool) (*Operation, error) {
		if !found {
			op.Phase, op.Attempt, op.Outcome = Proposed, nil, nil
			return &op, nil
		}
		if cur.Tag != op.Tag || !bytes.Equal(cur.Args, op.Args) || cur.Contract != op.Contract {
			return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: ErrMismatch}
		}
		existing = cur
		return nil, nil
	})
	if existing != nil {
		return existing, nil
	}
	return out, err
}

// Attempt records, synced to disk, that the operation is about to be
// dispatched under the given authority. Only a Proposed operation can be
// attempted: any other phase is ErrAlreadyAttempted, and the caller must not
// dispatch. It holds no model tokens: the engine attempts an act with its
// reservation in one transaction (attemptPreparedTx, tokens.go).
func (l *Ledger) Attempt(id OpID, a Attempt) (*Operation, error) {
	var op *Operation
	err := l.s.Retry(store.Synced, func(tx *store.Tx) error {
		var err error
		op, err = attemptTx(tx, id, a)
		return err
	})
	return op, err
}

// attemptTx is Attempt within a transaction.
func attemptTx(tx *store.Tx, id OpID, a Attempt) (*Operation, error) {
	return updateTx(tx, id, func(cur *Operation, found bool) (*Operation, error) {
		if !found {
			return nil, &LedgerError{Op: id, Err: ErrUnknownOp}
		}
		if cur.Phase != Proposed {
			return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: ErrAlreadyAttempted}
		}
		cur.Phase, cur.Attempt = Attempted, &a
		return cur, nil
	})
}

// Record settles an attempted (or unresolved) operation with its outcome,
// synced to disk before anyone consumes it, and makes its invocation
// runnable if it waits (see wakeTx). An exact duplicate of the recorded
// outcome returns the retained receipt; a different one is
// ErrConflictingOutcome and changes nothing.
func (l *Ledger) Record(id OpID, o Outcome) (*Operation, error) {
	var op *Operation
	// The effect happened: its outcome may use the disk reserve.
	err := l.s.RetryInReserve(store.Synced, func(tx *store.Tx) error {
		var err error
		if op, err = recordTx(tx, id, o); err != nil {
			return err
		}
		return wakeTx(tx, id.Invocation)
	})
	return op, err
}

// wakeTx, within tx, makes an invocation that waits runnable again: the
// act it stopped at, of unknown outcome, has just been settled (recorded,
// or reopened to be attempted again). It is done in the transaction that
// settles the act, as a delivery wakes an await, so that no crash can leave
// an invocation waiting beside an act with nothing left to wait for: only
// runnable invocations get turns, and nothing else would ever drive a child
// again. A drive that finds it must wait after all parks it again. An
// invocation that is gone, or whose record cannot be read, is left alone.
func wakeTx(tx *store.Tx, id string) error {
	inv, err := getInv(tx, id)
	if errors.Is(err, ErrNoSuchInvocation) || errors.Is(err, store.ErrCorrupt) {
		return nil
	}
	if err != nil || inv.Status != Waiting {
		return err
	}
	inv.Status = Running
	return putInv(tx, inv)
}

// recordTx is Record within a transaction.
func recordTx(tx *store.Tx, id OpID, o Outcome) (*Operation, error) {
	var receipt *Operation
	op, err := updateTx(tx, id, func(cur *Operation, found bool) (*Operation, error) {
		switch {
		case !found:
			return nil, &LedgerError{Op: id, Err: ErrUnknownOp}
		case cur.Phase == Proposed:
			return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: ErrNoAttempt}
		case cur.Phase == Recorded || cur.Phase == Consumed:
			if !bytes.Equal(cur.Outcome.Reply, o.Reply) || cur.Outcome.Ref != o.Ref {
				return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: ErrConflictingOutcome}
			}
			receipt = cur
			return nil, nil
		}
		cur.Phase, cur.Outcome = Recorded, &o
		return cur, nil
	})
	if receipt != nil {
		return receipt, nil
	}
	return op, err
}

// Consume marks a recorded outcome as taken by the prog and returns it. A
// second Consume returns the same retained outcome.
func (l *Ledger) Consume(id OpID) (*Operation, error) {
	var op *Operation
	err := l.s.Retry(store.Buffered, func(tx *store.Tx) error {
		var err error
		op, err = consumeTx(tx, id)
		return err
	})
	return op, err
}

// consumeTx is Consume within a transaction.
func consumeTx(tx *store.Tx, id OpID) (*Operation, error) {
	var receipt *Operation
	op, err := updateTx(tx, id, func(cur *Operation, found bool) (*Operation, error) {
		switch {
		case !found:
			return nil, &LedgerError{Op: id, Err: ErrUnknownOp}
		case cur.Phase == Consumed:
			receipt = cur
			return nil, nil
		case cur.Phase != Recorded:
			return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: ErrNotRecorded}
		}
		cur.Phase = Consumed
		return cur, nil
	})
	if receipt != nil {
		return receipt, nil
	}
	return op, err
}

// Recover is run when a host starts: every attempt of an earlier generation
// without an outcome becomes Unresolved (reported Unknown), and is returned.
// Nothing is dispatched again; an operator settles it with Record, or an
// adapter that can reconcile (lookup by idempotency key) does.
func (l *Ledger) Recover(generation uint64) ([]*Operation, error) {
	return l.recoverUnder(store.K("open"), func(op *Operation) bool { return op.Attempt.Generation < generation })
}

// recoverUnder is Recover for the open attempts under prefix of the open
// index, stale deciding which were left by a crash.
func (l *Ledger) recoverUnder(prefix store.Key, stale func(*Operation) bool) ([]*Operation, error) {
	var ids []OpID
	damaged := map[string]string{} // invocation: why an open operation of it is unreadable
	err := l.s.View(func(tx *store.Tx) error {
		ids = nil // a View may run again
		clear(damaged)
		return tx.Scan(prefix, func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			if len(parts) != 3 {
				return false, fmt.Errorf("index key %s: %w", k, store.ErrCorrupt)
			}
			n, err := strconv.ParseUint(parts[2], 16, 64)
			if err != nil {
				return false, fmt.Errorf("index key %s: %w", k, store.ErrCorrupt)
			}
			var op Operation
			found, err := tx.Get(OpID{parts[1], n}.key(), &op)
			if err == nil && !found {
				err = fmt.Errorf("index key %s names no operation: %w", k, store.ErrCorrupt)
			}
			if err == nil {
				err = op.check(OpID{parts[1], n})
			}
			if errors.Is(err, store.ErrCorrupt) {
				damaged[parts[1]] = err.Error() // its invocation is paused; the others recover
				return true, nil
			} else if err != nil {
				return false, err
			}
			if (op.Phase == Attempted && stale(&op)) || op.Phase == Unresolved {
				ids = append(ids, op.ID())
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, err
	}
	for inv, why := range damaged {
		if err := pauseDamaged(l.s, inv, why); err != nil {
			return nil, err
		}
	}
	var out []*Operation
	for _, id := range ids {
		var already *Operation
		op, err := l.update(id, store.Synced, func(cur *Operation, found bool) (*Operation, error) {
			already = nil
			if found && cur.Phase == Unresolved {
				already = cur // reported again, not rewritten
				return nil, nil
			}
			if !found || cur.Phase != Attempted {
				return nil, nil // settled meanwhile
			}
			cur.Phase = Unresolved
			return cur, nil
		})
		if already != nil {
			op = already
		}
		if err != nil {
			return nil, err
		}
		if op != nil {
			out = append(out, op)
		}
	}
	return out, nil
}

// Unresolve marks an attempt whose adapter could not say how it ended
// (its time ran out) as Unresolved: unknown, never dispatched again unless
// its adapter reconciles it.
func (l *Ledger) Unresolve(id OpID) (*Operation, error) {
	return l.update(id, store.Synced, func(cur *Operation, found bool) (*Operation, error) {
		if !found {
			return nil, &LedgerError{Op: id, Err: ErrUnknownOp}
		}
		if cur.Phase != Attempted {
			return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: ErrNoAttempt}
		}
		cur.Phase = Unresolved
		return cur, nil
	})
}

// Reopen returns an unresolved operation to Proposed, once an adapter's
// reconciliation found that its attempt never took effect: it may then be
// attempted again. Nothing else may reopen an attempt. Its invocation is
// made runnable if it waits (see wakeTx).
func (l *Ledger) Reopen(id OpID) (*Operation, error) {
	var op *Operation
	err := l.s.Retry(store.Synced, func(tx *store.Tx) error {
		var err error
		var held uint64
		op, err = updateTx(tx, id, func(cur *Operation, found bool) (*Operation, error) {
			if !found {
				return nil, &LedgerError{Op: id, Err: ErrUnknownOp}
			}
			if cur.Phase != Unresolved {
				return nil, &LedgerError{Op: id, Phase: cur.Phase, Err: errors.New("only an unresolved attempt can be reopened")}
			}
			held = cur.Attempt.Tokens
			cur.Phase, cur.Attempt = Proposed, nil
			cur.Reopened++
			return cur, nil
		})
		if err != nil {
			return err
		}
		// The tokens the attempt held may have been spent: they are
		// charged, and the next attempt reserves anew (tokens.go).
		if _, err := chargeTokensTx(tx, id.Invocation, held, held); err != nil {
			return err
		}
		return wakeTx(tx, id.Invocation)
	})
	if err != nil {
		return nil, err
	}
	return op, nil
}

// Get returns an operation.
func (l *Ledger) Get(id OpID) (*Operation, error) {
	var op Operation
	var found bool
	err := l.s.View(func(tx *store.Tx) error {
		var err error
		found, err = tx.Get(id.key(), &op)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, &LedgerError{Op: id, Err: ErrUnknownOp}
	}
	return &op, op.check(id)
}
