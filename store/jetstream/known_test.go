// known_test.go checks the records a JetStream store keeps between
// transactions: never a lost update, a stale decision or a stale answer
// when another host (another connection) wrote meanwhile.

package jetstream

import (
	"errors"
	"fmt"
	"testing"

	"github.com/runehost/runehost/store"
)

// twoHosts opens two stores on one stream, each on a connection of its
// own, as two host processes would.
func twoHosts(t *testing.T) (a, b *store.Store) {
	a, b, _ = twoHostsJS(t)
	return a, b
}

// twoHostsJS is twoHosts, with a's backend.
func twoHostsJS(t *testing.T) (a, b *store.Store, ajs *jsStore) {
	t.Helper()
	node, err := StartNode(NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	host := func() (*store.Store, *jsStore) {
		s, js, err := open(store.Options{}, Config{URLs: []string{node.ClientURL()}, Memory: true, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, js
	}
	a, ajs = host()
	b, _ = host()
	return a, b, ajs
}

func incr(s *store.Store, k store.Key) error {
	return s.Retry(store.Synced, func(tx *store.Tx) error {
		var n int
		if _, err := tx.Get(k, &n); err != nil {
			return err
		}
		return tx.Put(k, n+1)
	})
}

func readN(t *testing.T, s *store.Store, k store.Key) int {
	t.Helper()
	var n int
	if err := s.Retry(store.Synced, func(tx *store.Tx) error { _, err := tx.Get(k, &n); return err }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestKnownRecords(t *testing.T) {
	a, b, js := twoHostsJS(t)
	k := store.K("n")
	// Kept: a's second transaction asks the servers for nothing.
	if err := incr(a, k); err != nil {
		t.Fatal(err)
	}
	before := a.Trips()
	if err := incr(a, k); err != nil {
		t.Fatal(err)
	}
	if got := a.Trips().Reads - before.Reads; got != 0 {
		t.Fatalf("%d reads for a record a wrote itself", got)
	}
	// Another host's write between two of a's: not lost.
	if err := incr(b, k); err != nil {
		t.Fatal(err)
	}
	if err := incr(a, k); err != nil {
		t.Fatal(err)
	}
	if n := readN(t, b, k); n != 4 {
		t.Fatalf("b reads %d, want 4: an update lost, or a stale read", n)
	}
	// A transaction that writes nothing answers what the servers hold.
	if err := incr(b, k); err != nil {
		t.Fatal(err)
	}
	if n := readN(t, a, k); n != 5 {
		t.Fatalf("a read-only transaction saw %d, want 5", n)
	}
	// A decision to fail, made on a kept record, is checked first.
	if err := incr(a, k); err != nil { // a keeps 6
		t.Fatal(err)
	}
	if err := b.Retry(store.Synced, func(tx *store.Tx) error { return tx.Put(k, 100) }); err != nil {
		t.Fatal(err)
	}
	errSmall := errors.New("small")
	err := a.Retry(store.Synced, func(tx *store.Tx) error {
		var n int
		if _, err := tx.Get(k, &n); err != nil {
			return err
		}
		if n < 50 {
			return errSmall
		}
		return nil
	})
	if err != nil {
		t.Fatalf("decided on a stale record: %v", err)
	}
	// What a commit kept is at the sequence the servers stored it at.
	err = a.Retry(store.Synced, func(tx *store.Tx) error {
		for _, kk := range []store.Key{store.K("x", "1"), store.K("x", "2"), store.K("x", "3")} {
			if err := tx.Put(kk, 1); err != nil {
				return err
			}
		}
		return tx.Delete(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kk := range []store.Key{store.K("x", "1"), store.K("x", "2"), store.K("x", "3"), k} {
		subj := js.keySubject(kk)
		kept, ok := js.known.get(subj)
		now, err := js.load(subj, kk)
		if !ok || err != nil || kept.seq != now.seq || kept.found != now.found {
			t.Fatalf("%s: kept %+v (%v), stored %+v (%v)", kk, kept, ok, now, err)
		}
	}
}

// Peek reads a record as it stands without making it part of the commit's
// checks: another host's write between the peek and the commit is no
// conflict, and no record kept from before answers it.
func TestPeekIsNotChecked(t *testing.T) {
	a, b := twoHosts(t)
	stamp, other := store.K("stamp"), store.K("other")
	if err := incr(a, stamp); err != nil { // a keeps stamp at 1
		t.Fatal(err)
	}
	if err := incr(b, stamp); err != nil {
		t.Fatal(err)
	}
	runs := 0
	err := a.Retry(store.Synced, func(tx *store.Tx) error {
		runs++
		var n int
		if _, err := tx.Peek(stamp, &n); err != nil {
			return err
		}
		if n != 2 {
			return fmt.Errorf("peeked %d, want 2 (the servers', not the one kept)", n)
		}
		if runs == 1 {
			if err := incr(b, stamp); err != nil {
				return err
			}
		}
		return tx.Put(other, n)
	})
	if err != nil || runs != 1 {
		t.Fatalf("%v after %d runs: a peeked record was checked", err, runs)
	}
}
