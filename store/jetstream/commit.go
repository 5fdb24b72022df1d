// commit.go holds a JetStream transaction's commit: its reads checked
// and its writes sent as one atomic batch, and what the servers answer.

package jetstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runehost/runehost/store"
)

// pubAck is JetStream's answer to a publish or a batch's commit.
type pubAck struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
	Error     *struct {
		Code    int    `json:"code"`
		ErrCode int    `json:"err_code"`
		Desc    string `json:"description"`
	} `json:"error"`
}

// commit sends the transaction as one atomic batch: a check for every record
// read and not written, then the writes, each expecting the sequence it was
// read at. One stale expectation rejects the whole batch.
func (t *jsTx) Commit(d store.Durability, inReserve bool, size int) error {
	if t.stale {
		return store.ErrConflict
	}
	renewal := false // the hold's own renewal is not gated by it: a stall must not lock the holder out
	if h := t.s.hold; h != nil {
		_, renewal = t.writes[t.s.keySubject(beatKey)]
		if err := h.valid(); err != nil && !renewal {
			return err
		}
	}
	msgs := t.messages()
	if len(msgs) > t.s.maxMsgs {
		return fmt.Errorf("%w: a transaction of %d messages, and JetStream takes at most %d in one batch (the server's max_batch_size)", store.ErrTooLarge, len(msgs), t.s.maxMsgs)
	}
	last := msgs[len(msgs)-1] // a record: its message keeps the id where a reader finds it
	last.Header.Set(nats.MsgIdHdr, t.id)
	sent, lastSeq := 0, uint64(0)
	err := t.s.patient("commit", func() error {
		if h := t.s.hold; h != nil && sent > 0 && !renewal {
			if err := h.valid(); err != nil { // a zombie's commit sent again must not land after another host took over
				return err
			}
		}
		sent++
		t.s.nCommits.Add(1)
		t.s.nMsgs.Add(uint64(len(msgs)))
		var serr error
		lastSeq, serr = t.send(msgs)
		return serr
	})
	var ae *jetstream.APIError
	if err != nil || lastSeq == 0 {
		t.forget() // (a sending stored before this one: where is not known)
	}
	switch {
	case err == nil:
		if lastSeq != 0 {
			t.committed(msgs, lastSeq)
		}
		return nil
	case errors.As(err, &ae) && (ae.ErrorCode == jsWrongLastSeq || ae.ErrorCode == jsBatchSubjectBusy):
		if sent > 1 && t.storedBefore(msgs) {
			return nil // an earlier sending was stored; its answer was lost
		}
		if h := t.s.hold; h != nil && t.s.taken(h) {
			return fmt.Errorf("%w: another host took the store", ErrHoldLost)
		}
		return store.ErrConflict
	case errors.As(err, &ae) && ae.ErrorCode == jsNoSpace:
		return fmt.Errorf("%w: JetStream: %s", store.ErrNoSpace, ae.Description)
	}
	return err
}

// storedBefore reports whether an earlier sending of the batch was stored:
// a record it wrote still carries its transaction's id (every record
// message does, so that one rewritten since does not hide it).
func (t *jsTx) storedBefore(msgs []*nats.Msg) bool {
	for _, m := range msgs {
		if m.Header.Get(hdrTx) != t.id {
			continue
		}
		if last, err := t.s.lastMsg(m.Subject); err == nil && last.Header.Get(hdrTx) == t.id {
			return true
		}
	}
	return false
}

// messages are the batch: checks first (the server refuses a check on a
// subject the batch already wrote), then parts, then records.
func (t *jsTx) messages() []*nats.Msg {
	var msgs []*nats.Msg
	subjects := func(m map[string]*jsRead) []string {
		s := make([]string, 0, len(m))
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return s
	}
	if h := t.s.hold; h != nil {
		_, r := t.reads[h.subj]
		_, w := t.writes[h.subj]
		if !r && !w {
			msgs = append(msgs, h.fence(t.s.checkSubject()))
		}
	}
	for _, subj := range subjects(t.reads) {
		if _, w := t.writes[subj]; w {
			continue
		}
		m := nats.NewMsg(t.s.checkSubject())
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(t.reads[subj].seq, 10))
		m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", subj)
		msgs = append(msgs, m)
	}
	written := make([]string, 0, len(t.writes))
	for subj := range t.writes {
		written = append(written, subj)
	}
	sort.Strings(written)
	var records []*nats.Msg
	for _, subj := range written {
		w := t.writes[subj]
		m := nats.NewMsg(subj)
		m.Header.Set(hdrTx, t.id)
		if r, ok := t.reads[subj]; ok {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(r.seq, 10))
		}
		if w.del {
			m.Header.Set(hdrOp, opDelete)
			m.Header.Set(jetstream.MsgTTLHeader, markerTTL)
		} else if len(w.val) <= t.s.part {
			m.Data = w.val
		} else {
			ver := nuid.Next()
			n := (len(w.val) + t.s.part - 1) / t.s.part
			m.Data = w.val[:t.s.part]
			m.Header.Set(hdrParts, strconv.Itoa(n))
			m.Header.Set(hdrVer, ver)
			for i := 1; i < n; i++ {
				pm := nats.NewMsg(t.s.partSubject(subj, i))
				pm.Data = w.val[i*t.s.part : min((i+1)*t.s.part, len(w.val))]
				pm.Header.Set(hdrVer, ver)
				msgs = append(msgs, pm)
			}
		}
		records = append(records, m)
	}
	return append(msgs, records...)
}

// send publishes msgs: one alone as a plain publish, more as an atomic
// batch. An answer that did not come (a timeout while a leader changes) is
// not a failure: the same messages are sent again, and the message id the
// first carries says whether the first sending was stored.
func (t *jsTx) send(msgs []*nats.Msg) (last uint64, err error) {
	if len(msgs) == 1 {
		ack, err := t.request(msgs[0]) // a duplicate is a sending stored before
		if err != nil || ack.Duplicate {
			return 0, err
		}
		return ack.Seq, nil
	}
	batch := nuid.Next()
	for i, m := range msgs {
		m.Header.Set("Nats-Batch-Id", batch)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := t.s.nc.PublishMsg(m); err != nil {
				return 0, err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		ack, err := t.request(m)
		var ae *jetstream.APIError
		if errors.As(err, &ae) && ae.ErrorCode == jsBatchDuplicateID {
			return 0, nil // stored by an earlier sending
		}
		if err != nil || ack.Duplicate {
			return 0, err
		}
		return ack.Seq, nil
	}
	return 0, nil
}

// request sends m and reads JetStream's answer.
func (t *jsTx) request(m *nats.Msg) (*pubAck, error) {
	r, err := t.s.nc.RequestMsg(m, t.s.timeout)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, jetstream.ErrNoStreamResponse
		}
		return nil, err
	}
	var ack pubAck
	if err := json.Unmarshal(r.Data, &ack); err != nil {
		return nil, fmt.Errorf("store: JetStream's answer to a commit: %w", err)
	}
	if ack.Error != nil {
		return nil, &jetstream.APIError{Code: ack.Error.Code, ErrorCode: jetstream.ErrorCode(ack.Error.ErrCode), Description: ack.Error.Desc}
	}
	return &ack, nil
}
