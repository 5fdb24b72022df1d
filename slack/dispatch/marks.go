// marks.go keeps, in the engine's store, a mark for each card not yet
// closed: set before its run starts, cleared when the card is closed. A
// run that ends while no dispatcher runs (runehost send or cancel on the
// store with serve stopped, say) is found by its mark when the next one
// starts, and its card closed then; a closed card is not edited again.

package dispatch

import (
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// markKind is the kind of the marks' records: card/INVOCATION.
const markKind = "card"

func markKey(inv string) store.Key { return store.K(markKind, inv) }

// `runehost store verify` knows the marks.
func init() {
	host.RegisterRecordKind(markKind, 1, func(k store.Key, b []byte) error {
		var v bool
		return store.Decode(k, b, &v)
	})
}

// mark records that inv's card is open. Synced, as the run's admission is:
// a run that exists has its mark.
func (d *Dispatcher) mark(inv string) {
	if err := d.e.Store.Retry(store.Synced, func(tx *store.Tx) error { return tx.Put(markKey(inv), true) }); err != nil {
		d.warn("slack: the card's mark could not be stored: if the run ends while no process has it, its card stays live", "inv", inv, "err", err)
	}
}

// unmark records that inv's card is closed. A mark lost in a crash closes
// the card once more at the next start, with the same frame.
func (d *Dispatcher) unmark(inv string) {
	if err := d.e.Store.RetryInReserve(store.Buffered, func(tx *store.Tx) error { return tx.Delete(markKey(inv)) }); err != nil {
		d.warn("slack: the card's mark could not be cleared: the next start closes the card again", "inv", inv, "err", err)
	}
}

// marked lists the invocations whose cards are marked open.
func (d *Dispatcher) marked() ([]string, error) {
	var out []string
	err := d.e.Store.View(func(tx *store.Tx) error {
		out = nil // a View may run again
		return tx.Scan(store.K(markKind), func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			out = append(out, parts[len(parts)-1])
			return true, nil
		})
	})
	return out, err
}
