// commit.go holds what keeps a step's result: its checkpoint, the steps
// charged, its events, the act it reached proposed and attempted, the last
// act's settlement and an await's take, in one transaction; and the end of
// a run whose machine is too large to keep.

package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// commit keeps a step's result: its checkpoint, the steps charged, its
// events, and the act it reached proposed and attempted, in one transaction
// (synced at a suspension or the end). It returns a RunState when the
// invocation stops here.
func (e *Engine) commit(ctx context.Context, r *run, res *port.Result, emits *[]Emit, fresh **prepared) (*RunState, error) {
	inv := r.inv
	now := e.Clock()
	*fresh = nil
	carried := r.carried // the last act's settlement, written with this checkpoint
	failRun := func(ce *checkpoint.Error) (*RunState, error) {
		if err := e.flush(r); err != nil { // the outcome first: the run's end drops later content
			return nil, err
		}
		return e.failLimit(inv, ce.Msg, *emits)
	}
	if len(res.Checkpoint) > e.Bounds.Checkpoint {
		return failRun(&checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("checkpoint of %d bytes is over the cap of %d", len(res.Checkpoint), e.Bounds.Checkpoint)})
	}
	if nearly(uint64(len(r.cp)), uint64(len(res.Checkpoint)), uint64(e.Bounds.Checkpoint)) {
		e.warn(inv, "checkpoint", fmt.Sprintf("checkpoint of %d bytes is near the cap of %d", len(res.Checkpoint), e.Bounds.Checkpoint))
	}
	var logged []events.Event
	for _, em := range res.Emits {
		logged = append(logged, e.emitEvent(now, em.Kind, em.Data))
	}
	// An act the slice reached is proposed and attempted in the same
	// transaction as its checkpoint, its grant decided just before.
	var act *Operation
	var prep *prepared
	if res.Kind == port.Act {
		act = &Operation{Invocation: inv, Ordinal: res.Seq, Tag: res.Tag, Args: res.Args}
		var err error
		if r.prog == "" {
			i, err := e.invs.get(inv)
			if err != nil {
				return nil, err
			}
			r.prog = i.Prog // an invocation's prog never changes
		}
		if prep, err = e.prepareFor(ctx, r.prog, act); err != nil {
			return nil, err
		}
	}
	// An await the slice reached takes its event in the same transaction,
	// or leaves the invocation waiting for one.
	var aw *Await
	if res.Kind == port.Event && res.Seq <= e.Bounds.Journal {
		if a, bad := parseAwait(&checkpoint.Pending{Kind: checkpoint.PendingAwait, Seq: res.Seq, Tag: res.Tag, Args: res.Args}); bad == "" {
			aw = &a
		}
	}
	// Synced at a suspension: the act's attempt, the await. At the end the
	// synced transaction that ends the invocation (Publish, MoveFailed)
	// follows at once and flushes this one with it.
	d := store.Buffered
	if res.Kind == port.Act || res.Kind == port.Event {
		d = store.Synced
	}
	// The lease ends where the invocation may wait long or ends: an await,
	// the end. At an act it goes on: the next slice follows the act's reply.
	release := res.Kind == port.Done || res.Kind == port.Error || res.Kind == port.Event
	attempted := false
	var stored []events.Event
	var held uint64
	var use cpUse
	var logBytes [2]logCounter
	var charge *tokenCharge
	var took *taken
	err := e.retryGranted(d, &prep, func() (*prepared, error) { return e.prepareFor(ctx, r.prog, act) }, func(tx *store.Tx) error {
		attempted, charge, took = false, nil, nil
		var evs []events.Event
		if carried != nil {
			var err error
			if evs, charge, err = e.settleTx(tx, carried, derefOutcome(carried.outcome)); err != nil {
				return err
			}
		}
		al, err := changeAllowance(tx, inv, settleRun(r, release))
		if err != nil {
			return err
		}
		held = al.Held
		evs = append(evs, logged...)
		if act != nil {
			op, err := proposeTx(tx, *act)
			if err != nil {
				return err
			}
			if op.Phase == Proposed {
				if _, err = attemptPreparedTx(tx, prep); err != nil {
					return err
				}
				attempted = true
				evs = append(evs, e.callEvents(act, prep.attempt.At, prep.attempt.Grant)...)
			}
		}
		var note []events.Event
		if aw != nil {
			ev, deadline, err := takeTx(tx, inv, *aw, now)
			if err != nil {
				return err
			}
			took = &taken{seq: aw.Seq, ev: ev, deadline: deadline}
			if ev == nil { // it waits: its status line goes with it
				note = e.statusNote(&RunState{Status: Waiting, Waiting: waitingFor(*aw), Awaits: aw.Tags, Deadline: deadline})
			}
		}
		var count [2]logCounter
		if stored, count, err = appendLogCount(tx, inv, evs); err != nil {
			return err
		}
		if q := e.Bounds.Events; q > 0 && count[1].Bytes > uint64(q) {
			// Past the cap (this slice's events, or an act's result
			// before it, took it there): nothing of the slice is kept.
			return errEvents
		}
		logBytes = count
		if len(note) > 0 { // the host's own line, after the cap's check, as when it was logged alone
			more, err := appendLog(tx, inv, note)
			if err != nil {
				return err
			}
			stored = append(stored, more...)
		}
		use, err = e.putCheckpointTx(tx, inv, res.Checkpoint, r.consumed)
		return err
	})
	if errors.Is(err, errEvents) {
		return failRun(eventsError(e.Bounds.Events))
	}
	if errors.Is(err, store.ErrTooLarge) {
		return failRun(&checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("the slice's records are too large to store: %v", err)})
	}
	if errors.Is(err, errQuota) {
		return failRun(&checkpoint.Error{Kind: "limit", Msg: err.Error()})
	}
	if err != nil {
		if ferr := e.flush(r); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return nil, err
	}
	r.carried, r.took = nil, took
	e.warnCharge(inv, charge)
	e.quotaWarn(inv, use)
	e.eventsWarn(inv, logBytes[0].Bytes, logBytes[1].Bytes)
	r.held, r.spent, r.consumed = held, 0, 0
	r.cp, r.stored = res.Checkpoint, time.Now()
	if attempted {
		*fresh = prep
	}
	e.published(stored)
	for _, em := range res.Emits {
		*emits = append(*emits, Emit{Kind: em.Kind, Data: em.Data})
		if e.OnEmit != nil {
			e.OnEmit(inv, Emit{Kind: em.Kind, Data: em.Data})
		}
	}
	switch res.Kind {
	case port.Done:
		// The answer now; the rest of the final events (which read the
		// whole run log) once the run has ended (conclude).
		if err := e.log(inv, e.answerEvent(e.Clock(), res.Result)); err != nil {
			return nil, err
		}
		i, err := e.invs.Publish(inv, res.Result)
		if err != nil {
			return nil, err
		}
		out := &RunState{Status: i.Status, Result: res.Result, Emits: *emits}
		if i.Status == Joining {
			out.Waiting = fmt.Sprintf("%d children", i.Live)
		}
		return out, nil
	case port.Error:
		if _, err := e.invs.MoveFailed(inv, Failed, res.Err); err != nil {
			return nil, err
		}
		return &RunState{Status: Failed, Err: res.Err, Emits: *emits}, nil
	case port.Act, port.Event:
		h, err := checkpoint.DecodeHeader(res.Checkpoint)
		if err != nil {
			return nil, err
		}
		r.h, r.reported = h, true
	default:
		// A Yield: its header differs from the last one's in its steps
		// only, for what the loop reads of it.
		h := *r.h
		h.Used, h.Pending = res.Used, nil
		r.h, r.reported = &h, false
	}
	return nil, nil
}

// failLimit ends inv with an error of kind "limit" saying msg, where what
// its machine holds could not be stored: its last stored checkpoint stays
// as it was; closeRun charges what it ran.
func (e *Engine) failLimit(inv, msg string, emits []Emit) (*RunState, error) {
	ce := &checkpoint.Error{Kind: "limit", Msg: msg}
	if _, err := e.invs.MoveFailed(inv, Failed, ce); err != nil {
		return nil, err
	}
	return &RunState{Status: Failed, Err: ce, Emits: emits}, nil
}
