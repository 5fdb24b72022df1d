// tx.go holds a transaction: records read and written as deterministic
// CBOR or raw bytes, with their sizes and limits, over a backend
// transaction (backend.go) that keeps the bytes.

package store

import (
	"bytes"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Tx is a transaction.
type Tx struct {
	b        BackendTx
	s        *Store
	readOnly bool
	size     int   // bytes of keys and values written
	written  []Key // the keys written, kept only for a check (Store.SetCheck)
	put      []Key // the keys put (not deleted), kept only for Store.SetCommitted's function
	noCheck  bool
}

// NoCheck exempts the transaction from the store's check (SetCheck).
func (tx *Tx) NoCheck() { tx.noCheck = true }

// wrote notes a key written, for the check.
func (tx *Tx) wrote(key Key) {
	if tx.s.check != nil {
		tx.written = append(tx.written, bytes.Clone(key))
	}
}

// wrotePut notes a key put, for the check and for the committed function.
func (tx *Tx) wrotePut(key Key) {
	tx.wrote(key)
	if tx.s.committed == nil {
		return
	}
	under := len(tx.s.committedUnder) == 0
	for _, p := range tx.s.committedUnder {
		under = under || bytes.HasPrefix(key, p)
	}
	if under {
		tx.put = append(tx.put, bytes.Clone(key))
	}
}

var (
	recEnc cbor.EncMode
	recDec cbor.DecMode
)

func init() {
	var err error
	if recEnc, err = cbor.CoreDetEncOptions().EncMode(); err != nil {
		panic(err)
	}
	recDec, err = cbor.DecOptions{
		DupMapKey:   cbor.DupMapKeyEnforcedAPF,
		IndefLength: cbor.IndefLengthForbidden,
		// Records embed data values (an error's data, a result), which
		// nest up to 200 deep (checkpoint.MaxDataDepth) and hold up to
		// 2^20 elements (machine.MaxList): the schema adds a few levels.
		MaxNestedLevels:   256,
		MaxArrayElements:  1 << 22,
		MaxMapPairs:       1 << 22,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		UTF8:              cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic(err)
	}
}

// Get reads the record at key into v; it reports false when there is none.
// A record that does not decode strictly into v, or cannot be read, is
// ErrCorrupt, with its key.
func (tx *Tx) Get(key Key, v any) (bool, error) {
	b, found, err := tx.b.Get(key)
	if !found {
		return false, err
	}
	if err := recDec.Unmarshal(b, v); err != nil {
		return false, &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
	}
	return true, nil
}

// Peek is Get of the record as it stands now, outside what the transaction
// checks: a change to it before the commit is no conflict. It is for a
// record that every transaction reads and few write, where a check would
// make concurrent commits conflict (a JetStream R3 stream refuses a batch
// that checks a subject another batch in flight checks); the caller
// accepts that a write committed just after the peek is not seen. A
// backend whose reads conflict only with writes (Badger) reads as Get.
func (tx *Tx) Peek(key Key, v any) (bool, error) {
	p, ok := tx.b.(interface {
		Peek(Key) ([]byte, bool, error)
	})
	if !ok {
		return tx.Get(key, v)
	}
	b, found, err := p.Peek(key)
	if !found {
		return false, err
	}
	if err := recDec.Unmarshal(b, v); err != nil {
		return false, &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
	}
	return true, nil
}

// Put writes v at key, encoded as deterministic CBOR.
func (tx *Tx) Put(key Key, v any) error {
	b, err := recEnc.Marshal(v)
	if err != nil {
		return fmt.Errorf("record %s: encode: %w", key, err)
	}
	if len(b) > MaxRecord {
		return &RecordError{Key: key, Err: ErrTooLarge, Msg: fmt.Sprintf("%d bytes, limit %d", len(b), MaxRecord)}
	}
	tx.size += len(key) + len(b)
	tx.s.noteValue(key, len(b))
	tx.wrotePut(key)
	return tx.b.Set(key, b)
}

// PutRaw writes bytes that are already an encoded record (a checkpoint).
func (tx *Tx) PutRaw(key Key, b []byte) error {
	if len(b) > MaxRecord {
		return &RecordError{Key: key, Err: ErrTooLarge, Msg: fmt.Sprintf("%d bytes, limit %d", len(b), MaxRecord)}
	}
	tx.size += len(key) + len(b)
	tx.s.noteValue(key, len(b))
	tx.wrotePut(key)
	return tx.b.Set(key, bytes.Clone(b))
}

// GetRaw reads the bytes at key.
func (tx *Tx) GetRaw(key Key) ([]byte, bool, error) { return tx.b.Get(key) }

// Delete removes the record at key.
func (tx *Tx) Delete(key Key) error {
	tx.size += len(key)
	tx.wrote(key)
	return tx.b.Delete(key)
}

// Scan calls fn for every record whose key starts with prefix, in key order,
// until fn returns false or an error. decode reads the record into a value.
func (tx *Tx) Scan(prefix Key, fn func(key Key, decode func(v any) error) (bool, error)) error {
	return tx.ScanFrom(prefix, prefix, fn)
}

// ScanFrom is Scan starting at the first key at or after start.
func (tx *Tx) ScanFrom(prefix, start Key, fn func(key Key, decode func(v any) error) (bool, error)) error {
	var key Key
	var val func() ([]byte, error)
	decode := func(v any) error { // one closure for the whole scan
		b, err := val()
		if err != nil {
			return err
		}
		if err := recDec.Unmarshal(b, v); err != nil {
			return &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
		}
		return nil
	}
	return tx.b.Scan(prefix, start, func(k Key, v func() ([]byte, error)) (bool, error) {
		key, val = k, v
		return fn(key, decode)
	})
}
