// children_test.go checks spawn: allowance lent and returned, reports
// delivered, Joining, bounds, cancellation down the tree, reconciliation of
// a spawn interrupted by a crash, and the scheduler's fair turns.

package host

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// runTree starts a root and gives turns to its tree until nothing runs.
func runTree(t *testing.T, e *Engine, inv, src string, input []byte, limit uint64) *Invocation {
	t.Helper()
	if _, err := e.Start(context.Background(), inv, "p", []byte(src), input, limit, 1); err != nil {
		t.Fatal(err)
	}
	sch := &Scheduler{E: e, Scope: inv}
	if err := sch.Run(context.Background(), func(tu Turn) bool {
		if tu.Err != nil {
			t.Fatalf("turn of %s: %v", tu.Invocation, tu.Err)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	i, err := e.invs.get(inv)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

const sumKids = `
if input != nil { var s = 0; for i in range(input) { s += i }; return s }
let a = act "spawn" {steps: 100000, input: 10}
let b = act "spawn" {steps: 100000, input: 20}
let ra = await {key: a.id}
let rb = await {key: b.id}
return [a.id, ra.status, ra.result + rb.result]`

func TestSpawnAwaitChildren(t *testing.T) {
	e := engine(t, memStore(t), 1)
	i := runTree(t, e, "r1", sumKids, nil, 1_000_000)
	if i.Status != Completed || porttestJSON(t, i.Result) != `["r1.1","completed",235]` {
		t.Fatalf("got %s %s", i.Status, porttestJSON(t, i.Result))
	}
	al, _ := e.accounts.Get("r1")
	k1, _ := e.accounts.Get("r1.1")
	k2, _ := e.accounts.Get("r1.2")
	if al.Lent != 0 || al.Held != 0 || k1.Limit != 100000 || k1.Charged == 0 {
		t.Fatalf("allowances %+v %+v", al, k1)
	}
	// What the children used is charged to the parent; the rest came back.
	own := al.Charged - k1.Charged - k2.Charged
	if own == 0 || own > 1000 {
		t.Fatalf("parent charged %d, children %d + %d", al.Charged, k1.Charged, k2.Charged)
	}
	// Children do not publish: one revision, the root's result.
	p, _ := e.invs.Prog("p")
	if p.Revision != 1 || porttestJSON(t, p.State) != `["r1.1","completed",235]` {
		t.Fatalf("prog %+v", p)
	}
	if i.Live != 0 || i.Tree != 0 {
		t.Fatalf("counts left: %+v", i)
	}
}

// A parent whose prog returns before its child settles is Joining, its
// result held; it completes when the child does.
func TestSpawnJoining(t *testing.T) {
	e := engine(t, memStore(t), 1)
	src := `if input != nil { return input * 2 }
act "spawn" {steps: 50000, input: 21}
return "parent done"`
	out, err := e.Start(context.Background(), "r1", "p", []byte(src), nil, 1_000_000, 1)
	if err != nil || out.Status != Joining {
		t.Fatalf("got %+v %v", out, err)
	}
	if p, _ := e.invs.Prog("p"); p.Revision != 0 {
		t.Fatalf("published while joining: %+v", p)
	}
	if _, err := e.invs.Move("r1", Completed); !errors.Is(err, ErrBadTransition) {
		t.Fatalf("moved a joining parent to completed: %v", err)
	}
	e.Start(context.Background(), "r2", "q", []byte(`return 0`), nil, 1000, 1)
	if err := (&Scheduler{E: e, Scope: "r2"}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if k, _ := e.invs.get("r1.1"); k.Status != Running {
		t.Fatalf("a turn of another tree ran r1's child: %s", k.Status)
	}
	if err := (&Scheduler{E: e, Scope: "r1"}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	r, _ := e.invs.get("r1")
	if r.Status != Completed || porttestJSON(t, r.Result) != `"parent done"` {
		t.Fatalf("got %s", r.Status)
	}
	if p, _ := e.invs.Prog("p"); p.Revision != 1 || porttestJSON(t, p.State) != `"parent done"` {
		t.Fatalf("prog %+v", p)
	}
}

func TestSpawnReportsFailure(t *testing.T) {
	e := engine(t, memStore(t), 1)
	src := `if input != nil { throw error("nope", "child says no") }
let k = act "spawn" {steps: 50000, input: 1}
let r = await {key: k.id}
return [r.status, r.error.kind, r.error.msg]`
	i := runTree(t, e, "r1", src, nil, 1_000_000)
	if i.Status != Completed || porttestJSON(t, i.Result) != `["failed","nope","child says no"]` {
		t.Fatalf("got %s %s", i.Status, porttestJSON(t, i.Result))
	}
}

func TestSpawnBounds(t *testing.T) {
	catch := func(body string) string {
		return `if input != nil { return 0 }
try { ` + body + ` } catch err { return [err.kind, err.msg] }`
	}
	for _, c := range []struct{ name, src, want string }{
		{"more steps than it has", catch(`act "spawn" {steps: 2000000, input: 1}`), `steps to lend`},
		{"fan-out", catch(`for i in range(20) { act "spawn" {steps: 10, input: 1} }`), `unsettled children (at most 16)`},
		{"bad steps", catch(`act "spawn" {steps: 0}`), `steps must be a positive int`},
		{"another prog, ungranted", catch(`act "spawn" {steps: 10, prog: "nope"}`), `may not start prog`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := engine(t, memStore(t), 1)
			out, err := e.Start(context.Background(), "r1", "p", []byte(c.src), nil, 1_000_000, 1)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status == Joining {
				e.Cancel("r1")
				r, _ := e.invs.get("r1")
				out.Result = r.Result
			}
			if got := porttestJSON(t, out.Result); !strings.Contains(got, c.want) {
				t.Fatalf("got %s %s, want %q", out.Status, got, c.want)
			}
		})
	}
	// Depth: each generation spawns the next until refused.
	e := engine(t, memStore(t), 1)
	src := `var d = 0
if input != nil { d = input }
try { let k = act "spawn" {steps: 200000 - d * 30000, input: d + 1}; return (await {key: k.id}).result } catch err { return [d, err.kind] }`
	i := runTree(t, e, "r1", src, nil, 1_000_000)
	if porttestJSON(t, i.Result) != fmt.Sprintf(`[%d,"limit"]`, MaxDepth) {
		t.Fatalf("depth: %s %s", i.Status, porttestJSON(t, i.Result))
	}
}

// Cancelling a parent cancels its tree and returns what was lent.
func TestCancelTree(t *testing.T) {
	e := engine(t, memStore(t), 1)
	src := `if input == 1 { return await {key: "never"} }
if input == nil { act "spawn" {steps: 50000, input: 1}; act "spawn" {steps: 50000, input: 2} }
if input == 2 { act "spawn" {steps: 1000, input: 1} }
return await {key: "never"}`
	i := runTree(t, e, "r1", src, nil, 1_000_000)
	if i.Status != Waiting || i.Live != 2 || i.Tree != 3 {
		t.Fatalf("before: %+v", i)
	}
	if err := e.Cancel("r1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r1.1", "r1.2", "r1.2.1"} {
		k, _ := e.invs.get(id)
		if k.Status != Cancelled {
			t.Errorf("%s is %s", id, k.Status)
		}
	}
	al, _ := e.accounts.Get("r1")
	if al.Lent != 0 || al.Charged+al.Held > al.Limit {
		t.Fatalf("allowance %+v", al)
	}
	if n, _ := (&Scheduler{E: e}).Next(); n != "" {
		t.Fatalf("runnable after cancel: %s", n)
	}
}

// panicky wraps an adapter and dies (as the process would) before or after
// its effect.
type panicky struct {
	inner  Adapter
	before bool
}

func (p panicky) Do(ctx context.Context, op *Operation) (any, error) {
	if p.before {
		runtime.Goexit()
	}
	p.inner.Do(ctx, op)
	runtime.Goexit()
	return nil, nil
}

// A spawn whose process died mid-act is settled by lookup on restart: if
// the child exists it is the outcome; if not, the spawn runs again, once.
func TestSpawnReconciles(t *testing.T) {
	for _, before := range []bool{false, true} {
		t.Run(fmt.Sprint("before=", before), func(t *testing.T) {
			dir := t.TempDir()
			s, err := store.Open(store.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			e, _, err := Open(s, port.NewNative(), engine(t, s, 0).Clock)
			if err != nil {
				t.Fatal(err)
			}
			e.Adapters[SpawnTag] = panicky{spawner{e}, before}
			dies(func() { e.Start(context.Background(), "r1", "p", []byte(sumKids), nil, 1_000_000, 1) })
			s.Close()
			s, err = store.Open(store.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			e, unknown, err := Open(s, e.Runtime, e.Clock)
			if err != nil || len(unknown) != 1 {
				t.Fatalf("open: %v %v", unknown, err)
			}
			if err := (&Scheduler{E: e, Scope: "r1"}).Run(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			i, _ := e.invs.get("r1")
			if i.Status != Completed || porttestJSON(t, i.Result) != `["r1.1","completed",235]` {
				t.Fatalf("got %s %s", i.Status, porttestJSON(t, i.Result))
			}
			op, _ := e.ledger.Get(OpID{"r1", 1})
			wantSource, wantReopened := "reconciled", uint64(0)
			if before {
				wantSource, wantReopened = "adapter", 1
			}
			if op.Outcome.Source != wantSource || op.Reopened != wantReopened {
				t.Fatalf("op %+v outcome %+v", op, op.Outcome)
			}
		})
	}
}

// Turns go round robin, and the cursor survives a new scheduler.
func TestSchedulerFair(t *testing.T) {
	e := engine(t, memStore(t), 1)
	src := `var j = 0
while j < 100000 { j += 1 }
return j`
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, id := range []string{"r1", "r2", "r10"} {
		e.Start(ctx, id, "p"+id, []byte(src), nil, 10_000_000, 1) // admitted, not run
	}
	invs, _ := e.List()
	if shown, err := e.Project(invs); err != nil || shown["r10"] != Queued {
		t.Fatalf("projected %v %v", shown, err)
	}
	var order []string
	sch := &Scheduler{E: e, Quantum: 1}
	for range 4 {
		tu, ok, err := sch.Step(context.Background())
		if err != nil || !ok || tu.Err != nil || tu.State.Status != Running {
			t.Fatalf("turn %+v %v %v", tu, ok, err)
		}
		order = append(order, tu.Invocation)
	}
	tu, _, _ := (&Scheduler{E: e, Quantum: 1}).Step(context.Background())
	order = append(order, tu.Invocation)
	if got := strings.Join(order, " "); got != "r1 r10 r2 r1 r10" {
		t.Fatalf("order %s", got)
	}
}

// The scheduler wakes an await whose deadline passed.
func TestSchedulerWakesTimeouts(t *testing.T) {
	e := engine(t, memStore(t), 1)
	now := int64(1000)
	e.Clock = func() int64 { return now }
	i := runTree(t, e, "r1", `try { return await {key: "x", timeout: 50} } catch err { return err.kind }`, nil, 100_000)
	if i.Status != Waiting {
		t.Fatalf("got %s", i.Status)
	}
	now = 1050
	if err := (&Scheduler{E: e}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	i, _ = e.invs.get("r1")
	if i.Status != Completed || porttestJSON(t, i.Result) != `"timeout"` {
		t.Fatalf("got %s", i.Status)
	}
}

// Starting another prog takes a grant: it runs with its own grants.
func TestSpawnAnotherProgNeedsAGrant(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Start(context.Background(), "r1", "helper", []byte(`return input`), data(t, int64(1)), 100_000, 1)
	src := `try { let k = act "spawn" {steps: 1000, prog: "helper", input: 5}; return (await {key: k.id}).result } catch err { return err.kind }`
	i := runTree(t, e, "r2", src, nil, 100_000)
	if porttestJSON(t, i.Result) != `"denied"` {
		t.Fatalf("ungranted: %s", porttestJSON(t, i.Result))
	}
	e.Ward().Grant("p", "spawn:helper")
	i = runTree(t, e, "r3", src, nil, 100_000)
	if porttestJSON(t, i.Result) != `5` {
		t.Fatalf("granted: %s", porttestJSON(t, i.Result))
	}
	// Revoked through another ward (another host's): the engine's ward
	// kept the grant, and the spawn's transaction finds its stamp moved.
	if ok, err := NewWard(e.Store, e.Clock).Revoke("p", "spawn:helper"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	i = runTree(t, e, "r4", src, nil, 100_000)
	if porttestJSON(t, i.Result) != `"denied"` {
		t.Fatalf("revoked elsewhere: %s", porttestJSON(t, i.Result))
	}
}

// A child's act of unknown outcome is resolved by an operator whose resolve
// stops right after it recorded the outcome (the process killed, or its
// context cancelled, before it drove the child on). The child must be left
// runnable: the next drive of its tree, from the root, finishes the tree.
// A child left Waiting beside its recorded outcome is given no turn (only
// the root is driven by hand; the scheduler runs the runnable), and the
// root waits for its report for ever.
func TestResolveInterruptedLeavesChildRunnable(t *testing.T) {
	const src = `if input != nil { return act "calc" {n: input} }
let a = act "spawn" {steps: 100000, input: 3}
return (await {key: a.id}).result + 1`
	dir := t.TempDir()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := Open(s, port.NewNative(), engine(t, s, 0).Clock)
	if err != nil {
		t.Fatal(err)
	}
	e.Adapters["calc"] = &recorder{crash: true}
	if !dies(func() {
		if _, err := e.Start(context.Background(), "r1", "p", []byte(src), nil, 1_000_000, 1); err != nil {
			t.Error(err)
		}
		(&Scheduler{E: e, Scope: "r1"}).Run(context.Background(), nil)
	}) {
		t.Fatal("the child's act did not crash")
	}
	s.Close() // the process is gone

	s, err = store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, unknown, err := Open(s, e.Runtime, e.Clock)
	if err != nil || len(unknown) != 1 || unknown[0].ID() != (OpID{"r1.1", 1}) {
		t.Fatalf("open: %v %v", unknown, err)
	}
	rec := &recorder{}
	e.Adapters["calc"] = rec
	// The tree is driven on: the child stops at its act, unknown.
	if _, err := e.Resume(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	if st, err := e.RunTree(context.Background(), "r1"); err != nil || st.Status != Waiting {
		t.Fatalf("the tree with an unknown act: %+v %v", st, err)
	}
	if st, err := e.State("r1.1"); err != nil || st.Status != Waiting || st.Unknown == nil {
		t.Fatalf("the child with an unknown act: %+v %v", st, err)
	}
	// The operator resolves the child's act; the resolve stops once the
	// outcome is recorded, before the child runs a step.
	stopped, stop := context.WithCancel(context.Background())
	stop()
	b, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(30)})
	if _, err := e.Resolve(stopped, OpID{"r1.1", 1}, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("resolve: %v", err)
	}
	if op, err := e.ledger.Get(OpID{"r1.1", 1}); err != nil || op.Phase != Recorded {
		t.Fatalf("the resolved act: %+v %v", op, err)
	}
	if kid, err := e.invs.get("r1.1"); err != nil || !kid.Runnable() {
		t.Fatalf("the child, its act's outcome recorded: %+v %v (not runnable: no turn will ever come)", kid, err)
	}
	// The operator (or the crash harness) drives the tree from its root.
	if _, err := e.Resume(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	st, err := e.RunTree(context.Background(), "r1")
	if err != nil || st.Status != Completed || porttestJSON(t, st.Result) != "31" {
		t.Fatalf("the tree after the resolve: %+v %v", st, err)
	}
	if len(rec.calls) != 0 {
		t.Fatalf("the resolved act was dispatched again: %v", rec.calls)
	}
}
