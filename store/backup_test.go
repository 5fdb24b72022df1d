// backup_test.go checks backups: a round trip equal record for record
// (large values included) taken while writes go on, and restores refused
// over a live store or from a damaged backup file.

package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// all returns every record of a store, its own mark included.
func all(t *testing.T, s *Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := s.View(func(tx *Tx) error {
		return tx.Scan(Key{}, func(k Key, _ func(any) error) (bool, error) {
			b, _, err := tx.GetRaw(k)
			out[string(k)] = b
			return true, err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBackupRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		v := bytes.Repeat([]byte{byte(i)}, 10+i*(i%7)*40) // some over 64 KiB: in the value log
		s.Update(Synced, func(tx *Tx) error { return tx.PutRaw(K("cp", uint64(i)), v) })
	}
	s.Update(Synced, func(tx *Tx) error { return tx.Delete(K("cp", uint64(5))) })
	want := all(t, s)
	// Writes go on during the backup; the snapshot is of one moment.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s.Update(Buffered, func(tx *Tx) error { return tx.Put(K("ev", uint64(i)), rec{N: uint64(i)}) })
		}
	}()
	file := filepath.Join(t.TempDir(), "b")
	info, err := s.Backup(file)
	close(stop)
	wg.Wait()
	if err != nil || info.Bytes == 0 {
		t.Fatalf("backup: %+v %v", info, err)
	}
	s.Close()

	into := filepath.Join(t.TempDir(), "restored")
	if err := Restore(Options{Dir: into}, file); err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{Dir: into})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := all(t, r)
	for k := range got {
		if strings.HasPrefix(k, "ev\x00") {
			delete(got, k) // written during the backup: in it or not, as of its moment
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d records restored, %d backed up", len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("record %s: %d bytes restored, %d backed up", Key(k), len(got[k]), len(v))
		}
	}
	// It goes on as a store: new writes land after the restored ones.
	if err := r.Update(Synced, func(tx *Tx) error { return tx.Put(K("inv", "new"), rec{N: 1}) }); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRefuses(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.Update(Synced, func(tx *Tx) error { return tx.Put(K("inv", "a"), rec{N: 1}) })
	file := filepath.Join(t.TempDir(), "b")
	if _, err := s.Backup(file); err != nil {
		t.Fatal(err)
	}
	// Over the live store, and over any store.
	if err := Restore(Options{Dir: dir}, file); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("over a live store: %v", err)
	}
	s.Close()
	if err := Restore(Options{Dir: dir}, file); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("over a store: %v", err)
	}
	good, _ := os.ReadFile(file)
	for name, bad := range map[string][]byte{
		"truncated":       good[:len(good)-10],
		"cut in the body": append(append([]byte{}, good[:40]...), good[len(good)-trailerSize:]...),
		"flipped":         func() []byte { b := bytes.Clone(good); b[len(backupMagic)+3] ^= 1; return b }(),
		"not a backup":    []byte("hello"),
	} {
		f := filepath.Join(t.TempDir(), "bad")
		os.WriteFile(f, bad, 0o600)
		into := filepath.Join(t.TempDir(), "new")
		if err := Restore(Options{Dir: into}, f); !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Stat(into); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a store was made of a bad backup", name)
		}
	}
}

// A value Badger cannot read fails the backup, rather than being backed
// up empty.
func TestBackupOfDamagedValue(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(Options{Dir: dir})
	s.Update(Synced, func(tx *Tx) error { return tx.PutRaw(K("cp", "r1"), bytes.Repeat([]byte{7}, 200<<10)) })
	s.Close()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	for _, l := range logs {
		if fi, _ := os.Stat(l); fi.Size() > 100<<10 {
			os.Truncate(l, 1000)
		}
	}
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Backup(filepath.Join(t.TempDir(), "b"))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}
