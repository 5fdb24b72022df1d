// allowance_test.go checks reservations and charges, and the invariant
// charged + held <= limit under random operations and restarts.

package host

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

func TestAllowance(t *testing.T) {
	a := NewAccounts(memStore(t))
	if _, err := a.Open("inv", 2500); err != nil {
		t.Fatal(err)
	}
	n, err := a.Reserve("inv", 5000)
	if err != nil || n != MaxSlice {
		t.Fatalf("reserved %d, %v; want %d", n, err, MaxSlice)
	}
	al, err := a.Settle("inv", n, 400)
	if err != nil || al.Charged != 400 || al.Held != 0 {
		t.Fatalf("after settle: %+v, %v", al, err)
	}
	if _, err := a.Settle("inv", 10, 20); !errors.Is(err, ErrBadSettlement) {
		t.Fatalf("used beyond the reservation: %v", err)
	}
	n, _ = a.Reserve("inv", 1000)
	al, _ = a.Forfeit("inv", n)
	if al.Charged != 1400 {
		t.Fatalf("a failed slice charges its whole reservation: %+v", al)
	}
	n, _ = a.Reserve("inv", 1000)
	if n != 1000 {
		t.Fatalf("reserved %d", n)
	}
	// The process dies here; the next one recovers.
	al, _ = a.Recover("inv")
	if al.Charged != 2400 || al.Held != 0 {
		t.Fatalf("a lost settlement charges the reservation: %+v", al)
	}
	n, _ = a.Reserve("inv", 1000)
	if n != 100 {
		t.Fatalf("only what is left can be reserved: %d", n)
	}
	a.Settle("inv", n, n)
	if _, err := a.Reserve("inv", 1); !errors.Is(err, ErrExhausted) {
		t.Fatalf("got %v, want ErrExhausted", err)
	}
}

// TestAllowanceInvariant runs random reservations, settlements, failures and
// restarts over a store that is closed and reopened, checking the invariant
// after each: 400 of them with RUNEHOST_LONG=1 (make test-long), the first
// 150 of the same (some 30 restarts) in make test.
func TestAllowanceInvariant(t *testing.T) {
	steps := 400
	if !longTests {
		steps = 150
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccounts(s)
	a.Open("inv", 50_000)
	var held []uint64
	for i := 0; i < steps; i++ {
		switch rng.Intn(5) {
		case 0, 1:
			if n, err := a.Reserve("inv", uint64(rng.Intn(1500)+1)); err == nil {
				held = append(held, n)
			}
		case 2:
			if len(held) > 0 {
				n := held[0]
				held = held[1:]
				a.Settle("inv", n, uint64(rng.Int63n(int64(n)+1)))
			}
		case 3:
			if len(held) > 0 {
				n := held[0]
				held = held[1:]
				a.Forfeit("inv", n)
			}
		case 4: // restart: reservations in flight are lost
			s.Close()
			if s, err = store.Open(store.Options{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			a = NewAccounts(s)
			a.Recover("inv")
			held = nil
		}
		al, err := a.Get("inv")
		if err != nil {
			t.Fatal(err)
		}
		if al.Charged+al.Held > al.Limit {
			t.Fatalf("step %d: charged %d + held %d > limit %d", i, al.Charged, al.Held, al.Limit)
		}
		sum := uint64(0)
		for _, h := range held {
			sum += h
		}
		if sum != al.Held {
			t.Fatalf("step %d: held %d, reservations in flight %d", i, al.Held, sum)
		}
	}
	s.Close()
}
