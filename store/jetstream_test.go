// jetstream_test.go tests the JetStream backend on an embedded node: the
// contract backend.go states, as the Badger backend keeps it.

package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// openJS opens a store on an embedded JetStream node in a test directory.
func openJS(t testing.TB, memory bool) *Store {
	t.Helper()
	opts := Options{Dir: t.TempDir(), JetStream: &JetStream{}}
	if memory {
		opts = Options{InMemory: true, JetStream: &JetStream{}}
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestKeySubjectRoundTrip(t *testing.T) {
	for _, k := range []Key{K("inv", "r3.2.1"), K("grant", "*", "fs.read /a b/**"), K("ev", "r1", uint64(7)), K("x", ""), K("seal"), K("ü", "~7e", ">")} {
		tok, partial := keyTokens(k)
		if len(partial) > 0 {
			t.Fatalf("%s: partial %q", k, partial)
		}
		if strings.ContainsAny(tok, " *>\t") {
			t.Fatalf("%s: token %q has subject characters", k, tok)
		}
		back, err := subjectKey(tok)
		if err != nil || !bytes.Equal(back, k) {
			t.Fatalf("%s → %q → %q, %v", k, tok, back, err)
		}
	}
}

func FuzzKeySubject(f *testing.F) {
	f.Add("inv", "r3.2.1")
	f.Add("", "~")
	f.Fuzz(func(t *testing.T, kind, part string) {
		if strings.IndexByte(kind, 0) >= 0 || strings.IndexByte(part, 0) >= 0 {
			return
		}
		k := K(kind, part)
		tok, _ := keyTokens(k)
		back, err := subjectKey(tok)
		if err != nil || !bytes.Equal(back, k) {
			t.Fatalf("%q → %q → %q, %v", k, tok, back, err)
		}
	})
}

func TestJetStreamRecords(t *testing.T) {
	s := openJS(t, false)
	big := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB: cut into parts
	err := s.Update(Synced, func(tx *Tx) error {
		for i := range 5 {
			if err := tx.Put(K("a", uint64(i)), i); err != nil {
				return err
			}
		}
		if err := tx.PutRaw(K("big"), big); err != nil {
			return err
		}
		return tx.Put(K("b", "x.y"), "dotted")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(Synced, func(tx *Tx) error { return tx.Delete(K("a", uint64(2))) })
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *Tx) error {
		var got []int
		err := tx.Scan(K("a"), func(k Key, decode func(any) error) (bool, error) {
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
		b, ok, err := tx.GetRaw(K("big"))
		if !ok || !bytes.Equal(b, big) {
			t.Errorf("big: found %v, %d bytes, %v", ok, len(b), err)
		}
		var d string
		if ok, err := tx.Get(K("b", "x.y"), &d); !ok || d != "dotted" {
			t.Errorf("dotted: %v %q %v", ok, d, err)
		}
		if ok, _ := tx.Get(K("a", uint64(2)), new(int)); ok {
			t.Error("a deleted record read back")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A deleted key created again.
	if err := s.Update(Synced, func(tx *Tx) error {
		if ok, err := tx.Get(K("a", uint64(2)), new(int)); ok || err != nil {
			return fmt.Errorf("found %v, %v", ok, err)
		}
		return tx.Put(K("a", uint64(2)), 22)
	}); err != nil {
		t.Fatal(err)
	}
}

// A transaction whose read another commit changed conflicts; Retry keeps a
// contended counter exact.
func TestJetStreamConflicts(t *testing.T) {
	s := openJS(t, true)
	key := K("n")
	err := s.Update(Synced, func(tx *Tx) error {
		var n int
		tx.Get(key, &n)
		if err := s.Update(Synced, func(tx2 *Tx) error { return tx2.Put(key, 100) }); err != nil {
			return err
		}
		return tx.Put(key, n+1)
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale read committed: %v", err)
	}
	// A read-only key checked: write skew refused.
	err = s.Update(Synced, func(tx *Tx) error {
		tx.Get(K("guard"), new(int))
		if err := s.Update(Synced, func(tx2 *Tx) error { return tx2.Put(K("guard"), 1) }); err != nil {
			return err
		}
		return tx.Put(K("other"), 1)
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale read-only key committed: %v", err)
	}
	s.Update(Synced, func(tx *Tx) error { return tx.Put(key, 0) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := s.Retry(Synced, func(tx *Tx) error {
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
	s.View(func(tx *Tx) error { _, err := tx.Get(key, &n); return err })
	if n != 160 {
		t.Fatalf("counter %d, want 160", n)
	}
}

// A View sees one moment: a transfer between two keys never shows a torn
// sum, whatever commits run meanwhile.
func TestJetStreamViewSnapshot(t *testing.T) {
	s := openJS(t, true)
	s.Update(Synced, func(tx *Tx) error { tx.Put(K("acct", "a"), 100); return tx.Put(K("acct", "b"), 0) })
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
			s.Retry(Synced, func(tx *Tx) error {
				var a, b int
				tx.Get(K("acct", "a"), &a)
				tx.Get(K("acct", "b"), &b)
				tx.Put(K("acct", "a"), a-1)
				return tx.Put(K("acct", "b"), b+1)
			})
		}
	}()
	for i := range 100 {
		var sum int
		err := s.View(func(tx *Tx) error {
			sum = 0
			if i%2 == 0 { // two reads
				var a, b int
				tx.Get(K("acct", "a"), &a)
				_, err := tx.Get(K("acct", "b"), &b)
				sum = a + b
				return err
			}
			return tx.Scan(K("acct"), func(_ Key, decode func(any) error) (bool, error) {
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
	s.Update(Synced, func(tx *Tx) error {
		for i := range 200 {
			if err := tx.Put(K("acct", fmt.Sprint(i)), i); err != nil {
				return err
			}
		}
		return nil
	})
	seen := map[string]int{}
	calls := 0
	err := s.Records(func(r Record) error {
		if calls++; calls == 100 { // a write the walk has read past
			done := make(chan error)
			go func() { done <- s.Update(Synced, func(tx *Tx) error { return tx.Put(K("acct", "0"), -1) }) }()
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
	s, err := Open(Options{Dir: dir, JetStream: &JetStream{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir, JetStream: &JetStream{}}); !errors.Is(err, ErrLocked) {
		t.Fatalf("opened twice: %v", err)
	}
	s.Update(Synced, func(tx *Tx) error { return tx.Put(K("k"), "v") })
	s.Close()
	s, err = Open(Options{Dir: dir, JetStream: &JetStream{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v string
	if ok, err := getOne(s, K("k"), &v); !ok || v != "v" {
		t.Fatalf("after reopening: %v %q %v", ok, v, err)
	}
}

func getOne(s *Store, k Key, v any) (ok bool, err error) {
	err = s.View(func(tx *Tx) error { ok, err = tx.Get(k, v); return err })
	return ok, err
}

// A store on JetStream is held by one process: a second open fails naming
// the holder, and opens once the first closes or its hold lapses; a process
// whose hold lapsed commits nothing.
func TestJetStreamHold(t *testing.T) {
	js := holdNode(t, 600*time.Millisecond)
	opts := Options{JetStream: &js}
	a, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	var le *LockedError
	if _, err := Open(opts); !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != os.Getpid() {
		t.Fatalf("a second host opened the store: %v", err)
	}
	a.Close()
	b, err := Open(opts)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	// b stops renewing (as a host paused or cut off would): it stops
	// committing, and another host may take the store once the hold lapses.
	close(b.js.hold.stop)
	<-b.js.hold.done
	b.js.hold.stop = make(chan struct{})
	time.Sleep(HoldFor / 3)
	if err := b.Update(Synced, func(tx *Tx) error { return tx.Put(K("x"), 1) }); !errors.Is(err, ErrHoldLost) {
		t.Fatalf("a lapsed hold committed: %v", err)
	}
	c, err := Open(opts)
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
	a, err := Open(Options{JetStream: &js})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Update(Synced, func(tx *Tx) error { return tx.Put(K("x"), 1) }); err != nil {
		t.Fatal(err)
	}
	shared := js
	shared.Shared = true
	thief, err := Open(Options{JetStream: &shared})
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	if err := thief.Update(Synced, func(tx *Tx) error { return tx.Put(holderKey, holdRecord{ID: "another host"}) }); err != nil {
		t.Fatal(err)
	}
	err = a.Retry(Synced, func(tx *Tx) error { return tx.Put(K("x"), 2) })
	if !errors.Is(err, ErrHoldLost) {
		t.Fatalf("the old holder committed after a takeover: %v", err)
	}
	var x int
	thief.View(func(tx *Tx) error { _, err := tx.Get(K("x"), &x); return err })
	if x != 1 {
		t.Fatalf("x = %d, want 1", x)
	}
}

// A holder whose renewals stalled (an election, a long pause) without
// another host taking the store renews again and commits again.
func TestJetStreamHoldOutlivesAStall(t *testing.T) {
	js := holdNode(t, 600*time.Millisecond)
	s, err := Open(Options{JetStream: &js})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.js.hold
	h.mu.Lock()
	h.good = time.Now().Add(-time.Hour) // renewals not confirmed for an hour
	h.mu.Unlock()
	if err := s.Update(Synced, func(tx *Tx) error { return tx.Put(K("x"), 1) }); !errors.Is(err, ErrHoldLost) {
		t.Fatalf("a stalled holder committed: %v", err)
	}
	time.Sleep(HoldFor / 2) // two renewals
	if err := s.Update(Synced, func(tx *Tx) error { return tx.Put(K("x"), 2) }); err != nil {
		t.Fatalf("after renewing again: %v", err)
	}
}

// holdNode starts a node for a test of the hold, with holds of d, and
// returns the configuration of a memory store on it.
func holdNode(t *testing.T, d time.Duration) JetStream {
	t.Helper()
	node, err := StartNode(NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	old := HoldFor
	HoldFor = d
	t.Cleanup(func() { HoldFor = old })
	return JetStream{URLs: []string{node.ClientURL()}, Memory: true}
}
