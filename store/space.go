// space.go holds the disk reserve: writes are refused, with an error, while
// the free space left would fall below it. Badger maps its logs and tables
// and writes into them through memory; on a full disk such a write is a
// SIGBUS that kills the process, so the store must stop well before.

package store

import (
	"fmt"
	"sync"
	"time"
)

// DefaultReserve is the free space (bytes) a store keeps beyond what its
// preallocated logs may still claim: Badger's next value log (2 × 64 MiB
// mapped), a memtable's log and its flush (2 × 16 MiB, 16 MiB), and room
// for a compaction's output.
const DefaultReserve = 256 << 20

// measureEvery bounds how stale the measured free space may be; measureBytes
// how much may be written before it is measured again.
const (
	measureEvery = time.Second
	measureBytes = 8 << 20
)

// reserve decides whether a write fits above the reserve.
type reserve struct {
	dir    string
	need   uint64 // the reserve
	freeFn func() (uint64, error)

	mu       sync.Mutex
	measured time.Time
	free     int64 // free space at the last measure, less what was admitted since
	debt     int64 // the holes in Badger's logs at the last measure
	since    int64 // bytes admitted since the last measure
}

func newReserve(dir string, need uint64, free func() (uint64, error)) *reserve {
	if need == 0 {
		need = DefaultReserve
	}
	if free == nil {
		free = func() (uint64, error) { return freeSpace(dir) }
	}
	return &reserve{dir: dir, need: need, freeFn: free}
}

// floor is the part of the reserve that UpdateInReserve leaves alone.
func (r *reserve) floor() uint64 { return r.need / 8 }

// admit reports whether n more bytes may be written: ErrNoSpace when the
// free space less the holes in Badger's logs would fall below the reserve.
// A write in the reserve needs only the free space itself to stay above
// its floor: a few small writes, which the holes already hold room for.
func (r *reserve) admit(n int, inReserve bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fits := func() bool {
		if inReserve {
			return r.free-int64(n) >= int64(r.floor())
		}
		return r.free-r.debt-int64(n) >= int64(r.need)
	}
	if time.Since(r.measured) > measureEvery || r.since > measureBytes || !fits() {
		if err := r.measure(); err != nil {
			return err
		}
	}
	if !fits() {
		if inReserve {
			return fmt.Errorf("store %s: %w: %d MiB free, under the %d MiB that the writes ending work keep (free some space)",
				r.dir, ErrNoSpace, max(r.free, 0)>>20, r.floor()>>20)
		}
		return fmt.Errorf("store %s: %w: %d MiB free beyond what Badger's logs may still claim, and the reserve is %d MiB (free some space, or lower RUNEHOST_STORE_RESERVE)",
			r.dir, ErrNoSpace, max(r.free-r.debt, 0)>>20, r.need>>20)
	}
	r.free -= int64(n)
	r.since += int64(n)
	return nil
}

// room is admit of nothing, measured afresh.
func (r *reserve) room(inReserve bool) error {
	r.mu.Lock()
	r.measured = time.Time{}
	r.mu.Unlock()
	return r.admit(0, inReserve)
}

func (r *reserve) measure() error {
	free, err := r.freeFn()
	if err != nil {
		// No way to tell (an unsupported system): let writes through.
		r.free, r.debt, r.since, r.measured = 1<<62, 0, 0, time.Now()
		return nil
	}
	debt, err := sparseDebt(r.dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	r.free, r.debt, r.since, r.measured = int64(min(free, 1<<62)), int64(debt), 0, time.Now()
	return nil
}
