// open.go holds how an engine opens a store: the generation it counts, the
// recovery of what earlier processes left (or, on a shared store, its
// claims), and the counter invocation ids come from.

package host

import (
	"fmt"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// generation is the store's count of host processes that opened it.
type generation struct {
	N uint64 `cbor:"1,keyasint"`
}

// Open starts an engine on a store as a new generation of host process: it
// counts the generation, and recovers what the previous ones left: attempts
// without an outcome become Unresolved (reported Unknown, never re-run).
func Open(s *store.Store, rt port.RuntimePort, clock func() int64) (*Engine, []*Operation, error) {
	var gen generation
	// In the reserve: on a nearly full disk a host still opens, to read,
	// cancel and clean up. Buffered: every attempt this generation records
	// is synced, and flushes the count with it; a count lost to a machine
	// crash had nothing of its generation on disk to confuse with the next.
	err := s.RetryInReserve(store.Buffered, func(tx *store.Tx) error {
		if _, err := tx.Get(store.K("gen"), &gen); err != nil {
			return err
		}
		gen.N++
		return tx.Put(store.K("gen"), gen)
	})
	if err != nil {
		return nil, nil, err
	}
	e := NewEngine(s, rt, gen.N, clock)
	e.invs.clock = clock
	if s.Shared() { // other hosts: each tree is recovered when it is claimed
		return e, nil, e.startClaims()
	}
	unknown, err := e.ledger.Recover(gen.N)
	return e, unknown, err
}

// StopClaims gives up the trees this host drives on a shared store, for
// other hosts to take at once: after Park, before the store closes.
func (e *Engine) StopClaims() error { return e.stopClaims() }

// NewInvocationID returns a fresh invocation id, r1, r2, ... Buffered: the
// synced admission of the invocation flushes the count with it; a count
// lost to a machine crash named nothing that was kept.
func (e *Engine) NewInvocationID() (string, error) {
	// One at a time in this process: concurrent admissions would each
	// conflict on the counter and run their transaction again.
	e.idMu.Lock()
	defer e.idMu.Unlock()
	var c generation
	err := e.Store.Retry(store.Buffered, func(tx *store.Tx) error {
		if _, err := tx.Get(store.K("seq"), &c); err != nil {
			return err
		}
		c.N++
		return tx.Put(store.K("seq"), c)
	})
	return fmt.Sprintf("r%d", c.N), err
}
