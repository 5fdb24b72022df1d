// ward_hosts_test.go checks that what a ward keeps of the grants never
// allows an act that a grant or revoke through another ward (another host,
// on a shared store) changed: the attempt checks the grants' stamp.

package host

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A revoke through a ward other than the engine's (as another process on
// the store would make it) denies the engine's next act, though the
// engine's ward kept the grant from the act before.
func TestWardRevokeThroughAnotherWard(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	e.Ward().Grant("p", "calc")
	e.Ward().Revoke(AnyProg, "calc") // the helper's
	src := `let a = act "calc" {n: 1}
await {key: "go"}
try { return [a, act "calc" {n: 2}] } catch err { return [a, err.kind] }`
	out, err := e.Start(context.Background(), "r1", "p", []byte(src), nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("got %+v %v", out, err)
	}
	other := NewWard(e.Store, e.Clock)
	if ok, err := other.Revoke("p", "calc"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	out, err = e.Send(context.Background(), "r1", "go", nil)
	if err != nil || porttestJSON(t, out.Result) != `[10,"denied"]` {
		t.Fatalf("got %+v %v", out, err)
	}
	// And a grant through it allows the next run's act at once.
	if _, err := other.Grant("p", "calc"); err != nil {
		t.Fatal(err)
	}
	out, err = e.Start(context.Background(), "r2", "p", []byte(`return act "calc" {n: 3}`), nil, 100_000, 1)
	if err != nil || porttestJSON(t, out.Result) != `30` {
		t.Fatalf("after the grant: %+v %v", out, err)
	}
}

// On a store shared by hosts, a revoke on one host is seen by an act on
// another at its next act: the acting host kept the grant (its first act
// read it), and its second act, after the revoke, is denied and never done.
func TestRevokeOnOneHostDeniesOnAnother(t *testing.T) {
	j := newJournal()
	es := sharedHosts(t, 2, j)
	a, b := es[0], es[1]
	runLoop(t, a)
	id, _ := a.NewInvocationID()
	src := `let x = act "rec" {}
await {key: "go"}
try { return [x, act "rec" {}] } catch err { return [x, err.kind] }`
	if err := a.Admit(context.Background(), id, "p", "", []byte(src), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a, id, Waiting)
	if ok, err := b.Ward().Revoke(AnyProg, "rec"); !ok || err != nil {
		t.Fatalf("revoke on host b: %v %v", ok, err)
	}
	if err := b.Deliver(id, "go", []byte{0xf6}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, a, id, Completed)
	if got := porttestJSON(t, st.Result); got != `[1,"denied"]` {
		t.Fatalf("result %s, want [1,\"denied\"]", got)
	}
	if n := j.count(fmt.Sprintf("%s#%d", id, 3)); n != 0 {
		t.Fatalf("the act after the revoke was done %d times", n)
	}
}

// waitStatus waits (a minute at most: a loaded machine) until id has status
// want, and returns its state.
func waitStatus(t testing.TB, e *Engine, id string, want Status) *RunState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := e.State(id)
		if err == nil && st.Status == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not %s within a minute: %+v %v", id, want, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
