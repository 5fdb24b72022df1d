// backend.go holds the JetStream backend: a stream whose subjects are the
// keys, transactions as optimistic concurrency over it, committed as one
// atomic batch (docs/store.md, "Many hosts on JetStream").

package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runehost/runehost/store"
)

// JetStream's error codes the backend acts on.
const (
	jsWrongLastSeq     = 10071 // an expectation is stale: a conflict
	jsBatchSubjectBusy = 10164 // a subject written twice, or in flight on R3: a conflict
	jsBatchDuplicateID = 10201 // the batch's message id was stored: it committed before
	jsNoSpace          = 10047 // insufficient resources
	jsStreamNotFound   = 10059
	jsTooManyBatches   = 10210 // too many open batches: wait and send again
)

// Headers the backend writes beside the standard ones.
const (
	hdrParts = "Rh-Parts" // on a record cut into parts: how many
	hdrVer   = "Rh-Ver"   // one id shared by a record's message and its parts
	hdrTx    = "Rh-Tx"    // the transaction that wrote a record
	hdrOp    = "KV-Operation"
	opDelete = "DEL"
)

// markerTTL is how long a deleted record's marker stays: far longer than any
// transaction, so that "absent" keeps the sequence a reader expects, and
// short enough that deleted keys do not pile up in the stream's index.
const markerTTL = "1h"

// jsStore is the JetStream backend.
type jsStore struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	st      jetstream.Stream
	stream  string // the stream's name
	prefix  string // of every subject: prefix.k.<key> (records), prefix.p.<key>.<n> (parts), prefix.c (checks)
	part    int    // bytes of a record's value a message holds
	maxMsgs int    // messages an atomic batch may hold
	timeout time.Duration
	wait    time.Duration // how long an operation keeps trying through a leader change
	node    *Node         // the embedded server, or nil
	hold    *hold         // this process's hold on the store (hold.go); nil while it is taken
	shared  bool          // opened Shared: no hold

	nReads, nScans, nCommits, nMsgs atomic.Uint64 // requests made (Trips)
	hurry                           atomic.Int64  // unix ns after which no operation keeps trying (Hurry); 0 for none
	known                           known         // records update transactions read and wrote (known.go)
}

// Trips counts the requests made to the servers so far.
func (s *jsStore) Trips() store.Trips {
	return store.Trips{Reads: s.nReads.Load(), Scans: s.nScans.Load(), Commits: s.nCommits.Load(), Messages: s.nMsgs.Load()}
}

// jsRead is a record as a transaction read it: its sequence (0 when the
// subject never held a message) and its value.
type jsRead struct {
	seq   uint64
	val   []byte
	found bool
	parts int // messages the value took
}

// jsWrite is a buffered write: a value or a delete.
type jsWrite struct {
	key store.Key
	val []byte
	del bool
}

// jsScan is a scan a View made, to check again once it ended.
type jsScan struct {
	filters []string
	prefix  store.Key
	start   store.Key
	last    store.Key // the last key visited; nil if none
	done    bool
	seen    map[string]uint64 // subject → sequence of every key visited
}

// jsTx is a JetStream transaction.
type jsTx struct {
	s      *jsStore
	update bool
	id     string // the batch's message id: a commit sent twice is stored once
	reads  map[string]*jsRead
	writes map[string]*jsWrite
	scans  []*jsScan
	stale  bool // a read found what another commit changed meanwhile

	usedKnown bool // a read came from the store's known records, unchecked until the commit
}

// Hurry makes every operation still trying after by give up then.
func (s *jsStore) Hurry(by time.Time) { s.hurry.Store(by.UnixNano()) }

// Shared reports whether the store was opened beside other hosts.
func (s *jsStore) Shared() bool { return s.shared }

// Close releases the hold, if any, and disconnects.
func (s *jsStore) Close() error {
	if s.hold != nil {
		s.hold.release()
	}
	s.nc.Close()
	if s.node != nil {
		s.node.Shutdown()
	}
	return nil
}

// Begin starts a transaction.
func (s *jsStore) Begin(update bool) (store.BackendTx, error) {
	if s.nc.IsClosed() {
		return nil, errClosed
	}
	return &jsTx{s: s, update: update, id: nuid.Next(), reads: map[string]*jsRead{}, writes: map[string]*jsWrite{}}, nil
}

