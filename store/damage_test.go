// damage_test.go damages real store files (truncated, flipped, deleted,
// replaced) and checks that each is an error naming the file, never a
// panic, never a store that opens smaller, and that nothing was changed.

package store

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sessions makes a store on disk of n closed sessions, each adding
// records: every close flushes a table, so the store has n tables.
func sessions(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		s, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 50 {
			if err := s.Update(Synced, func(tx *Tx) error { return tx.Put(K("inv", uint64(i*100+j)), rec{"r", uint64(j)}) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot is a directory's files and their contents.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); n != lockName && n != holderFile {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			out[n] = b
		}
	}
	return out
}

func names(m map[string][]byte) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func tables(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	slices.Sort(m)
	if len(m) < 3 {
		t.Fatalf("want at least 3 tables, have %v", m)
	}
	return m
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// countRecords opens dir and counts the records under inv.
func countRecords(t *testing.T, dir string) int {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	n := 0
	s.View(func(tx *Tx) error {
		return tx.Scan(K("inv"), func(Key, func(any) error) (bool, error) { n++; return true, nil })
	})
	return n
}

// Each kind of damage to a closed store: Open fails with ErrDamaged naming
// the damaged file, the files are left exactly as they were, and (for the
// damage Badger would act on) it would have lost or deleted data.
func TestDamagedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the file the error must name
	}{
		{"truncated table", func(t *testing.T, dir string) string {
			p := tables(t, dir)[0]
			os.Truncate(p, 500)
			return filepath.Base(p)
		}},
		{"table cut to its index", func(t *testing.T, dir string) string {
			p := tables(t, dir)[1]
			fi, _ := os.Stat(p)
			os.Truncate(p, fi.Size()-3)
			return filepath.Base(p)
		}},
		{"flipped byte in a table's first block", func(t *testing.T, dir string) string {
			p := tables(t, dir)[1]
			flip(t, p, 100)
			return filepath.Base(p)
		}},
		{"flipped byte in a table's index", func(t *testing.T, dir string) string {
			p := tables(t, dir)[2]
			flip(t, p, -60)
			return filepath.Base(p)
		}},
		{"deleted table", func(t *testing.T, dir string) string {
			p := tables(t, dir)[1]
			os.Remove(p)
			return filepath.Base(p)
		}},
		{"truncated MANIFEST", func(t *testing.T, dir string) string {
			os.Truncate(filepath.Join(dir, "MANIFEST"), 50)
			return "MANIFEST"
		}},
		{"MANIFEST cut by one change", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "MANIFEST")
			fi, _ := os.Stat(p)
			os.Truncate(p, fi.Size()-1)
			return "MANIFEST"
		}},
		{"deleted MANIFEST", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, "MANIFEST"))
			return "MANIFEST"
		}},
		{"MANIFEST of another store", func(t *testing.T, dir string) string {
			other := sessions(t, 4)
			b, _ := os.ReadFile(filepath.Join(other, "MANIFEST"))
			os.WriteFile(filepath.Join(dir, "MANIFEST"), b, 0o600)
			return "MANIFEST"
		}},
		{"corrupt seal", func(t *testing.T, dir string) string {
			flip(t, filepath.Join(dir, sealFile), 20)
			return sealFile
		}},
		{"deleted seal", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, sealFile))
			return sealFile
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sessions(t, 3)
			file := tc.damage(t, dir)
			before := snapshot(t, dir)
			_, err := Open(Options{Dir: dir})
			var re *RecordError
			if !errors.Is(err, ErrDamaged) || !errors.As(err, &re) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "store verify") {
				t.Fatalf("got %v, want ErrDamaged naming %s", err, file)
			}
			after := snapshot(t, dir)
			if tc.name == "deleted seal" {
				return // found only once Badger has opened the store: its logs may be rotated, nothing is lost
			}
			if !slices.Equal(names(before), names(after)) {
				t.Fatalf("files changed: %v, now %v", names(before), names(after))
			}
			for n, b := range before {
				if !bytes.Equal(b, after[n]) {
					t.Fatalf("%s changed", n)
				}
			}
			problems, err := CheckFiles(dir)
			if err != nil || len(problems) == 0 || !strings.Contains(problems[0].Error(), file) {
				t.Fatalf("CheckFiles: %v %v", problems, err)
			}
		})
	}
}

// A sound store, reopened many times, is never found damaged, and keeps
// every record.
func TestSoundStoreOpens(t *testing.T) {
	dir := sessions(t, 4)
	for range 3 {
		if n := countRecords(t, dir); n != 200 {
			t.Fatalf("%d of 200 records", n)
		}
	}
	if p, err := CheckFiles(dir); err != nil || len(p) != 0 {
		t.Fatalf("CheckFiles: %v %v", p, err)
	}
}

