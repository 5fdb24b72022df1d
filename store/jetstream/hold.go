// hold.go holds the hold on a store on JetStream: the one host process
// that has it open, in place of the directory lock a Badger store takes.
// The holder record changes only when a host takes the store, and every
// commit checks it (a fence); a beat record beside it is renewed.

package jetstream

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runehost/runehost/store"
)

// holderKey names the host that took the store; beatKey says until when
// its hold lasts. Their kind is the one store's export leaves out as the
// store's own (holderKind).
var (
	holderKey = store.K("holder")
	beatKey   = store.K("holder", "beat")
)

// HoldFor is how long a hold lasts unless renewed; it is renewed every fifth
// of it. A host whose renewal has not been confirmed for a third of it stops
// sending commits. That is only the first guard: every commit also expects
// the holder record as this host wrote it, so a host that another one took
// the store from cannot commit, however late its commit arrives.
var HoldFor = 15 * time.Second

// holdRecord is the holder record.
type holdRecord struct {
	ID     string       `cbor:"id"`
	Holder store.Holder `cbor:"holder"`
}

// beatRecord is the beat: the hold of ID lasts until Until (unix ms).
type beatRecord struct {
	ID    string `cbor:"id"`
	Until int64  `cbor:"until"`
}

// ErrHoldLost is a commit refused because this process no longer holds the
// store: its renewals failed, or another host took it.
var ErrHoldLost = errors.New("store: this process's hold on the store lapsed")

// hold is a store's hold, renewed in the background.
type hold struct {
	id   string
	seq  uint64 // the holder record's sequence, which every commit expects
	subj string // the holder record's subject
	mu   sync.Mutex
	good time.Time // when a renewal was last confirmed
	lost bool
	stop chan struct{}
	done chan struct{}
}

// take claims the store for this process: a hold that another process
// renews is a *LockedError naming it.
func (s *jsStore) take(st *store.Store, name string) error {
	h := &hold{id: nuid.Next(), subj: s.keySubject(holderKey), stop: make(chan struct{}), done: make(chan struct{})}
	me := store.ThisProcess()
	now := time.Now()
	err := st.Retry(store.Synced, func(tx *store.Tx) error {
		var r holdRecord
		var b beatRecord
		if _, err := tx.Get(holderKey, &r); err != nil {
			return err
		}
		if _, err := tx.Get(beatKey, &b); err != nil {
			return err
		}
		if r.ID != "" && b.ID == r.ID && b.Until > now.UnixMilli() {
			hr := r.Holder
			return &store.LockedError{Dir: name, Holder: &hr}
		}
		if err := tx.Put(holderKey, holdRecord{ID: h.id, Holder: me}); err != nil {
			return err
		}
		return tx.Put(beatKey, beatRecord{ID: h.id, Until: now.Add(HoldFor).UnixMilli()})
	})
	if err != nil {
		return err
	}
	m, err := s.lastMsg(h.subj)
	if err != nil {
		return err
	}
	var got holdRecord
	if m.Sequence == 0 || store.Decode(holderKey, m.Data, &got) != nil || got.ID != h.id {
		return &store.LockedError{Dir: name, Holder: &got.Holder} // another process took it meanwhile
	}
	h.seq, h.good = m.Sequence, now
	s.hold = h
	go s.renew(st, h)
	return nil
}

// renew keeps the hold until the store closes; a hold found taken is lost
// for good.
func (s *jsStore) renew(st *store.Store, h *hold) {
	defer close(h.done)
	t := time.NewTicker(HoldFor / 5)
	defer t.Stop()
	beat := func(until int64) error {
		return st.Retry(store.Synced, func(tx *store.Tx) error {
			var r holdRecord
			if _, err := tx.Get(holderKey, &r); err != nil {
				return err
			}
			if r.ID != h.id {
				return ErrHoldLost
			}
			return tx.Put(beatKey, beatRecord{ID: h.id, Until: until})
		})
	}
	for {
		select {
		case <-h.stop:
			beat(0) // released: the next host may start at once
			return
		case <-t.C:
		}
		now := time.Now()
		err := beat(now.Add(HoldFor).UnixMilli())
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

// fence is the check message of a commit: the holder record as this host
// wrote it.
func (h *hold) fence(checkSubj string) *nats.Msg {
	m := nats.NewMsg(checkSubj)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(h.seq, 10))
	m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", h.subj)
	return m
}

// taken reports whether another host took the store: its holder record
// moved. A commit refused as a conflict asks it, so that a host fenced out
// stops rather than retrying for ever.
func (s *jsStore) taken(h *hold) bool {
	m, err := s.lastMsg(h.subj)
	if err != nil || m.Sequence == h.seq {
		return false
	}
	h.mu.Lock()
	h.lost = true
	h.mu.Unlock()
	return true
}

// release ends the hold.
func (h *hold) release() {
	close(h.stop)
	<-h.done
}
