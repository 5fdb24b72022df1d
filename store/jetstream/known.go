// known.go holds what a JetStream store's update transactions read and
// committed, by subject, at the sequence of its message, so that the next
// transaction reads it from memory instead of asking the servers.

package jetstream

import (
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/runehost/runehost/store"
)

// known is the records a process read and wrote. It is safe because every
// read of an update transaction is checked when it commits (the batch
// expects each record at the sequence read): an entry another host has
// overwritten since makes the commit conflict, the transaction's entries
// are dropped, and Retry runs it again on what the servers hold. A
// transaction that commits nothing checks the entries it used before it
// returns (settle). Views never use it: a View's read is not checked.
type known struct {
	mu    sync.Mutex
	m     map[string]*jsRead
	bytes int
}

// knownMax bounds what a process keeps: past it, everything is dropped
// (the records in use come back at their next read).
const (
	knownMaxRecords = 1 << 16
	knownMaxBytes   = 32 << 20
)

func (k *known) get(subj string) (*jsRead, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.m[subj]
	return r, ok
}

// put keeps r, a record of one message (a value in parts is not kept).
func (k *known) put(subj string, r *jsRead) {
	if r.parts > 1 || r.parts < 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= knownMaxRecords || k.bytes+len(r.val) > knownMaxBytes {
		k.m, k.bytes = map[string]*jsRead{}, 0
	}
	if old, ok := k.m[subj]; ok {
		k.bytes -= len(old.val)
	}
	k.m[subj] = r
	k.bytes += len(r.val)
}

func (k *known) drop(subjects ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range subjects {
		if old, ok := k.m[s]; ok {
			k.bytes -= len(old.val)
			delete(k.m, s)
		}
	}
}

// forget drops what t read and wrote: it conflicted, or how its commit
// ended is not known.
func (t *jsTx) forget() {
	subjects := make([]string, 0, len(t.reads)+len(t.writes))
	for s := range t.reads {
		subjects = append(subjects, s)
	}
	for s := range t.writes {
		subjects = append(subjects, s)
	}
	t.s.known.drop(subjects...)
}

// committed keeps what t wrote, at the sequences its messages were stored
// at: an atomic batch is stored as one, its messages at consecutive
// sequences ending at last (the commit's answer). Were a sequence wrong,
// the next commit that read the record would conflict: never a lost write.
func (t *jsTx) committed(msgs []*nats.Msg, last uint64) {
	if last < uint64(len(msgs)) {
		t.forget()
		return
	}
	first := last - uint64(len(msgs)) + 1
	recordPrefix := t.s.prefix + ".k."
	for i, m := range msgs {
		if !strings.HasPrefix(m.Subject, recordPrefix) {
			continue
		}
		if m.Header.Get(hdrParts) != "" {
			t.s.known.drop(m.Subject)
			continue
		}
		r := &jsRead{seq: first + uint64(i), parts: 1}
		if m.Header.Get(hdrOp) == "" {
			r.found, r.val = true, m.Data
		} else {
			r.parts = 0
		}
		t.s.known.put(m.Subject, r)
	}
}

// settle ends an update transaction that wrote nothing: what it read from
// known is checked against the servers, and a stale record is a conflict
// (its entries dropped), so that Retry runs it again.
func (t *jsTx) Settle() error {
	if !t.usedKnown {
		return nil
	}
	ok, err := t.Unchanged()
	if err != nil {
		return err
	}
	if !ok {
		t.forget()
		return store.ErrConflict
	}
	return nil
}
