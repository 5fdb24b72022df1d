// store_test.go checks persistence, the lock and its holder, corrupt
// records, conflicts, key order, and a synced write across a killed process.

package store

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

type rec struct {
	Name string `cbor:"1,keyasint"`
	N    uint64 `cbor:"2,keyasint"`
}

func TestPersistence(t *testing.T) {
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
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var r rec
	err = s.View(func(tx *Tx) error {
		ok, err := tx.Get(K("inv", "a"), &r)
		if !ok && err == nil {
			t.Fatal("record lost")
		}
		return err
	})
	if err != nil || r != (rec{"a", 1}) {
		t.Fatalf("got %+v, %v", r, err)
	}
}

func TestLockedNamesHolder(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(Options{Dir: dir})
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.Holder == nil || le.Holder.PID != os.Getpid() {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "in use by pid") {
		t.Fatalf("message %q does not name the holder", err)
	}
}

func TestCorruptRecord(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := K("inv", "x", uint64(7))
	for _, garbage := range [][]byte{{0xff}, {0xa1, 0x01}, {0xa1, 0x09, 0x01}, {}} {
		s.Update(Buffered, func(tx *Tx) error { return tx.PutRaw(key, garbage) })
		err := s.View(func(tx *Tx) error {
			var r rec
			_, err := tx.Get(key, &r)
			return err
		})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "inv/x/0000000000000007") {
			t.Errorf("garbage %x: got %v", garbage, err)
		}
	}
}

func TestConflict(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := K("counter")
	s.Update(Buffered, func(tx *Tx) error { return tx.Put(key, rec{N: 0}) })
	// A read-modify-write transaction that reads, then waits while
	// another commits a write of the same key: its own commit conflicts.
	read, resume, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.Update(Buffered, func(tx *Tx) error {
			var r rec
			tx.Get(key, &r)
			close(read)
			<-resume
			r.N++
			return tx.Put(key, r)
		})
	}()
	<-read
	if err := s.Update(Buffered, func(tx *Tx) error {
		var r rec
		tx.Get(key, &r)
		r.N += 10
		return tx.Put(key, r)
	}); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if err := <-done; !errors.Is(err, ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	var r rec
	s.View(func(tx *Tx) error { _, err := tx.Get(key, &r); return err })
	if r.N != 10 {
		t.Fatalf("counter %d, want 10: the conflicting write must not land", r.N)
	}
}

func TestScanOrder(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []uint64{300, 2, 1 << 40, 17} {
		s.Update(Buffered, func(tx *Tx) error { return tx.Put(K("ev", "inv", n), rec{N: n}) })
	}
	s.Update(Buffered, func(tx *Tx) error { return tx.Put(K("ev", "inv2", 1), rec{N: 1}) })
	var got []uint64
	var mu sync.Mutex
	s.View(func(tx *Tx) error {
		return tx.Scan(K("ev", "inv"), func(key Key, decode func(any) error) (bool, error) {
			var r rec
			if err := decode(&r); err != nil {
				return false, err
			}
			mu.Lock()
			got = append(got, r.N)
			mu.Unlock()
			return true, nil
		})
	})
	if len(got) != 4 || got[0] != 2 || got[1] != 17 || got[2] != 300 || got[3] != 1<<40 {
		t.Fatalf("scan order %v", got)
	}
}

// TestSyncedSurvivesKill writes a synced record in a child process that is
// then killed with SIGKILL, and finds the record after reopening.
func TestSyncedSurvivesKill(t *testing.T) {
	if dir := os.Getenv("STORE_KILL_CHILD"); dir != "" {
		s, err := Open(Options{Dir: dir})
		if err != nil {
			os.Exit(3)
		}
		for i := 0; i < 50; i++ {
			if err := s.Update(Synced, func(tx *Tx) error { return tx.Put(K("att", uint64(i)), rec{N: uint64(i)}) }); err != nil {
				os.Exit(4)
			}
		}
		os.Stdout.WriteString("written\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSyncedSurvivesKill$")
	cmd.Env = append(os.Environ(), "STORE_KILL_CHILD="+dir)
	out, _ := cmd.Output()
	if !strings.Contains(string(out), "written") {
		t.Fatalf("child did not write: %q", out)
	}
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer s.Close()
	n := 0
	s.View(func(tx *Tx) error {
		return tx.Scan(K("att"), func(Key, func(any) error) (bool, error) { n++; return true, nil })
	})
	if n != 50 {
		t.Fatalf("found %d of 50 synced records", n)
	}
}

// A program that does not link store/jetstream, asked by the environment
// for a store on it, refuses plainly rather than open Badger instead.
func TestEnvBackendNotLinked(t *testing.T) {
	for v, want := range map[string]string{"jetstream": "built without the JetStream backend", "nats://127.0.0.1:4222": "built without", "etcd": "want badger, jetstream or nats://URL"} {
		t.Setenv(envBackend, v)
		dir := t.TempDir()
		if _, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", v, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: files made: %v", v, ents)
		}
	}
}

// SetCommitted's function sees the keys a committed transaction put, not
// those it deleted, and nothing of a transaction that failed.
func TestCommittedSeesPuts(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seen []string
	s.SetCommitted(func(put []Key) {
		for _, k := range put {
			seen = append(seen, k.String())
		}
	})
	if err := s.Update(Synced, func(tx *Tx) error {
		if err := tx.Put(K("a", "1"), 1); err != nil {
			return err
		}
		if err := tx.PutRaw(K("b"), []byte{0x01}); err != nil {
			return err
		}
		return tx.Delete(K("c"))
	}); err != nil {
		t.Fatal(err)
	}
	s.Update(Synced, func(tx *Tx) error {
		tx.Put(K("d"), 1)
		return errors.New("refused") // not committed
	})
	if strings.Join(seen, " ") != "a/1 b" {
		t.Fatalf("seen %q", seen)
	}
}
