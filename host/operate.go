// operate.go holds what an operator or a client does to a running tree from
// outside its turns: send an event, resume, resolve an act, cancel; and the
// checks each makes before it writes anything (the disk's room, an ended run).

package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// Send delivers an event to an invocation and, if it is waiting, drives it.
func (e *Engine) Send(ctx context.Context, inv, tag string, payload []byte) (*RunState, error) {
	if err := e.room(inv, "send to", false); err != nil {
		return nil, err
	}
	if err := e.Deliver(inv, tag, payload); err != nil {
		return nil, err
	}
	i, err := e.invs.get(inv)
	if err != nil {
		return nil, err
	}
	if i.Status != Running {
		return &RunState{Status: i.Status}, nil
	}
	return e.Resume(ctx, inv)
}

// Deliver is Send without the drive: an invocation it wakes is left
// runnable, for a scheduler (a Loop).
// On a store shared by hosts, the host that drives inv's tree is told at
// once (wakeDriver), rather than finding it at its scheduler's next look.
func (e *Engine) Deliver(inv, tag string, payload []byte) error {
	_, err := e.boxes.Deliver(inv, tag, payload)
	if err == nil {
		e.wakeDriver(inv)
	}
	return err
}

// Ready is Resume without the drive: a lost settlement is charged, a pause
// lifted, and a waiting invocation made runnable to look at what it waits
// for again, for a scheduler (a Loop).
// On a store shared by hosts, the host that drives inv's tree does it.
func (e *Engine) Ready(inv string) error {
	return e.elsewhere(hostOp{Op: opReady, Inv: inv}, func() error { return e.readyHere(inv) })
}

// readyHere is Ready where this host drives the tree, or takes it.
func (e *Engine) readyHere(inv string) error {
	unlock, err := e.lockTree(inv)
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.notEnded(inv, "resume"); err != nil {
		return err
	}
	if err := e.room(inv, "resume", false); err != nil {
		return err
	}
	if !e.kept(inv) {
		if _, err := e.accounts.Recover(inv); err != nil {
			return err
		}
	}
	i, err := e.invs.Pause(inv, "")
	if err != nil {
		return err
	}
	if i.Status == Waiting {
		_, err = e.invs.Move(inv, Running)
	}
	return err
}

// Resolve settles an act of unknown outcome as an operator says it ended,
// then drives the invocation on.
func (e *Engine) Resolve(ctx context.Context, id OpID, reply []byte) (*RunState, error) {
	if err := e.Settle(id, reply); err != nil {
		return nil, err
	}
	return e.Resume(ctx, id.Invocation)
}

// Settle is Resolve without the drive. On a store shared by hosts, the
// host that drives the act's tree settles it.
func (e *Engine) Settle(id OpID, reply []byte) error {
	return e.elsewhere(hostOp{Op: opSettle, Inv: id.Invocation, Ordinal: id.Ordinal, Reply: reply}, func() error { return e.settleHere(id, reply) })
}

// settleHere is Settle where this host drives the tree, or takes it.
func (e *Engine) settleHere(id OpID, reply []byte) error {
	if op, err := e.ledger.Get(id); err != nil {
		return err
	} else if op.Phase != Unresolved && op.Phase != Attempted {
		return &LedgerError{Op: id, Phase: op.Phase, Err: errors.New("only an act of unknown outcome can be resolved")}
	}
	if err := e.room(id.Invocation, "resolve an act of", false); err != nil {
		return err // the invocation goes on once resolved: it needs the room to
	}
	if e.claims != nil { // resolved where its tree is driven: a live other host's attempt may yet end
		unlock, err := e.lockTree(id.Invocation)
		if err != nil {
			return err
		}
		defer unlock()
	}
	op, err := e.ledger.Get(id) // as the tree's holder sees it
	if err != nil {
		return err
	}
	if op.Phase != Unresolved && op.Phase != Attempted {
		return &LedgerError{Op: id, Phase: op.Phase, Err: errors.New("only an act of unknown outcome can be resolved")}
	}
	if op.Phase == Attempted && op.Attempt.Generation == e.Generation {
		return &LedgerError{Op: id, Phase: op.Phase, Err: errors.New("the act is in flight in this process")}
	}
	r, err := checkpoint.DecodeReply(reply)
	if err != nil {
		return fmt.Errorf("resolve %s: the outcome: %w", id, err)
	}
	if reply, err = encodeReply(r); err != nil {
		return fmt.Errorf("resolve %s: the outcome: %w", id, err)
	}
	_, err = e.record(id, op.Tag, Outcome{Reply: reply, Source: "operator", At: e.Clock()})
	return err
}

