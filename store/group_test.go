// group_test.go tests the group commit: concurrent Synced commits share
// syncs, and none returns before a sync that began after it.

package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSyncGroupShares(t *testing.T) {
	var g syncGroup
	var started, completed atomic.Uint64
	sync1 := func(uint64) error {
		id := started.Add(1)
		time.Sleep(2 * time.Millisecond)
		completed.Store(id) // syncs run one at a time: ids complete in order
		return nil
	}
	const workers, each = 32, 10
	var wg sync.WaitGroup
	var early atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				before := started.Load() // this commit has finished
				if err := g.wait(0, sync1); err != nil {
					t.Error(err)
				}
				if completed.Load() <= before {
					early.Add(1) // returned on a sync that began before it
				}
			}
		}()
	}
	wg.Wait()
	if n := early.Load(); n > 0 {
		t.Fatalf("%d commits returned before a sync that began after them", n)
	}
	if n := started.Load(); n >= workers*each/2 {
		t.Fatalf("%d syncs for %d commits: they did not share", n, workers*each)
	}
	t.Logf("%d syncs for %d commits", started.Load(), workers*each)
}

func TestSyncGroupVersionAndError(t *testing.T) {
	var g syncGroup
	var got uint64
	if err := g.wait(7, func(v uint64) error { got = v; return nil }); err != nil || got != 7 {
		t.Fatalf("version %d, %v", got, err)
	}
	boom := errors.New("boom")
	if err := g.wait(0, func(uint64) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	// The failed sync covered nothing: the next commit syncs again.
	ran := false
	if err := g.wait(0, func(uint64) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("after a failed sync: ran %v, %v", ran, err)
	}
}

// A transaction that writes nothing syncs nothing.
func TestEmptySyncedCommit(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.group.tickets.Load()
	if err := s.Update(Synced, func(tx *Tx) error { _, err := tx.Get(K("inv", "a"), new(rec)); return err }); err != nil {
		t.Fatal(err)
	}
	if n := s.group.tickets.Load() - before; n != 0 {
		t.Fatalf("an empty Synced commit synced (%d)", n)
	}
	if err := s.Update(Synced, func(tx *Tx) error { return tx.Put(K("inv", "a"), rec{"a", 1}) }); err != nil {
		t.Fatal(err)
	}
	if n := s.group.tickets.Load() - before; n != 1 {
		t.Fatalf("a Synced commit synced %d times", n)
	}
}
