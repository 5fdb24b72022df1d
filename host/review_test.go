// review_test.go pins the fixes of a review of the engine: each test failed
// (or hung, or panicked) before its fix.

package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

type errAdapter struct{ err error }

func (a errAdapter) Do(context.Context, *Operation) (any, error) { return nil, a.err }

// An adapter's error the machine would refuse (not UTF-8, a reserved or
// empty kind) is made acceptable, not recorded as is and replayed for ever.
func TestOutcomeTheMachineAccepts(t *testing.T) {
	for name, aerr := range map[string]error{
		"invalid utf8":  errors.New("open /data/\xff\xfe: no such file"),
		"reserved kind": &checkpoint.Error{Kind: "steps", Msg: "x"},
		"fault kind":    &checkpoint.Error{Kind: "fault", Msg: "x"},
		"empty kind":    &checkpoint.Error{Kind: "", Msg: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			e := engine(t, memStore(t), 1)
			e.Adapters["calc"] = errAdapter{aerr}
			out, err := e.Start(context.Background(), "r1", "p", []byte(`try { act "calc" {n: 1} } catch err { return err.kind }`), nil, 100_000, 1)
			if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != `"failed"` {
				t.Fatalf("got %+v %v", out, err)
			}
		})
	}
}

// An act whose arguments are near the cap is stored (large values go to
// Badger's value log), not refused by the transaction's size.
func TestLargeArguments(t *testing.T) {
	s, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := engine(t, s, 1)
	e.Adapters["calc"] = &recorder{}
	out, err := e.Start(context.Background(), "r1", "p", []byte(`let s = "x" * 1000000
return act "calc" {n: 1, s: s}`), nil, 10_000_000, 1)
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "10" {
		t.Fatalf("got %+v %v", out, err)
	}
}

// Children's use charged to a parent can spend its allowance before its
// machine's own limit: it fails with kind "steps", it is not paused for ever.
func TestAllowanceSpentFails(t *testing.T) {
	e := engine(t, memStore(t), 1)
	src := `if input != nil { var j = 0; while j < 20000 { j += 1 }; return j }
let c = act "spawn" {steps: 200000, input: 1}
let r = await {key: c.id}
var k = 0
while k < 100000 { k += 1 }
return k`
	e.Start(context.Background(), "r1", "p", []byte(src), nil, 250_000, 1)
	st, err := e.RunTree(context.Background(), "r1")
	if err != nil || st.Status != Failed || st.Err.Kind != "steps" {
		t.Fatalf("got %+v %v", st, err)
	}
	al, _ := e.accounts.Get("r1")
	if al.Charged+al.Held+al.Lent > al.Limit || al.Lent != 0 {
		t.Fatalf("allowance %+v", al)
	}
}

// A parent that lent everything waits for the steps to come back.
func TestLendAllWaits(t *testing.T) {
	e := engine(t, memStore(t), 1)
	src := `if input != nil { return 1 }
let c = act "spawn" {steps: 99990, input: 1}
return (await {key: c.id}).result`
	e.Start(context.Background(), "r1", "p", []byte(src), nil, 100_000, 1)
	st, err := e.RunTree(context.Background(), "r1")
	if err != nil || st.Status != Completed || porttestJSON(t, st.Result) != "1" {
		t.Fatalf("got %+v %v", st, err)
	}
}

// A NUL in a spawned prog's name is the prog's error, not a host panic.
func TestSpawnBadProgName(t *testing.T) {
	e := engine(t, memStore(t), 1)
	out, err := e.Start(context.Background(), "r1", "p", []byte(`try { return act "spawn" {steps: 100, prog: input} } catch err { return err.kind }`), data(t, "a\x00b"), 100_000, 1)
	if err != nil || porttestJSON(t, out.Result) != `"value"` {
		t.Fatalf("got %+v %v", out, err)
	}
}

// An adapter that panics fails its act; the host goes on.
func TestAdapterPanics(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = panicAdapter{}
	out, err := e.Start(context.Background(), "r1", "p", []byte(`try { act "calc" {n: 1} } catch err { return err.msg }`), nil, 100_000, 1)
	if err != nil || !strings.Contains(porttestJSON(t, out.Result), "the adapter failed: boom") {
		t.Fatalf("got %+v %v", out, err)
	}
}

type panicAdapter struct{}

func (panicAdapter) Do(context.Context, *Operation) (any, error) { panic("boom") }

// A huge timeout is refused, not wrapped round to a deadline in the past;
// a due key of another scope never breaks a scheduler.
func TestAwaitTimeoutBounded(t *testing.T) {
	e := engine(t, memStore(t), 1)
	out, err := e.Start(context.Background(), "r1", "p", []byte(`try { return await {key: "x", timeout: 9223372036854775807} } catch err { return err.kind }`), nil, 100_000, 1)
	if err != nil || porttestJSON(t, out.Result) != `"value"` {
		t.Fatalf("got %+v %v", out, err)
	}
	e.Store.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("due", uint64(1), "r7"), true) }) // stale
	if n, err := (&Scheduler{E: e, Scope: "r1"}).Wake(); err != nil || n != 0 {
		t.Fatalf("wake of another scope: %d %v", n, err)
	}
	if n, err := (&Scheduler{E: e}).Wake(); err != nil || n != 0 {
		t.Fatalf("wake: %d %v", n, err)
	}
	var left bool
	e.Store.View(func(tx *store.Tx) error { _, left, _ = tx.GetRaw(store.K("due", uint64(1), "r7")); return nil })
	if left {
		t.Fatal("a stale due key was kept")
	}
}

// The quantum holds for a prog that acts every slice.
func TestQuantumWithActs(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	e.Quantum = 2
	out, err := e.Start(context.Background(), "r1", "p", []byte(`var t = 0
for i in range(200) { t += act "calc" {n: i} }
return t`), nil, 10_000_000, 1)
	if err != nil || out.Status != Running {
		t.Fatalf("got %+v %v", out, err)
	}
}

// A corrupt operation record fails only its invocation: the host opens,
// and the invocation is paused with the reason.
func TestCorruptOperation(t *testing.T) {
	s := memStore(t)
	id := OpID{"r1", 1}
	s.Update(store.Synced, func(tx *store.Tx) error {
		tx.Put(id.openKey(), true)
		putInv(tx, &Invocation{ID: "r1", Prog: "p", Status: Waiting})
		return tx.Put(id.key(), Operation{Invocation: "r1", Ordinal: 1, Tag: "x", Phase: Attempted})
	})
	e, _, err := Open(s, port.NewNative(), func() int64 { return 1 })
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if i, err := e.invs.get("r1"); err != nil || !strings.Contains(i.Paused, "op/r1/") || !strings.Contains(i.Paused, "without an attempt") {
		t.Fatalf("r1 not paused with the reason: %+v %v", i, err)
	}
}

// slow gives up when its time runs out.
type slow struct{}

func (slow) Do(ctx context.Context, _ *Operation) (any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (slow) Limits() Limits { return Limits{Time: 20 * time.Millisecond} }

// An adapter cut off by its time limit leaves the act unknown: a timeout
// proves nothing about the effect.
func TestAdapterTimeLimitIsUnknown(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = slow{}
	out, err := e.Start(context.Background(), "r1", "p", []byte(`return act "calc" {n: 1}`), nil, 100_000, 1)
	if err != nil || out.Status != Waiting || out.Unknown == nil || out.Unknown.Phase != Unresolved {
		t.Fatalf("got %+v %v", out, err)
	}
}
