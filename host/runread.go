// runread.go holds the run log's readers: the events kept in memory of
// the runs this process drives (Backlog, Kept), the store's (Events,
// LastSeq), and the word hosts on a shared store give each other that a
// tree changed (TellChanged, HearChanged).

package host

import (
	"fmt"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/store"
)

// TellChanged tells every process on a store shared by hosts that the tree
// of inv changed (HearChanged), for their readers to look at once rather
// than at their next poll.
func (e *Engine) TellChanged(inv string) {
	if e.claims != nil {
		e.Store.Tell("tree."+rootOf(inv), nil)
	}
}

// HearChanged calls fn each time a process on a store shared by hosts
// tells that root's tree changed, until stop.
func (e *Engine) HearChanged(root string, fn func()) (stop func(), err error) {
	return e.Store.Hear("tree."+root, func([]byte) { fn() })
}

// dropBacklog forgets a run's in-memory window once it has ended: a long
// process would otherwise keep every run's. Readers go to the store.
func (e *Engine) dropBacklog(inv string) {
	e.mu.Lock()
	delete(e.backlogs, inv)
	e.mu.Unlock()
}

// Backlog returns the in-memory window of a run's newest events, for live
// readers in this process (a status card); the store has the whole run.
func (e *Engine) Backlog(inv string) *events.Backlog {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.backlogs == nil {
		e.backlogs = map[string]*events.Backlog{}
	}
	b, ok := e.backlogs[inv]
	if !ok {
		b = &events.Backlog{}
		e.backlogs[inv] = b
	}
	return b
}

// Kept returns up to max of the events of inv after seq after that this
// process keeps in memory (those it stored itself, in order), when they go
// on from after without a gap, and true; or false, and the store has them.
// A live reader of a run driven here reads the store only for what is not
// kept: on JetStream every read of a log is a scan (a consumer of the
// stream). On a store shared by hosts, a tree this host holds has no
// events but its own (the fence), so none kept after the newest is none.
func (e *Engine) Kept(inv string, after uint64, max int) ([]events.Event, bool) {
	e.mu.Lock()
	b := e.backlogs[inv]
	e.mu.Unlock()
	if b == nil {
		return nil, false
	}
	evs, truncated := b.Since(after)
	if truncated {
		return nil, false
	}
	if len(evs) == 0 {
		return nil, after != 0 && b.Last() == after && e.holdsClaim(rootOf(inv))
	}
	if evs[0].Seq != after+1 {
		return nil, false
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			evs = evs[:i] // past a gap: the store's, next time
			break
		}
	}
	return evs[:min(len(evs), max)], true
}

// LastSeq is the seq of an invocation's newest event (0: none), read from
// its counter: where a live reader of its log stands now.
func (e *Engine) LastSeq(inv string) (uint64, error) {
	var c logCounter
	err := e.Store.View(func(tx *store.Tx) error {
		_, err := tx.Get(store.K("evn", inv), &c)
		return err
	})
	return c.Next, err
}

// Events returns up to max events of an invocation from seq from (1 is the
// first), in order; max 0 means all. Each is checked as it is read.
func (e *Engine) Events(inv string, from uint64, max int) ([]events.Event, error) {
	if _, err := e.invs.get(inv); err != nil {
		return nil, err
	}
	var out []events.Event
	err := e.Store.View(func(tx *store.Tx) error {
		out = nil // a View may run again
		return tx.ScanFrom(store.K("ev", inv), runEventKey(inv, max64(from, 1)), func(k store.Key, decode func(any) error) (bool, error) {
			var ev events.Event
			if err := decode(&ev); err != nil {
				return false, err
			}
			if err := ev.Check(); err != nil || ev.Run != inv {
				return false, fmt.Errorf("record %s: %w: %v", k, store.ErrCorrupt, err)
			}
			out = append(out, ev)
			return max == 0 || len(out) < max, nil
		})
	})
	return out, err
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