// Busy says whether a turn of inv's tree runs, or waits to, in this
// process: a reader that sees the tree settled and not busy has seen
// every event of its last turn.
func (e *Engine) Busy(inv string) bool { return e.holds.busy(inv) }

// Tree returns a root's invocation and its descendants, in id order.
func (e *Engine) Tree(root string) ([]string, error) {
	ids := []string{root}
	err := e.Store.View(func(tx *store.Tx) error {
		ids = ids[:1] // a View may run again
		return tx.Scan(append(store.K("inv"), root+"."...), func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			ids = append(ids, parts[len(parts)-1])
			return true, nil
		})
	})
	return ids, err
}

// Cancel stops an invocation that has not ended. Its records stay: an act of
// unknown outcome stays unresolved and inspectable, and its allowance held by
// a lost slice is charged. A turn of its tree running in this process ends
// at its next slice (an act in flight finishes first); on a store shared by
// hosts, the host that drives the tree cancels it.
func (e *Engine) Cancel(inv string) error {
	// The disk is asked first (a statfs, nothing read from the store), so
	// that a cancel refused leaves a running turn going, and one taken stops
	// it without delay.
	if err := e.room(inv, "cancel", true); err != nil {
		return err
	}
	return e.elsewhere(hostOp{Op: opCancel, Inv: inv}, func() error { return e.cancelHere(inv) })
}

// cancelHere is Cancel where this host drives the tree, or takes it.
func (e *Engine) cancelHere(inv string) error {
	defer e.holds.askStop(inv)()
	unlock, err := e.lockTree(inv)
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.notEnded(inv, "cancel"); err != nil {
		return err
	}
	e.dropRun(inv)
	if _, err := e.accounts.Recover(inv); err != nil && !errors.Is(err, store.ErrCorrupt) {
		return err // an unreadable allowance stays as it is; the invocation is cancelled
	}
	if err := e.accounts.recoverTokens(inv); err != nil && !errors.Is(err, store.ErrCorrupt) {
		return err
	}
	if _, err := e.invs.Move(inv, Cancelled); err != nil {
		return err
	}
	return e.concludeTree(inv)
}

// room says, before an operator's command writes anything, that the store
// has room for what it does: the disk reserve (store.Room) for what goes
// on running, the reserve's floor (inReserve) for what stops work. A
// command refused here wrote nothing; one let through may still meet a
// disk filled meanwhile, but not one that was full already.
func (e *Engine) room(inv, what string, inReserve bool) error {
	if err := e.Store.Room(inReserve); err != nil {
		return fmt.Errorf("%s %s: nothing done: %w", what, inv, err)
	}
	return nil
}

// notEnded says, before what would change it, that inv does not exist or
// has ended: "r7: no such invocation", "r7 has ended (failed): nothing to
// cancel", not a missing allowance or a refused transition.
func (e *Engine) notEnded(inv, what string) error {
	i, err := e.invs.get(inv)
	switch {
	case err != nil:
		return err
	case i.Status == Cancelled && what == "cancel":
		return fmt.Errorf("%s %w: it was cancelled already", inv, ErrEnded)
	case i.Status.Terminal():
		return fmt.Errorf("%s %w (%s): nothing to %s", inv, ErrEnded, i.Status, what)
	}
	return nil
}

// concludeTree concludes an invocation and every descendant that has ended.
func (e *Engine) concludeTree(inv string) error {
	ids, err := e.Tree(inv)
	for _, id := range ids {
		if err == nil {
			err = e.conclude(id)
		}
	}
	return err
}