// Accepting the damage opens the store again, sealed as it is, and it
// goes on opening.
func TestAcceptDamage(t *testing.T) {
	dir := sessions(t, 3)
	os.Truncate(filepath.Join(dir, "MANIFEST"), 50)
	s, err := Open(Options{Dir: dir, AcceptDamage: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := countRecords(t, dir); n >= 150 {
		t.Fatalf("%d records: the truncated MANIFEST lost none?", n)
	}
	dir = sessions(t, 3)
	flip(t, tables(t, dir)[1], 100)
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("damaged table: %v", err)
	}
	s, err = Open(Options{Dir: dir, AcceptDamage: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	countRecords(t, dir) // opens
	countRecords(t, dir)
}

// A value in the value log that cannot be read (its log truncated, or a
// byte of it flipped) is ErrCorrupt naming the record and the log, not an
// empty value.
func TestValueLogDamage(t *testing.T) {
	for _, damage := range []string{"truncate", "flip"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			big := bytes.Repeat([]byte{0x42}, 200<<10)
			s.Update(Synced, func(tx *Tx) error { return tx.PutRaw(K("cp", "r1"), big) })
			s.Update(Synced, func(tx *Tx) error { return tx.Put(K("inv", "r2"), rec{"r2", 2}) })
			s.Close()
			logs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
			var vlog string
			for _, l := range logs {
				if fi, _ := os.Stat(l); fi.Size() > 100<<10 {
					vlog = l
				}
			}
			if vlog == "" {
				t.Fatalf("no value log holds the value: %v", logs)
			}
			if damage == "truncate" {
				os.Truncate(vlog, 1000)
			} else {
				flip(t, vlog, 150<<10)
			}
			s, err = Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.View(func(tx *Tx) error {
				b, _, err := tx.GetRaw(K("cp", "r1"))
				if err == nil && !bytes.Equal(b, big) {
					t.Fatalf("read %d bytes of garbage, no error", len(b))
				}
				return err
			})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cp/r1") {
				t.Fatalf("got %v", err)
			}
			if damage == "flip" && !strings.Contains(err.Error(), filepath.Base(vlog)) {
				t.Fatalf("%v does not name %s", err, filepath.Base(vlog))
			}
			var r rec
			if err := s.View(func(tx *Tx) error { _, err := tx.Get(K("inv", "r2"), &r); return err }); err != nil || r.N != 2 {
				t.Fatalf("the other record: %+v %v", r, err)
			}
		})
	}
}

// Synced writes lost from the write-ahead log after a crash (a damaged
// .mem file) are found: the seal recorded a newer synced commit.
func TestLostSyncedWrites(t *testing.T) {
	if dir := os.Getenv("STORE_LOST_CHILD"); dir != "" {
		s, err := Open(Options{Dir: dir})
		if err != nil {
			os.Exit(3)
		}
		for i := range 200 {
			s.Update(Synced, func(tx *Tx) error { return tx.Put(K("att", uint64(i)), rec{N: uint64(i)}) })
			time.Sleep(markEvery / 20) // over a second: several commits carry the mark
		}
		time.Sleep(3 * sealEvery) // the seal records them
		os.Stdout.WriteString("written\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	run := func(dir string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLostSyncedWrites$")
		cmd.Env = append(os.Environ(), "STORE_LOST_CHILD="+dir)
		if out, _ := cmd.Output(); !strings.Contains(string(out), "written") {
			t.Fatalf("child did not write: %q", out)
		}
	}
	// Undamaged, the crashed store opens with every write.
	dir := t.TempDir()
	run(dir)
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("a crashed, undamaged store: %v", err)
	}
	s.Close()
	dir = t.TempDir()
	run(dir)
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	if len(mems) == 0 {
		t.Fatal("no write-ahead log")
	}
	os.Truncate(mems[0], 8<<10)
	_, err = Open(Options{Dir: dir})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "synced writes were lost") {
		t.Fatalf("got %v", err)
	}
}

// Badger's panics while reading are errors naming the record; a panic of
// the caller's own function is the caller's.
func TestScanPanicIsCallers(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Update(Buffered, func(tx *Tx) error { return tx.Put(K("inv", "a"), rec{}) })
	defer func() {
		if r := recover(); r != "mine" {
			t.Fatalf("recovered %v, want the caller's panic", r)
		}
	}()
	s.View(func(tx *Tx) error {
		return tx.Scan(K("inv"), func(Key, func(any) error) (bool, error) { panic("mine") })
	})
}

// A table the MANIFEST lists that Badger did not open (it skips some it
// cannot read) is damage, found once Badger is open.
func TestTableBadgerSkipped(t *testing.T) {
	dir := sessions(t, 1)
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	files, err := readFiles(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	files.manifest.tables[999] = files.manifest.tables[1]
	err = s.afterOpen(files, nil)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tableName(999)) {
		t.Fatalf("got %v", err)
	}
}

// A table cut short under an open store (a fault on its mapping) is an
// error of the reads that meet it, naming the record and the table, and
// the process lives.
func TestTableTruncatedWhileOpen(t *testing.T) {
	dir := sessions(t, 3)
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range tables(t, dir) {
		os.Truncate(p, 0)
	}
	var errs []error
	for i := range 3 {
		s.View(func(tx *Tx) error {
			var r rec
			_, err := tx.Get(K("inv", uint64(i*100+7)), &r)
			errs = append(errs, err)
			err = tx.Scan(K("inv"), func(Key, func(any) error) (bool, error) { return true, nil })
			errs = append(errs, err)
			return nil
		})
	}
	for _, err := range errs {
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "Badger failed reading it") || !strings.Contains(err.Error(), ".sst") {
			t.Fatalf("got %v", err)
		}
	}
}
