// tx.go holds a transaction: records read and written as deterministic
// CBOR or raw bytes, scans in key order, and how a record that cannot be
// read is reported (the file that holds it, never a panic).

package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime/debug"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/fxamacker/cbor/v2"
)

// Tx is a transaction.
type Tx struct {
	t        *badger.Txn
	s        *Store
	readOnly bool
	size     int // bytes of keys and values written
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

// unreadable says why an empty value Badger read for a record that has
// one could not be read: Badger reads a value it could not find in its
// value log as empty, with no error, and logs why.
func (tx *Tx) unreadable(key Key) error {
	_, last := tx.s.log.count()
	e := &RecordError{Key: key, Err: ErrCorrupt, Msg: "its value could not be read from the value log: " + last}
	if f := tx.s.log.lastLog(); f != "" && tx.s.dir != "" {
		e.File = filepath.Join(tx.s.dir, f)
	}
	return e
}

// fidRE finds the value log file in Badger's message about a value.
var fidRE = regexp.MustCompile(`Fid:(\d+)`)

// raw reads (a copy of) the value at key.
func (tx *Tx) raw(key Key) (b []byte, found bool, err error) {
	defer tx.s.readFault(key, &err, debug.SetPanicOnFault(true))
	item, err := tx.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b, err = item.ValueCopy(nil)
	if err == nil && len(b) == 0 && item.ValueSize() > 0 {
		err = tx.unreadable(key)
	}
	return b, err == nil, err
}

// Get reads the record at key into v; it reports false when there is none.
// A record that does not decode strictly into v, or cannot be read, is
// ErrCorrupt, with its key.
func (tx *Tx) Get(key Key, v any) (bool, error) {
	b, found, err := tx.raw(key)
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
	return tx.t.Set(bytes.Clone(key), b)
}

// PutRaw writes bytes that are already an encoded record (a checkpoint).
func (tx *Tx) PutRaw(key Key, b []byte) error {
	if len(b) > MaxRecord {
		return &RecordError{Key: key, Err: ErrTooLarge, Msg: fmt.Sprintf("%d bytes, limit %d", len(b), MaxRecord)}
	}
	tx.size += len(key) + len(b)
	tx.s.noteValue(key, len(b))
	return tx.t.Set(bytes.Clone(key), bytes.Clone(b))
}

// GetRaw reads the bytes at key.
func (tx *Tx) GetRaw(key Key) ([]byte, bool, error) { return tx.raw(key) }

// Delete removes the record at key.
func (tx *Tx) Delete(key Key) error {
	tx.size += len(key)
	return tx.t.Delete(bytes.Clone(key))
}

// Scan calls fn for every record whose key starts with prefix, in key order,
// until fn returns false or an error. decode reads the record into a value.
func (tx *Tx) Scan(prefix Key, fn func(key Key, decode func(v any) error) (bool, error)) error {
	return tx.ScanFrom(prefix, prefix, fn)
}

// ScanFrom is Scan starting at the first key at or after start.
func (tx *Tx) ScanFrom(prefix, start Key, fn func(key Key, decode func(v any) error) (bool, error)) error {
	var item *badger.Item
	var key Key
	decode := func(v any) error {
		b, err := tx.itemValue(key, item)
		if err != nil {
			return err
		}
		if err := recDec.Unmarshal(b, v); err != nil {
			return &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
		}
		return nil
	}
	return tx.scan(prefix, start, func(k Key, it *badger.Item) (bool, error) {
		key, item = k, it
		return fn(key, decode)
	})
}

// itemValue reads an item's value, as raw does.
func (tx *Tx) itemValue(key Key, item *badger.Item) (b []byte, err error) {
	defer tx.s.readFault(key, &err, debug.SetPanicOnFault(true))
	b, err = item.ValueCopy(nil)
	if err == nil && len(b) == 0 && item.ValueSize() > 0 {
		err = tx.unreadable(key)
	}
	return b, err
}

// scan walks the items under prefix from start. Badger's own calls are
// guarded; a panic in fn is fn's, and goes on.
func (tx *Tx) scan(prefix, start Key, fn func(key Key, item *badger.Item) (bool, error)) (err error) {
	inFn := false
	defer func() {
		if inFn { // fn's panic, not Badger's: on it goes
			return
		}
		if r := recover(); r != nil {
			err = tx.s.faultErr(start, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	it := tx.t.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		key := Key(item.KeyCopy(nil))
		start = key
		inFn = true
		more, err := fn(key, item)
		inFn = false
		if err != nil || !more {
			return err
		}
	}
	return nil
}
