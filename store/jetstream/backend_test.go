// backend_test.go tests the JetStream backend on an embedded node: the
// contract backend.go states, as the Badger backend keeps it.

package jetstream

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/store"
)

// openJS opens a store on an embedded JetStream node in a test directory.
func openJS(t testing.TB, memory bool) *store.Store {
	t.Helper()
	opts := store.Options{Dir: t.TempDir()}
	if memory {
		opts = store.Options{InMemory: true}
	}
	s, err := Open(opts, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestJetStreamRecords(t *testing.T) {
	s := openJS(t, false)
	big := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB: cut into parts
	err := s.Update(store.Synced, func(tx *store.Tx) error {
		for i := range 5 {
			if err := tx.Put(store.K("a", uint64(i)), i); err != nil {
				return err
			}
		}
		if err := tx.PutRaw(store.K("big"), big); err != nil {
			return err
		}
		return tx.Put(store.K("b", "x.y"), "dotted")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(store.Synced, func(tx *store.Tx) error { return tx.Delete(store.K("a", uint64(2))) })
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *store.Tx) error {
		var got []int
		err := tx.Scan(store.K("a"), func(k store.Key, decode func(any) error) (bool, error) {
			var v int
			if err := decode(&v); err != nil {
				return false, err
			}
			got = append(got, v)
			return true, nil
		})
		if fmt.Sprint(got) != "[0 1 3 4]" {
			t.Errorf("scan: %v", got)
		}
		b, ok, err := tx.GetRaw(store.K("big"))
		if !ok || !bytes.Equal(b, big) {
			t.Errorf("big: found %v, %d bytes, %v", ok, len(b), err)
		}
		var d string
		if ok, err := tx.Get(store.K("b", "x.y"), &d); !ok || d != "dotted" {
			t.Errorf("dotted: %v %q %v", ok, d, err)
		}
		if ok, _ := tx.Get(store.K("a", uint64(2)), new(int)); ok {
			t.Error("a deleted record read back")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A deleted key created again.
	if err := s.Update(store.Synced, func(tx *store.Tx) error {
		if ok, err := tx.Get(store.K("a", uint64(2)), new(int)); ok || err != nil {
			return fmt.Errorf("found %v, %v", ok, err)
		}
		return tx.Put(store.K("a", uint64(2)), 22)
	}); err != nil {
		t.Fatal(err)
	}
}

// A transaction whose read another commit changed conflicts; Retry keeps a
// contended counter exact.
func TestJetStreamConflicts(t *testing.T) {
	s := openJS(t, true)
	key := store.K("n")
	err := s.Update(store.Synced, func(tx *store.Tx) error {
		var n int
		tx.Get(key, &n)
		if err := s.Update(store.Synced, func(tx2 *store.Tx) error { return tx2.Put(key, 100) }); err != nil {
			return err
		}
		return tx.Put(key, n+1)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a stale read committed: %v", err)
	}
	// A read-only key checked: write skew refused.
	err = s.Update(store.Synced, func(tx *store.Tx) error {
		tx.Get(store.K("guard"), new(int))
		if err := s.Update(store.Synced, func(tx2 *store.Tx) error { return tx2.Put(store.K("guard"), 1) }); err != nil {
			return err
		}
		return tx.Put(store.K("other"), 1)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a stale read-only key committed: %v", err)
	}
	s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(key, 0) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := s.Retry(store.Synced, func(tx *store.Tx) error {
					var n int
					if _, err := tx.Get(key, &n); err != nil {
						return err
					}
					return tx.Put(key, n+1)
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var n int
	s.View(func(tx *store.Tx) error { _, err := tx.Get(key, &n); return err })
	if n != 160 {
		t.Fatalf("counter %d, want 160", n)
	}
}

// A View sees one moment: a transfer between two keys never shows a torn
// sum, whatever commits run meanwhile.
func TestJetStreamViewSnapshot(t *testing.T) {
	s := openJS(t, true)
	s.Update(store.Synced, func(tx *store.Tx) error { tx.Put(store.K("acct", "a"), 100); return tx.Put(store.K("acct", "b"), 0) })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			// A pause as short as the engine's quickest commits leave:
			// Views are optimistic, and a writer that rewrote the records
			// back to back without one could make every run of a View
			// find them changed (ErrConflict after maxViewRuns).
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			s.Retry(store.Synced, func(tx *store.Tx) error {
				var a, b int
				tx.Get(store.K("acct", "a"), &a)
				tx.Get(store.K("acct", "b"), &b)
				tx.Put(store.K("acct", "a"), a-1)
				return tx.Put(store.K("acct", "b"), b+1)
			})
		}
	}()
	for i := range 100 {
		var sum int
		err := s.View(func(tx *store.Tx) error {
			sum = 0
			if i%2 == 0 { // two reads
				var a, b int
				tx.Get(store.K("acct", "a"), &a)
				_, err := tx.Get(store.K("acct", "b"), &b)
				sum = a + b
				return err
			}
			return tx.Scan(store.K("acct"), func(_ store.Key, decode func(any) error) (bool, error) {
				var v int
				err := decode(&v)
				sum += v
				return true, err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if sum != 100 {
			close(stop)
			wg.Wait()
			t.Fatalf("a View saw a torn transfer: sum %d", sum)
		}
	}
	close(stop)
	wg.Wait()
}

// Records passes each record once though a write in the middle of the walk
// makes its View run again.
func TestJetStreamRecordsOnce(t *testing.T) {
	s := openJS(t, true)
	s.Update(store.Synced, func(tx *store.Tx) error {
		for i := range 200 {
			if err := tx.Put(store.K("acct", fmt.Sprint(i)), i); err != nil {
				return err
			}
		}
		return nil
	})
	seen := map[string]int{}
	calls := 0
	err := s.Records(func(r store.Record) error {
		if calls++; calls == 100 { // a write the walk has read past
			done := make(chan error)
			go func() {
				done <- s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("acct", "0"), -1) })
			}()
			if err := <-done; err != nil {
				return err
			}
		}
		seen[string(r.Key)]++
		return r.Err
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%q passed %d times", k, n)
		}
	}
	if len(seen) != 200 || calls != 200 {
		t.Fatalf("%d records in %d calls", len(seen), calls)
	}
}

// A directory store on JetStream is locked, and reopens with its records.
func TestJetStreamReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(store.Options{Dir: dir}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(store.Options{Dir: dir}, Config{}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("opened twice: %v", err)
	}
	s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("k"), "v") })
	s.Close()
	s, err = Open(store.Options{Dir: dir}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v string
	if ok, err := getOne(s, store.K("k"), &v); !ok || v != "v" {
		t.Fatalf("after reopening: %v %q %v", ok, v, err)
	}
}

func getOne(s *store.Store, k store.Key, v any) (ok bool, err error) {
	err = s.View(func(tx *store.Tx) error { ok, err = tx.Get(k, v); return err })
	return ok, err
}

// A store on JetStream is held by one process: a second open fails naming
// the holder, and opens once the first closes or its hold lapses; a process
// whose hold lapsed commits nothing.
func TestJetStreamHold(t *testing.T) {
	js := holdNode(t, 600*time.Millisecond)
	opts := store.Options{}
	a, err := Open(opts, js)
	if err != nil {
		t.Fatal(err)
	}
	var le *store.LockedError
	if _, err := Open(opts, js); !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != os.Getpid() {
		t.Fatalf("a second host opened the store: %v", err)
	}
	a.Close()
	b, bjs, err := open(opts, js)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	// b stops renewing (as a host paused or cut off would): it stops
	// committing, and another host may take the store once the hold lapses.
	close(bjs.hold.stop)
	<-bjs.hold.done
	bjs.hold.stop = make(chan struct{})
	time.Sleep(HoldFor / 3)
	if err := b.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("x"), 1) }); !errors.Is(err, ErrHoldLost) {
		t.Fatalf("a lapsed hold committed: %v", err)
	}
	c, err := Open(opts, js)
	if err != nil {
		t.Fatalf("after the hold lapsed: %v", err)
	}
	c.Close()
}

// The fence: once another host took the store (its holder record moved), a
// commit of the old holder fails with ErrHoldLost, however current its own
// clock says its hold is; and it does not retry for ever.
func TestJetStreamFence(t *testing.T) {
	js := holdNode(t, time.Minute) // no renewal during the test: only the fence can tell
	a, err := Open(store.Options{}, js)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("x"), 1) }); err != nil {
		t.Fatal(err)
	}
	shared := js
	shared.Shared = true
	thief, err := Open(store.Options{}, shared)
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	if err := thief.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(holderKey, holdRecord{ID: "another host"}) }); err != nil {
		t.Fatal(err)
	}
	err = a.Retry(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("x"), 2) })
	if !errors.Is(err, ErrHoldLost) {
		t.Fatalf("the old holder committed after a takeover: %v", err)
	}
	var x int
	thief.View(func(tx *store.Tx) error { _, err := tx.Get(store.K("x"), &x); return err })
	if x != 1 {
		t.Fatalf("x = %d, want 1", x)
	}
}

// A holder whose renewals stalled (an election, a long pause) without
// another host taking the store renews again and commits again.
func TestJetStreamHoldOutlivesAStall(t *testing.T) {
	js := holdNode(t, 600*time.Millisecond)
	s, sjs, err := open(store.Options{}, js)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := sjs.hold
	h.mu.Lock()
	h.good = time.Now().Add(-time.Hour) // renewals not confirmed for an hour
	h.mu.Unlock()
	if err := s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("x"), 1) }); !errors.Is(err, ErrHoldLost) {
		t.Fatalf("a stalled holder committed: %v", err)
	}
	time.Sleep(HoldFor / 2) // two renewals
	if err := s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("x"), 2) }); err != nil {
		t.Fatalf("after renewing again: %v", err)
	}
}

// holdNode starts a node for a test of the hold, with holds of d, and
// returns the configuration of a memory store on it.
func holdNode(t *testing.T, d time.Duration) Config {
	t.Helper()
	node, err := StartNode(NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	old := HoldFor
	HoldFor = d
	t.Cleanup(func() { HoldFor = old })
	return Config{URLs: []string{node.ClientURL()}, Memory: true}
}
