// runlog.go holds the run log: the events of each invocation, numbered from
// 1, stored with the run so that a reader can start from any seq.
//
// A slice's emits are stored in the transaction that stores the checkpoint
// after it: a slice re-run after a crash does not log them twice. Act lines
// are written after the ledger records that they describe; the ledger, not
// the log, is the authority on effects.

package host

import (
	"fmt"

	"github.com/runehost/runehost/store"
)

// The kinds of run events.
const (
	EventEmit    = "emit"    // the prog emitted: Name is its kind, Data its data
	EventAct     = "act"     // an act was attempted (or denied): Name is its tag, Data its arguments
	EventOutcome = "outcome" // an act's outcome was recorded: Name is its tag, Data the reply
	EventStatus  = "status"  // the invocation stopped a drive: Name is its status, Data a note
)

// RunEvent is one line of an invocation's run log.
type RunEvent struct {
	Invocation string `cbor:"1,keyasint"`
	Seq        uint64 `cbor:"2,keyasint"`
	At         int64  `cbor:"3,keyasint"` // unix ms
	Kind       string `cbor:"4,keyasint"`
	Name       string `cbor:"5,keyasint,omitempty"`
	Data       []byte `cbor:"6,keyasint,omitempty"` // data value (for an outcome: checkpoint.EncodeReply)
	Ordinal    uint64 `cbor:"7,keyasint,omitempty"` // the act's, for act and outcome
	Ref        string `cbor:"8,keyasint,omitempty"` // an outcome whose reply is stored by reference
}

func runEventKey(inv string, seq uint64) store.Key { return store.K("ev", inv, seq) }

type logCounter struct {
	Next uint64 `cbor:"1,keyasint"`
}

// appendLog numbers and stores events of one invocation within tx.
func appendLog(tx *store.Tx, inv string, evs []RunEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var c logCounter
	if _, err := tx.Get(store.K("evn", inv), &c); err != nil {
		return err
	}
	for i := range evs {
		c.Next++
		evs[i].Invocation, evs[i].Seq = inv, c.Next
		if err := tx.Put(runEventKey(inv, c.Next), evs[i]); err != nil {
			return err
		}
	}
	return tx.Put(store.K("evn", inv), c)
}

// log stores events in a transaction of their own.
func (e *Engine) log(inv string, evs ...RunEvent) error {
	return e.Store.Retry(store.Buffered, func(tx *store.Tx) error { return appendLog(tx, inv, evs) })
}

// Events returns up to max events of an invocation from seq from (1 is the
// first), in order; max 0 means all.
func (e *Engine) Events(inv string, from uint64, max int) ([]RunEvent, error) {
	if _, err := e.invs.get(inv); err != nil {
		return nil, err
	}
	var out []RunEvent
	err := e.Store.View(func(tx *store.Tx) error {
		return tx.ScanFrom(store.K("ev", inv), runEventKey(inv, from), func(k store.Key, decode func(any) error) (bool, error) {
			var ev RunEvent
			if err := decode(&ev); err != nil {
				return false, err
			}
			if ev.Invocation != inv {
				return false, fmt.Errorf("event %s belongs to %s: %w", k, ev.Invocation, store.ErrCorrupt)
			}
			out = append(out, ev)
			return max == 0 || len(out) < max, nil
		})
	})
	return out, err
}