// errClosed is a transaction begun on a closed store.
var errClosed = errors.New("store: closed")

func (s *jsStore) keySubject(k store.Key) string {
	t, partial := keyTokens(k)
	if len(partial) > 0 || t == "" {
		panic("store: a record key not ended by its separator: " + k.String())
	}
	return s.prefix + ".k." + t
}

func (s *jsStore) partSubject(subj string, n int) string {
	return s.prefix + ".p." + strings.TrimPrefix(subj, s.prefix+".k.") + "." + strconv.Itoa(n)
}

func (s *jsStore) checkSubject() string { return s.prefix + ".c" }

func (s *jsStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// patient runs op again while the cluster cannot answer (a leader being
// elected, a node restarting), for up to s.wait.
func (s *jsStore) patient(what string, op func() error) error {
	start := time.Now()
	deadline := start.Add(s.wait)
	if h := s.hurry.Load(); h != 0 && h < deadline.UnixNano() {
		deadline = time.Unix(0, h)
	}
	pause := 20 * time.Millisecond
	for {
		err := op()
		if err == nil || !transient(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("store: %s: JetStream did not answer for %s: %w", what, time.Since(start).Round(time.Millisecond), err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// transient reports errors that a later attempt may not meet.
func transient(err error) bool {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode {
		case jsTooManyBatches, jetstream.JSErrCodeJetStreamNotEnabled, 10158, // a resent message id still in process

			10005, 10008, 10009, 10118: // no peers yet, no cluster, no leader, stream offline: elections
			return true
		}
		return ae.Code == 503
	}
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// load reads a record's message (and its parts) as it stands.
func (s *jsStore) load(subj string, k store.Key) (*jsRead, error) {
	m, err := s.lastMsg(subj)
	if err != nil {
		return nil, err
	}
	r := &jsRead{seq: m.Sequence}
	if m.Sequence == 0 {
		return r, nil // never written
	}
	if m.Header.Get(hdrOp) != "" {
		return r, nil
	}
	r.found, r.val, r.parts = true, m.Data, 1
	if p := m.Header.Get(hdrParts); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 2 || n > store.MaxRecord/s.part+2 {
			return nil, &store.RecordError{Key: k, Err: store.ErrCorrupt, Msg: fmt.Sprintf("its message says it has %q parts", p)}
		}
		ver := m.Header.Get(hdrVer)
		val := slices.Clone(m.Data)
		for i := 1; i < n; i++ {
			pm, err := s.lastMsg(s.partSubject(subj, i))
			if err != nil {
				return nil, err
			}
			if pm.Header.Get(hdrVer) != ver {
				return nil, errStale // rewritten while read: the part belongs to another version
			}
			val = append(val, pm.Data...)
		}
		r.val, r.parts = val, n
	}
	return r, nil
}

// errStale is a read that raced a commit: the transaction conflicts.
var errStale = fmt.Errorf("%w: a record changed while it was read", store.ErrConflict)

// read is a record as this transaction sees it: its own writes, else what it
// read before, else the record as it stands (remembered).
func (t *jsTx) read(k store.Key) (*jsRead, error) {
	subj := t.s.keySubject(k)
	if w, ok := t.writes[subj]; ok {
		return &jsRead{val: w.val, found: !w.del}, nil
	}
	seen, ok := t.reads[subj]
	if ok && seen.parts >= 0 {
		return seen, nil
	}
	if t.update && !ok {
		if r, hit := t.s.known.get(subj); hit {
			t.reads[subj], t.usedKnown = r, true
			return r, nil
		}
	}
	if ok {
		// Listed by a scan at a sequence: a message kept at that very
		// sequence is its value (a sequence is never reused), in a View too.
		if r, hit := t.s.known.get(subj); hit && r.seq == seen.seq {
			t.reads[subj] = r
			return r, nil
		}
	}
	r, err := t.s.load(subj, k)
	if err == nil && ok && r.seq != seen.seq {
		err = errStale // a scan listed it at another sequence
	}
	if errors.Is(err, errStale) {
		t.stale = true
	}
	if err != nil {
		return nil, err
	}
	t.reads[subj] = r
	if t.update {
		t.s.known.put(subj, r)
	}
	return r, nil
}

func (t *jsTx) Get(k store.Key) ([]byte, bool, error) {
	r, err := t.read(k)
	if err != nil || !r.found {
		return nil, false, err
	}
	return slices.Clone(r.val), true, nil
}

// peek reads k from the servers, outside t's reads: not checked at the
// commit, not kept (Tx.Peek). t's own write of k is what it reads.
func (t *jsTx) Peek(k store.Key) ([]byte, bool, error) {
	subj := t.s.keySubject(k)
	if w, ok := t.writes[subj]; ok {
		return slices.Clone(w.val), !w.del, nil
	}
	r, err := t.s.load(subj, k)
	if err != nil || !r.found {
		return nil, false, err
	}
	return slices.Clone(r.val), true, nil
}

func (t *jsTx) Set(k store.Key, val []byte) error {
	t.writes[t.s.keySubject(k)] = &jsWrite{key: slices.Clone(k), val: val}
	return nil
}

func (t *jsTx) Delete(k store.Key) error {
	t.writes[t.s.keySubject(k)] = &jsWrite{key: slices.Clone(k), del: true}
	return nil
}

// listed is a key a scan found, with its subject and sequence.
type listed struct {
	key  store.Key
	subj string
	seq  uint64
}

// filters are the subject filters that hold every key under prefix.
func (s *jsStore) filters(prefix store.Key) []string {
	t, partial := keyTokens(prefix)
	if t == "" {
		return []string{s.prefix + ".k.>"}
	}
	base := s.prefix + ".k." + t
	if len(partial) > 0 {
		return []string{base + ".>"}
	}
	return []string{base, base + ".>"}
}

// list finds the records under the filters as they stand, with the sequence
// of each: an ephemeral consumer that delivers the last message of every
// subject, headers only.
func (s *jsStore) list(filters []string, prefix store.Key) (map[string]listed, error) {
	out := map[string]listed{}
	err := s.patient("scan "+prefix.String(), func() error {
		clear(out)
		s.nScans.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		c, err := s.st.CreateConsumer(ctx, jetstream.ConsumerConfig{
			DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
			AckPolicy:         jetstream.AckNonePolicy,
			FilterSubjects:    filters,
			HeadersOnly:       true,
			MemoryStorage:     true,
			InactiveThreshold: time.Minute,
		})
		if err != nil {
			return err
		}
		defer func() {
			dctx, dcancel := s.ctx()
			s.st.DeleteConsumer(dctx, c.CachedInfo().Name)
			dcancel()
		}()
		pending := c.CachedInfo().NumPending
		for got := 0; pending > 0; {
			if got > 8*int(c.CachedInfo().NumPending)+10000 {
				return fmt.Errorf("%w: the records under %s kept changing while scanned", store.ErrConflict, prefix)
			}
			b, err := c.Fetch(int(min(pending, 1000)), jetstream.FetchMaxWait(s.timeout))
			if err != nil {
				return err
			}
			n := 0
			for m := range b.Messages() {
				n++
				got++
				md, err := m.Metadata()
				if err != nil {
					return err
				}
				pending = md.NumPending
				if old, ok := out[m.Subject()]; ok && old.seq > md.Sequence.Stream {
					continue
				}
				if m.Headers().Get(hdrOp) != "" {
					out[m.Subject()] = listed{subj: m.Subject(), seq: md.Sequence.Stream} // deleted: kept to overwrite an older find, dropped below
					continue
				}
				k, err := subjectKey(strings.TrimPrefix(m.Subject(), s.prefix+".k."))
				if err != nil {
					return &store.RecordError{Err: store.ErrCorrupt, Msg: fmt.Sprintf("subject %s: %v", m.Subject(), err)}
				}
				out[m.Subject()] = listed{key: k, subj: m.Subject(), seq: md.Sequence.Stream}
			}
			if err := b.Error(); err != nil {
				return err
			}
			if n == 0 {
				return nats.ErrTimeout
			}
		}
		return nil
	})
	maps := out
	for subj, l := range maps {
		if l.key == nil || !bytes.HasPrefix(l.key, prefix) {
			delete(maps, subj)
		}
	}
	return maps, err
}

// scan walks the records under prefix from start in key order: those the
// store holds, overlaid with the transaction's own writes. Every key visited
// is a read of the transaction, checked at its commit.
func (t *jsTx) Scan(prefix, start store.Key, fn func(key store.Key, val func() ([]byte, error)) (bool, error)) error {
	filters := t.s.filters(prefix)
	found, err := t.s.list(filters, prefix)
	if err != nil {
		return err
	}
	keys := make([]listed, 0, len(found))
	for subj, l := range found {
		if _, ok := t.writes[subj]; !ok {
			keys = append(keys, l)
		}
	}
	for subj, w := range t.writes {
		if !w.del && bytes.HasPrefix(w.key, prefix) {
			keys = append(keys, listed{key: w.key, subj: subj})
		}
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i].key, keys[j].key) < 0 })
	sc := &jsScan{filters: filters, prefix: slices.Clone(prefix), start: slices.Clone(start), seen: map[string]uint64{}}
	if !t.update {
		t.scans = append(t.scans, sc)
	}
	var cur listed
	val := func() ([]byte, error) {
		if w, ok := t.writes[cur.subj]; ok {
			return slices.Clone(w.val), nil
		}
		r, err := t.read(cur.key)
		if err != nil {
			return nil, err
		}
		if !r.found {
			t.stale = true
			return nil, errStale
		}
		return slices.Clone(r.val), nil
	}
	for _, l := range keys {
		if bytes.Compare(l.key, start) < 0 {
			continue
		}
		if _, own := t.writes[l.subj]; !own {
			if r, ok := t.reads[l.subj]; ok && r.seq != l.seq {
				t.stale = true // read before at another sequence
			} else if !ok {
				t.reads[l.subj] = &jsRead{seq: l.seq, found: true, parts: -1} // value not yet read
			}
			sc.seen[l.subj] = l.seq
		}
		sc.last = l.key
		cur = l
		more, err := fn(l.key, val)
		if err != nil || !more {
			return err
		}
	}
	sc.done = true
	return nil
}

// unchanged reports whether everything a transaction read still stands:
// every record at the sequence read, every scan finding the same keys.
func (t *jsTx) Unchanged() (bool, error) {
	if t.stale {
		return false, nil
	}
	if len(t.reads) <= 1 && len(t.scans) == 0 && !t.usedKnown {
		return true, nil // one read is one moment
	}
	// The scans first: a key a scan lists again at the sequence read needs
	// no read of its own (a View over a run's log reads each event once).
	listed := map[string]uint64{}
	for _, sc := range t.scans {
		found, err := t.s.list(sc.filters, sc.prefix)
		if errors.Is(err, store.ErrConflict) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		n := 0
		for subj, l := range found {
			if bytes.Compare(l.key, sc.start) < 0 || !sc.done && bytes.Compare(l.key, sc.last) > 0 {
				continue
			}
			if seq, ok := sc.seen[subj]; !ok || seq != l.seq {
				return false, nil
			}
			listed[subj] = l.seq
			n++
		}
		if n != len(sc.seen) {
			return false, nil
		}
	}
	for subj, r := range t.reads {
		if seq, ok := listed[subj]; ok && seq == r.seq {
			continue
		}
		k, err := subjectKey(strings.TrimPrefix(subj, t.s.prefix+".k."))
		if err != nil {
			return false, err
		}
		now, err := t.s.load(subj, k)
		if errors.Is(err, errStale) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if now.seq != r.seq {
			return false, nil
		}
	}
	return true, nil
}

// abort maps a failed transaction's error: one whose reads raced a commit is
// a conflict, whatever its function made of what it saw.
func (t *jsTx) Abort(err error) error {
	if errors.Is(err, store.ErrConflict) {
		t.forget()
		return store.ErrConflict
	}
	if ok, verr := t.Unchanged(); verr == nil && !ok {
		t.forget()
		return store.ErrConflict
	}
	return err
}

func (t *jsTx) Discard() {}

// lastMsg reads the last message of subj (a zero one when it has none).
func (s *jsStore) lastMsg(subj string) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	err := s.patient("read "+subj, func() error {
		ctx, cancel := s.ctx()
		defer cancel()
		var err error
		s.nReads.Add(1)
		m, err = s.st.GetLastMsgForSubject(ctx, subj)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return &jetstream.RawStreamMsg{Header: nats.Header{}}, nil
	}
	return m, err
}
