// sync_test.go checks what a sync flushes (the logs that rotated since the
// last one) and that Open clears the empty logs a killed process leaves.

package store

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	if len(again) != 1 || !strings.HasSuffix(again[0], ".mem") {
		t.Fatalf("a sync with nothing rotated or written flushed %v: want only the newest memtable log", again)
	}
}

// A sync flushes the value log when a commit since the last one may have
// written to it (a value from the threshold up, synced or buffered), or a
// collection is under way; otherwise only the memtable's log.
func TestSyncFlushesValueLogWhenWritten(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(d Durability, n int) {
		t.Helper()
		if err := s.Update(d, func(tx *Tx) error { return tx.PutRaw(K("k", n), bytes.Repeat([]byte{'v'}, n)) }); err != nil {
			t.Fatal(err)
		}
	}
	vlogs := func() int {
		s.logs.mu.Lock()
		defer s.logs.mu.Unlock()
		return s.logs.vlogs
	}
	synced := func() bool { // by the commit's own sync, or by one now
		t.Helper()
		if _, err := s.syncLogs(); err != nil {
			t.Fatal(err)
		}
		return vlogs() > 0
	}
	synced() // the first sync lists the logs
	for _, c := range []struct {
		name string
		d    Durability
		size int
		want bool
	}{
		{"small synced", Synced, 100, false},
		{"small buffered", Buffered, 100, false},
		{"large synced", Synced, valueThreshold, true},
		{"large buffered", Buffered, 4 * valueThreshold, true},
		{"nothing", Synced, 0, false},
	} {
		s.logs.mu.Lock()
		s.logs.vlogs = 0
		s.logs.mu.Unlock()
		if c.size > 0 {
			put(c.d, c.size)
		}
		if got := synced(); got != c.want {
			t.Errorf("%s: the value log synced %v, want %v", c.name, got, c.want)
		}
	}
	s.logs.mu.Lock()
	s.logs.vlogs = 0
	s.logs.mu.Unlock()
	s.collecting.Add(1)
	if !synced() {
		t.Error("a sync while a collection rewrites values did not flush the value log")
	}
	s.collecting.Add(-1)
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
