// compact.go holds how the store gives disk space back: Compact after
// deletions (tables merged, then the value log's garbage collected), the
// same collection on a schedule while a store is written, and the store's
// size on disk.

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	badger "github.com/dgraph-io/badger/v4"
)

// valueThreshold is the size from which a value goes to Badger's value
// log: a transaction counts it as a pointer, so that a checkpoint's new
// chunks (host/cpstore.go: 16 KiB and more) fit in one transaction.
const valueThreshold = 16 << 10

// collectEvery is how many bytes of values written to the value log since
// the last collection make the seal loop collect again: in a steady state
// each such write replaces or is later deleted with as much. It is one
// value-log file: Badger never collects the file being written.
const collectEvery = 64 << 20

// discardRatio is the share of a value-log file that must be garbage for
// Badger to rewrite it.
const discardRatio = 0.5

// flushKey is the record Compact writes and drops at once: dropping a
// prefix is the one call of Badger's that writes its memtables to tables.
var flushKey = K("flush")

// noteValue counts a record written, and its value if it goes to the
// value log.
func (s *Store) noteValue(key Key, n int) {
	s.written.Add(int64(len(key) + n))
	if n >= valueThreshold && s.dir != "" {
		s.logged.Add(int64(n))
	}
}

// Written is the bytes of records (keys and values) this process put in
// the store, in transactions committed or not.
func (s *Store) Written() int64 { return s.written.Load() }

// Size is the bytes the store's files take on disk, as du counts them
// (Badger preallocates its logs as holes: their length says nothing).
func (s *Store) Size() (int64, error) { return DirSize(s.Dir()) }

// Sizes are Badger's own estimates of its tables and value logs (metrics).
func (s *Store) Sizes() (lsm, vlog int64) {
	if s.db == nil {
		return 0, 0 // JetStream keeps no tables or logs here
	}
	return s.db.Size()
}

// DirSize is the bytes the files directly in dir take on disk.
func DirSize(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	var n int64
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			if os.IsNotExist(err) { // a log collected meanwhile
				continue
			}
			return 0, fmt.Errorf("store: %w", err)
		}
		if fi.Mode().IsRegular() {
			n += stampOf(fi).Allocated
		}
	}
	return n, nil
}

// Compact gives back the space of deleted and overwritten records: it
// writes Badger's memtables to tables, merges the tables into one level
// (dropping what was deleted or overwritten, which tells Badger how much
// of each value-log file is garbage) and collects the value-log files at
// least half garbage. It is for a process that has the store to itself,
// after deleting many records (runehost gc): writing the memtables stops
// other writes meanwhile (they fail). The file being written (each open
// starts one) is never collected.
func (s *Store) Compact() error {
	if s.dir == "" {
		return nil
	}
	s.collectMu.Lock()
	defer s.collectMu.Unlock()
	// The tables written below name values in the value log: those must
	// be on disk first, as a synced commit's are.
	if err := s.sync(); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := s.db.Update(func(t *badger.Txn) error { return t.Set(flushKey, nil) }); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := s.db.DropPrefix(flushKey); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := s.db.Flatten(1); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	return s.collectLocked()
}

// collect runs Badger's value-log collection until no file is worth it.
// Badger rewrites a file's live values to the newest file without syncing,
// and then deletes the file: a machine crash could lose the only copy. An
// iterator held open defers the deletion (Badger deletes a file once no
// iterator is open), so the rewritten values are synced first.
func (s *Store) collect() error {
	if s.dir == "" {
		return nil
	}
	s.collectMu.Lock()
	defer s.collectMu.Unlock()
	return s.collectLocked()
}

func (s *Store) collectLocked() error {
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{})
	held := true
	defer func() {
		if held {
			it.Close()
		}
	}()
	rewrote := 0
	s.collecting.Add(1) // every sync meanwhile flushes the value log it rewrites to
	defer s.collecting.Add(-1)
	for {
		err := s.db.RunValueLogGC(discardRatio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			break
		}
		if err != nil {
			if rewrote > 0 { // what was rewritten is on disk before its files may go
				err = errors.Join(err, s.sync())
			}
			return fmt.Errorf("store: collect the value log: %w", err)
		}
		rewrote++
	}
	if rewrote > 0 {
		if err := s.sync(); err != nil {
			return fmt.Errorf("store: collect the value log: %w", err)
		}
	}
	held = false
	it.Close() // the collected files go now
	return nil
}

// collectDue collects the value log if enough was written to it since the
// last collection, or once after the store opened (the seal loop asks
// once a second; Badger's own compactions say what is garbage).
func (s *Store) collectDue() {
	if s.logged.Load() < collectEvery && s.collected.Load() {
		return
	}
	s.collected.Store(true)
	s.logged.Store(0)
	s.collect() // an error here is the next write's, or the next collection's
}
