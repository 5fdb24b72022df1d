// jshold.go holds the holder record of a store on JetStream: the one host
// process that has it open, for as long as it renews its hold, in place of
// the directory lock a Badger store takes.

package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nuid"
)

// holderKey is the store's own record of who holds it.
var holderKey = K("holder")

// HoldFor is how long a hold lasts unless renewed; it is renewed every fifth
// of it. A host whose renewal has not been confirmed for a third of it stops
// sending commits, so that one still in flight (at most a request's timeout)
// lands before another host may take the store.
var HoldFor = 15 * time.Second

// holdRecord is the holder record.
type holdRecord struct {
	ID     string `cbor:"id"`
	Holder Holder `cbor:"holder"`
	Until  int64  `cbor:"until"` // unix ms
}

// ErrHoldLost is a commit refused because this process no longer knows that
// it holds the store: its renewals failed, or another host took it.
var ErrHoldLost = errors.New("store: this process's hold on the store lapsed")

// hold is a store's hold, renewed in the background.
type hold struct {
	id   string
	mu   sync.Mutex
	good time.Time // when a renewal was last confirmed
	lost bool
	stop chan struct{}
	done chan struct{}
}

// take claims the store for this process: a hold that another process
// renews is a *LockedError naming it, unless standby, which waits until that
// hold lapses or is released.
func (st *Store) take(name string, standby bool) error {
	for {
		err := st.takeOnce(name)
		var le *LockedError
		if !standby || !errors.As(err, &le) {
			return err
		}
		time.Sleep(HoldFor / 5)
	}
}

func (st *Store) takeOnce(name string) error {
	h := &hold{id: nuid.Next(), stop: make(chan struct{}), done: make(chan struct{})}
	host, _ := os.Hostname()
	me := Holder{PID: os.Getpid(), Host: host, Command: command(os.Args), Since: time.Now().UTC().Truncate(time.Second)}
	now := time.Now()
	err := st.Retry(Synced, func(tx *Tx) error {
		var r holdRecord
		if _, err := tx.Get(holderKey, &r); err != nil {
			return err
		}
		if r.ID != "" && r.ID != h.id && r.Until > now.UnixMilli() {
			hr := r.Holder
			return &LockedError{Dir: name, Holder: &hr}
		}
		return tx.Put(holderKey, holdRecord{ID: h.id, Holder: me, Until: now.Add(HoldFor).UnixMilli()})
	})
	if err != nil {
		return err
	}
	h.good = now
	st.js.hold = h
	go st.renew(h, me)
	return nil
}

// renew keeps the hold until the store closes; a hold found taken is lost
// for good.
func (st *Store) renew(h *hold, me Holder) {
	defer close(h.done)
	t := time.NewTicker(HoldFor / 5)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			st.Update(Synced, func(tx *Tx) error { // let the next host start at once
				var r holdRecord
				if _, err := tx.Get(holderKey, &r); err != nil || r.ID != h.id {
					return err
				}
				return tx.Delete(holderKey)
			})
			return
		case <-t.C:
		}
		now := time.Now()
		err := st.Retry(Synced, func(tx *Tx) error {
			var r holdRecord
			if _, err := tx.Get(holderKey, &r); err != nil {
				return err
			}
			if r.ID != h.id {
				return ErrHoldLost
			}
			return tx.Put(holderKey, holdRecord{ID: h.id, Holder: me, Until: now.Add(HoldFor).UnixMilli()})
		})
		h.mu.Lock()
		if err == nil {
			h.good = now
		} else if errors.Is(err, ErrHoldLost) {
			h.lost = true
		}
		h.mu.Unlock()
	}
}

// valid reports whether the hold still stands: confirmed within HoldFor/3.
func (h *hold) valid() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost {
		return fmt.Errorf("%w: another host holds it now", ErrHoldLost)
	}
	if since := time.Since(h.good); since > HoldFor/3 {
		return fmt.Errorf("%w: not renewed for %s", ErrHoldLost, since.Round(time.Millisecond))
	}
	return nil
}

// release ends the hold.
func (h *hold) release() {
	close(h.stop)
	<-h.done
}
