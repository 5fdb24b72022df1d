// Package store keeps runehost's durable records in Badger, an embedded
// key-value store. Badger stays inside this package: callers see records
// (Go values encoded as deterministic CBOR), keys built with Key, and
// transactions with a stated durability. The key layout and the durability of
// each record kind are written down in docs/store.md. The package knows
// nothing of the engine above it, of Slack or of the sandbox.
package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/fxamacker/cbor/v2"
)

// Sentinel errors; a *RecordError or *LockedError wraps one of them.
var (
	ErrLocked   = errors.New("store is in use by another process")
	ErrCorrupt  = errors.New("corrupt record")
	ErrConflict = errors.New("transaction conflict")
	ErrTooLarge = errors.New("record too large")
)

// MaxRecord bounds one encoded record.
const MaxRecord = 64 << 20

// Durability says what a committed transaction survives.
type Durability int

const (
	// Buffered survives a crash of the process (the write-ahead log is in
	// the operating system's page cache), not a crash of the machine.
	Buffered Durability = iota
	// Synced survives a crash of the machine too: the commit returns only
	// after the logs are flushed to disk. Attempt and outcome records of
	// acts use it, before an effect is dispatched or consumed.
	Synced
)

// Store is an open store. It is safe for concurrent use.
type Store struct {
	db   *badger.DB
	dir  string
	logs logState // sync.go
}

// Options configure Open.
type Options struct {
	Dir      string // "" means DefaultDir()
	InMemory bool   // for tests: nothing touches the disk
}

// DefaultDir is the embedded default: runehost/store under the user's data
// directory ($XDG_DATA_HOME, or ~/.local/share).
func DefaultDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("store: no data directory: %w (give --store DIR)", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "runehost", "store"), nil
}

// holderFile names the process that has the store open.
const holderFile = "HOLDER"

// Holder describes the process that has a store open.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s (%s), since %s", h.PID, h.Host, h.Command, h.Since.Format(time.RFC3339))
}

// LockedError says who holds a store.
type LockedError struct {
	Dir    string
	Holder *Holder // nil when unknown
}

func (e *LockedError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("store %s is in use by another process", e.Dir)
	}
	return fmt.Sprintf("store %s is in use by %s", e.Dir, e.Holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Open opens (creating if need be) the store in opts.Dir. If another
// process has it open, Open fails at once with a *LockedError naming it:
// Badger's directory lock guarantees one writer, and the holder file says who.
func Open(opts Options) (*Store, error) {
	bo := badger.DefaultOptions(opts.Dir).
		WithLogger(nil).
		WithSyncWrites(false).
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20).
		WithValueLogFileSize(64 << 20).
		// Values over 64 KiB (large checkpoints, replies, arguments) go to the
		// value log, so that a transaction's size, which Badger caps at 15%
		// of a memtable, counts them as pointers.
		WithValueThreshold(64 << 10).
		WithNumVersionsToKeep(1).
		WithNumCompactors(2)
	bo = testOptions(bo)
	if opts.InMemory {
		bo = bo.WithInMemory(true).WithDir("").WithValueDir("").WithValueThreshold(1 << 20) // in memory, a value cannot go to a log
		db, err := badger.Open(bo)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return &Store{db: db}, nil
	}
	if opts.Dir == "" {
		dir, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
		bo = bo.WithDir(dir).WithValueDir(dir)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := removeEmptyLogs(opts.Dir); err != nil {
		return nil, err
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, &LockedError{Dir: opts.Dir, Holder: readHolder(opts.Dir)}
		}
		return nil, fmt.Errorf("store %s: %w", opts.Dir, err)
	}
	s := &Store{db: db, dir: opts.Dir}
	if err := s.writeHolder(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func readHolder(dir string) *Holder {
	b, err := os.ReadFile(filepath.Join(dir, holderFile))
	if err != nil {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

func (s *Store) writeHolder() error {
	host, _ := os.Hostname()
	h := Holder{PID: os.Getpid(), Host: host, Command: command(os.Args), Since: time.Now().UTC().Truncate(time.Second)}
	if len(h.Command) > 200 {
		h.Command = h.Command[:200] + "…"
	}
	b, _ := json.Marshal(h)
	tmp := filepath.Join(s.dir, holderFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, holderFile))
}

// command is a command line up to its first flag: a flag's value may be a
// secret (--bot-token), and the holder file is read by whoever opens next.
func command(args []string) string {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			return strings.Join(args[:i], " ")
		}
	}
	return strings.Join(args, " ")
}

// Dir returns the store's directory ("" in memory).
func (s *Store) Dir() string { return s.dir }

// Close flushes and closes the store. It syncs first: Badger's close writes
// the memtable to a table, which can name values in the value log, before it
// syncs that log, so a crash in between would leave the table naming values
// that never reached the disk.
func (s *Store) Close() error {
	if s.dir != "" {
		os.Remove(filepath.Join(s.dir, holderFile))
		if err := s.sync(); err != nil {
			s.db.Close()
			return fmt.Errorf("store: sync: %w", err)
		}
	}
	return s.db.Close()
}

// Update runs fn in a read-write transaction and commits it with the given
// durability. A conflict with a concurrent transaction returns ErrConflict
// and nothing is written; the caller may retry.
func (s *Store) Update(d Durability, fn func(tx *Tx) error) error {
	err := s.db.Update(func(t *badger.Txn) error { return fn(&Tx{t: t}) })
	if errors.Is(err, badger.ErrConflict) {
		return ErrConflict
	}
	if errors.Is(err, badger.ErrTxnTooBig) || err != nil && strings.HasPrefix(err.Error(), "Value with size") {
		return fmt.Errorf("%w: one transaction's records are too large together (%v)", ErrTooLarge, firstLine(err))
	}
	if err != nil {
		return err
	}
	if d == Synced {
		if err := s.sync(); err != nil {
			return fmt.Errorf("store: sync: %w", err)
		}
	}
	return nil
}

func firstLine(err error) string {
	m, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(m, ". Value:")
}

// Compact reclaims the space of overwritten large records (Badger's value
// log). It is worth running after deleting many records.
func (s *Store) Compact() error {
	for {
		err := s.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: compact: %w", err)
		}
	}
}

