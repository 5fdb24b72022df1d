// sync_test.go checks what a sync flushes (the logs that rotated since the
// last one) and that Open clears the empty logs a killed process leaves.

package store

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// smallLogs makes value-log files rotate every megabyte, for one test.
func smallLogs(t *testing.T) {
	old := testOptions
	testOptions = func(o badger.Options) badger.Options { return o.WithValueLogFileSize(1 << 20) }
	t.Cleanup(func() { testOptions = old })
}

func TestSyncFlushesRotatedLogs(t *testing.T) {
	smallLogs(t)
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.syncLogs(); err != nil {
		t.Fatal(err)
	}
	first, err := logFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	vlog := first[".vlog"][len(first[".vlog"])-1].name
	big := bytes.Repeat([]byte{'v'}, 100<<10) // over the value threshold: in the value log
	for i := 0; ; i++ {
		if err := s.Update(Buffered, func(tx *Tx) error { return tx.PutRaw(K("cp", "x"), big) }); err != nil {
			t.Fatal(err)
		}
		files, err := logFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		if files[".vlog"][len(files[".vlog"])-1].name != vlog {
			break // it rotated
		}
		if i > 100 {
			t.Fatal("the value log never rotated")
		}
	}
	synced, err := s.syncLogs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(synced, vlog) {
		t.Fatalf("a sync after %s rotated flushed %v, not it", vlog, synced)
	}
	again, err := s.syncLogs()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(again, vlog) || len(again) != 2 {
		t.Fatalf("a sync with nothing rotated flushed %v: want only the newest value log and memtable log", again)
	}
}

func TestOpenClearsEmptyLogs(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(Synced, func(tx *Tx) error { return tx.Put(K("inv", "a"), rec{"a", 1}) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a process killed between creating a log and sizing it leaves.
	for _, name := range []string{"00077.mem", "000077.vlog"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("open after a kill left empty logs: %v", err)
	}
	defer s.Close()
	var r rec
	if err := s.View(func(tx *Tx) error { _, err := tx.Get(K("inv", "a"), &r); return err }); err != nil || r != (rec{"a", 1}) {
		t.Fatalf("got %+v, %v", r, err)
	}
}

// BenchmarkSync compares a Synced commit's flush with Badger's DB.Sync
// alone and with syncLogs (which also lists the directory for rotated logs).
func BenchmarkSync(b *testing.B) {
	for _, c := range []struct {
		name string
		sync func(*Store) error
	}{
		{"badger", func(s *Store) error { return s.db.Sync() }},
		{"logs", func(s *Store) error { _, err := s.syncLogs(); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for b.Loop() {
				if err := s.Update(Buffered, func(tx *Tx) error { return tx.Put(K("inv", "a"), rec{"a", 1}) }); err != nil {
					b.Fatal(err)
				}
				if err := c.sync(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLogFiles is what syncLogs adds to a sync when nothing rotated:
// one listing of the store's directory.
func BenchmarkLogFiles(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if _, err := logFiles(s.dir); err != nil {
			b.Fatal(err)
		}
	}
}
