// migrate.go holds Migrate: an operator replaces the checkpoint of an
// invocation the engine cannot run (for one, a checkpoint of older
// semantics), after the replacement is validated in full.

package host

import (
	"errors"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/store"
)

// ErrBadReplacement is a replacement checkpoint Migrate refused.
var ErrBadReplacement = errors.New("replacement checkpoint refused")

// Migrate validates cp as the new checkpoint of inv, and unless dryRun
// stores it and lifts the invocation's pause. The replacement must be of
// this engine's semantics and of inv, its program the stored source it names
// or source (then stored too), and the machine must restore from it. The
// invocation's ledger, allowance and events stay as they are: a replacement
// suspended at an act must be at the same act as the ledger's, or the next
// drive refuses it as a divergence.
//
// On a store shared by hosts, the host that drives inv's tree gives it up
// (its live machines stored), and Migrate takes it, and frees it after.
func (e *Engine) Migrate(inv string, cp, source []byte, dryRun bool) (h *checkpoint.Header, err error) {
	if e.claims == nil || dryRun {
		return e.migrate(inv, cp, source, dryRun)
	}
	err = e.elsewhere(hostOp{Op: opRelease, Inv: inv}, func() error {
		unlock, err := e.lockTree(inv)
		if err != nil {
			return err
		}
		defer unlock()
		if h, err = e.migrate(inv, cp, source, false); err != nil {
			return err
		}
		err = e.claims.release(rootOf(inv)) // for whichever host's scheduler finds it runnable
		e.claims.forget(rootOf(inv))
		return err
	})
	return h, err
}

func (e *Engine) migrate(inv string, cp, source []byte, dryRun bool) (*checkpoint.Header, error) {
	i, err := e.invs.get(inv)
	if err != nil {
		return nil, err
	}
	if i.Status.Terminal() {
		return nil, fmt.Errorf("migrate %s: %w: it is %s", inv, ErrBadTransition, i.Status)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("migrate %s: %w: %s", inv, ErrBadReplacement, fmt.Sprintf(format, args...))
	}
	c, err := checkpoint.Decode(cp, checkpoint.Expect{Semantics: semantics})
	if err != nil {
		return nil, bad("%v", err)
	}
	if c.Header.Invocation != inv {
		return nil, bad("it is a checkpoint of invocation %q", c.Header.Invocation)
	}
	hash := fmt.Sprintf("%x", c.Header.Program)
	if source == nil {
		if source, err = e.source(hash); err != nil {
			return nil, bad("no source %.16s is stored; give it", hash)
		}
	} else if h := compile.HashSource(source); fmt.Sprintf("%x", h) != hash {
		if modules.IsSet(source) {
			return nil, bad("the source given (the prog and the modules it imports) is %.16x, the checkpoint's program %.16s: the prog or one of its modules changed since the checkpoint was made", h, hash)
		}
		return nil, bad("the source given is %.16x, the checkpoint's program %.16s", h, hash)
	}
	prog, err := compile.Compile(source)
	if err != nil {
		return nil, bad("its source does not compile: %v", err)
	}
	if _, err := machine.Restore(prog, c); err != nil {
		return nil, bad("the machine does not restore from it: %v", err)
	}
	if dryRun {
		return &c.Header, nil
	}
	var noted []events.Event
	err = e.Store.Retry(store.Synced, func(tx *store.Tx) error {
		if err := tx.PutRaw(srcKey(hash), source); err != nil {
			return err
		}
		if _, err := e.replaceCheckpointTx(tx, inv, cp); err != nil {
			return err
		}
		i, err := getInv(tx, inv)
		if err != nil {
			return err
		}
		i.Paused = ""
		if err := putInv(tx, i); err != nil {
			return err
		}
		if err := dropWait(tx, inv); err != nil { // the await it waited at is gone
			return err
		}
		noted, err = appendLog(tx, inv, []events.Event{e.note(events.NoteMigrated, "checkpoint replaced, program "+hash[:16])})
		return err
	})
	if err == nil {
		e.published(noted) // live readers are told, as of every event
	}
	return &c.Header, err
}