// Retry is Update, run again from the start after a conflict until it
// commits: fn must depend only on what it reads in its transaction.
func (s *Store) Retry(d Durability, fn func(tx *Tx) error) error {
	for {
		err := s.Update(d, fn)
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(tx *Tx) error) error {
	return s.db.View(func(t *badger.Txn) error { return fn(&Tx{t: t, readOnly: true}) })
}

// Tx is a transaction.
type Tx struct {
	t        *badger.Txn
	readOnly bool
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

// RecordError says which record could not be read or written.
type RecordError struct {
	Key Key
	Err error // ErrCorrupt or ErrTooLarge
	Msg string
}

func (e *RecordError) Error() string { return fmt.Sprintf("record %s: %v: %s", e.Key, e.Err, e.Msg) }
func (e *RecordError) Unwrap() error { return e.Err }

// Get reads the record at key into v; it reports false when there is none.
// A record that does not decode strictly into v is ErrCorrupt, with its key.
func (tx *Tx) Get(key Key, v any) (bool, error) {
	item, err := tx.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = item.Value(func(b []byte) error {
		if err := recDec.Unmarshal(b, v); err != nil {
			return &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
		}
		return nil
	})
	return err == nil, err
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
	return tx.t.Set(bytes.Clone(key), b)
}

// PutRaw writes bytes that are already an encoded record (a checkpoint).
func (tx *Tx) PutRaw(key Key, b []byte) error {
	if len(b) > MaxRecord {
		return &RecordError{Key: key, Err: ErrTooLarge, Msg: fmt.Sprintf("%d bytes, limit %d", len(b), MaxRecord)}
	}
	return tx.t.Set(bytes.Clone(key), bytes.Clone(b))
}

// GetRaw reads the bytes at key.
func (tx *Tx) GetRaw(key Key) ([]byte, bool, error) {
	item, err := tx.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b, err := item.ValueCopy(nil)
	return b, err == nil, err
}

// Delete removes the record at key.
func (tx *Tx) Delete(key Key) error { return tx.t.Delete(bytes.Clone(key)) }

// Scan calls fn for every record whose key starts with prefix, in key order,
// until fn returns false or an error. decode reads the record into a value.
func (tx *Tx) Scan(prefix Key, fn func(key Key, decode func(v any) error) (bool, error)) error {
	return tx.ScanFrom(prefix, prefix, fn)
}

// ScanFrom is Scan starting at the first key at or after start.
func (tx *Tx) ScanFrom(prefix, start Key, fn func(key Key, decode func(v any) error) (bool, error)) error {
	it := tx.t.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		key := Key(item.KeyCopy(nil))
		decode := func(v any) error {
			return item.Value(func(b []byte) error {
				if err := recDec.Unmarshal(b, v); err != nil {
					return &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
				}
				return nil
			})
		}
		more, err := fn(key, decode)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
