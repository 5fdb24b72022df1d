// engine_test.go drives invocations through the engine: acts recorded and
// dispatched once, a crash between attempt and outcome reported Unknown and
// never re-run, events kept for a later await, and a run interrupted between
// slices resumed to the same result.

package host

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// recorder is a test adapter that counts its calls per argument.
type recorder struct {
	mu    sync.Mutex
	calls map[string]int
	crash bool // panic (as if the process died) after recording the call
}

// dies runs f on a goroutine of its own and reports whether it died there
// (an adapter called runtime.Goexit, as if the process were killed).
func dies(f func()) bool {
	done, finished := make(chan struct{}), false
	go func() {
		defer close(done)
		f()
		finished = true
	}()
	<-done
	return !finished
}

func (r *recorder) Do(_ context.Context, op *Operation) (any, error) {
	tag, args := op.Tag, op.Args
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	d, _ := checkpoint.DecodeData(args)
	j, _ := checkpoint.DataToJSON(d)
	r.calls[tag+string(j)]++
	if r.crash {
		runtime.Goexit() // the process dies here: nothing after runs
	}
	n := d.(*checkpoint.Map)
	v, _ := n.Get("n")
	return v.(int64) * 10, nil
}

func engine(t *testing.T, s *store.Store, gen uint64) *Engine {
	var clock atomic.Int64 // the loop's workers read it at once
	clock.Store(1_700_000_000_000)
	e := NewEngine(s, port.NewNative(), gen, func() int64 { return clock.Add(1) })
	if _, err := e.Ward().Grant(AnyProg, "calc"); err != nil {
		t.Fatal(err)
	}
	return e
}

func data(t *testing.T, v any) []byte {
	b, err := checkpoint.EncodeData(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const actsProg = `
var total = 0
for i in range(5) { total += act "calc" {n: i} }
var s = 0
var j = 0
while j < 3000 { s += j; j += 1 }
return total + s`

func TestEngineRunsActsOnce(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	rec := &recorder{}
	e.Adapters["calc"] = rec
	out, err := e.Start(context.Background(), "inv", "p", []byte(actsProg), nil, 1_000_000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Completed || porttestJSON(t, out.Result) != "4498600" {
		t.Fatalf("got %s %s", out.Status, porttestJSON(t, out.Result))
	}
	for i := 0; i < 5; i++ {
		if rec.calls[fmt.Sprintf(`calc{"n":%d}`, i)] != 1 {
			t.Fatalf("calls %v", rec.calls)
		}
	}
	al, _ := e.accounts.Get("inv")
	h, _ := checkpoint.DecodeHeader(mustCP(t, e, "inv"))
	if al.Held != 0 || al.Charged != h.Used {
		t.Fatalf("allowance %+v, used %d", al, h.Used)
	}
	p, _ := e.invs.Prog("p")
	if p.Revision != 1 {
		t.Fatalf("prog revision %d", p.Revision)
	}
}

func mustCP(t *testing.T, e *Engine, inv string) []byte {
	cp, err := e.checkpoint(inv)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func porttestJSON(t *testing.T, b []byte) string {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := checkpoint.DataToJSON(d)
	return string(j)
}

// The process dies while the adapter runs: after the restart the act is
// Unknown, the adapter is not called again, and an operator's outcome lets
// the invocation go on.
func TestEngineCrashDuringAct(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{crash: true}
	e := engine(t, s, 1)
	e.Adapters["calc"] = rec
	if !dies(func() { e.Start(context.Background(), "inv", "p", []byte(actsProg), nil, 1_000_000, 7) }) {
		t.Fatal("the adapter did not crash")
	}
	s.Close() // the process is gone

	s, err = store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec.crash = false
	e = engine(t, s, 2)
	e.Adapters["calc"] = rec
	unknown, err := e.ledger.Recover(2)
	if err != nil || len(unknown) != 1 {
		t.Fatalf("recover: %v, %v", unknown, err)
	}
	e.accounts.Recover("inv")
	out, err := e.Drive(context.Background(), "inv")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Waiting || out.Unknown == nil || out.Unknown.Phase != Unresolved {
		t.Fatalf("got %+v", out)
	}
	invs, _ := e.List()
	if shown, err := e.Project(invs); err != nil || shown["inv"] != Unknown {
		t.Fatalf("projected %v %v", shown, err)
	}
	if rec.calls[`calc{"n":0}`] != 1 {
		t.Fatalf("the act was dispatched again: %v", rec.calls)
	}
	// An operator says it did happen, with result 0.
	b, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(0)})
	if _, err := e.ledger.Record(OpID{"inv", 1}, Outcome{Reply: b, Source: "operator"}); err != nil {
		t.Fatal(err)
	}
	out, err = e.Drive(context.Background(), "inv")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "4498600" {
		t.Fatalf("after resolution: %+v %v", out, err)
	}
	if rec.calls[`calc{"n":0}`] != 1 || rec.calls[`calc{"n":1}`] != 1 {
		t.Fatalf("calls %v", rec.calls)
	}
	al, _ := e.accounts.Get("inv")
	if al.Held != 0 || al.Charged+al.Held > al.Limit {
		t.Fatalf("allowance %+v", al)
	}
}

func TestEngineAwait(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	src := []byte(`let v = await {key: "approve"}
return {approved: v.ok, by: v.user}`)
	out, err := e.Start(context.Background(), "inv", "p", src, nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("got %+v %v", out, err)
	}
	m := &checkpoint.Map{}
	m.Set("ok", true)
	m.Set("user", "ada")
	if _, err := e.boxes.Deliver("inv", "approve", data(t, m)); err != nil {
		t.Fatal(err)
	}
	out, err = e.Drive(context.Background(), "inv")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != `{"approved":true,"by":"ada"}` {
		t.Fatalf("got %+v %v", out, err)
	}
}

// An event delivered before the prog reaches its await is kept.
func TestEngineEarlyEvent(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	src := []byte(`var j = 0
while j < 5000 { j += 1 }
return await {key: "go"}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // admit and store, but run nothing yet
	if _, err := e.Start(ctx, "inv", "p", src, nil, 1_000_000, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if _, err := e.boxes.Deliver("inv", "go", data(t, "early")); err != nil {
		t.Fatal(err)
	}
	out, err := e.Drive(context.Background(), "inv")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != `"early"` {
		t.Fatalf("got %+v %v", out, err)
	}
}

// A run stopped between slices and resumed by another engine on the same
// store ends as an uninterrupted one does.
func TestEngineResumeBetweenSlices(t *testing.T) {
	src := []byte(`var s = 0
var i = 0
while i < 20000 { s += i % 13; i += 1 }
return s`)
	ref := engine(t, memStore(t), 1)
	want, err := ref.Start(context.Background(), "inv", "p", src, nil, 10_000_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	s := memStore(t)
	e := engine(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	steps := 0
	e.Clock = func() int64 {
		if steps++; steps == 5 { // a few crossings in: slices a crossing grow as they go
			cancel()
		}
		return 1
	}
	if _, err := e.Start(ctx, "inv", "p", src, nil, 10_000_000, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	e2 := engine(t, s, 2)
	e2.accounts.Recover("inv")
	got, err := e2.Drive(context.Background(), "inv")
	if err != nil || got.Status != Completed || string(got.Result) != string(want.Result) {
		t.Fatalf("got %+v %v, want %s", got, err, porttestJSON(t, want.Result))
	}
}

// Resolve settles an Unknown act as an operator says and goes on.
func TestEngineResolve(t *testing.T) {
	dir := t.TempDir()
	s, _ := store.Open(store.Options{Dir: dir})
	e, _, err := Open(s, port.NewNative(), func() int64 { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	e.Adapters["calc"] = &recorder{crash: true}
	e.Ward().Grant(AnyProg, "calc")
	dies(func() { e.Start(context.Background(), "inv", "p", []byte(actsProg), nil, 1_000_000, 7) })
	s.Close()
	s, _ = store.Open(store.Options{Dir: dir})
	defer s.Close()
	e, unknown, err := Open(s, port.NewNative(), func() int64 { return 1 })
	if err != nil || len(unknown) != 1 {
		t.Fatalf("open: %v %v", unknown, err)
	}
	e.Adapters["calc"] = &recorder{}
	b, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(0)})
	if _, err := e.Resolve(context.Background(), OpID{"inv", 2}, b); !errors.Is(err, ErrUnknownOp) {
		t.Fatalf("resolving an act never proposed: %v", err)
	}
	out, err := e.Resolve(context.Background(), OpID{"inv", 1}, b)
	if err != nil || out.Status != Completed {
		t.Fatalf("got %+v %v", out, err)
	}
	if _, err := e.Resolve(context.Background(), OpID{"inv", 1}, b); err == nil {
		t.Fatal("resolved a settled act")
	}
}

// An await with a timeout raises a catchable "timeout" error once the clock
// passes its deadline, counted from when it first waited.
func TestEngineAwaitTimeout(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	now := int64(10_000)
	e.Clock = func() int64 { return now }
	src := []byte(`try { return await {key: "go", timeout: 500} } catch err { return err.kind }`)
	out, err := e.Start(context.Background(), "inv", "p", src, nil, 100_000, 1)
	if err != nil || out.Status != Waiting || out.Deadline != 10_500 {
		t.Fatalf("got %+v %v", out, err)
	}
	now = 10_499
	if out, err = e.Resume(context.Background(), "inv"); err != nil || out.Status != Waiting {
		t.Fatalf("before the deadline: %+v %v", out, err)
	}
	now = 10_500
	out, err = e.Resume(context.Background(), "inv")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != `"timeout"` {
		t.Fatalf("after the deadline: %+v %v", out, err)
	}
}

// A selector the engine cannot wait on is the prog's error, not a hang.
func TestEngineAwaitBadSelector(t *testing.T) {
	for _, sel := range []string{`1`, `{}`, `{key: 1}`, `{keys: [1]}`, `{key: "a", timeout: -1}`, `{key: "a", timeout: 1.5}`} {
		e := engine(t, memStore(t), 1)
		out, err := e.Start(context.Background(), "inv", "p", []byte(`try { return await `+sel+` } catch err { return err.kind }`), nil, 100_000, 1)
		if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != `"value"` {
			t.Errorf("%s: got %+v %v", sel, out, err)
		}
	}
}

// failingPort is the native machine whose steps fail after the first few,
// as a sandbox that traps or answers garbage does.
type failingPort struct {
	port.RuntimePort
	ok int // steps that succeed
}

func (f *failingPort) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	if f.ok--; f.ok < 0 {
		return nil, errors.New("sandbox step: guest trapped")
	}
	return f.RuntimePort.Step(ctx, req)
}

// TestEngineRuntimeFailurePauses: an invocation whose runtime fails is
// paused with the reason at once, not left looking as if it ran, and a
// resume on a working runtime finishes it.
func TestEngineRuntimeFailurePauses(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Runtime = &failingPort{RuntimePort: port.NewNative(), ok: 2}
	src := []byte("var n = 0\nwhile n < 5000 { n += 1 }\nreturn n")
	if _, err := e.Start(context.Background(), "inv", "p", src, nil, 1_000_000, 7); err == nil {
		t.Fatal("the failing runtime's error was lost")
	}
	i, err := e.invs.get("inv")
	if err != nil || i.Runnable() || i.Paused != "invocation inv: sandbox step: guest trapped" {
		t.Fatalf("after a runtime failure: %+v %v", i, err)
	}
	e.Runtime = port.NewNative()
	out, err := e.Resume(context.Background(), "inv")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "5000" {
		t.Fatalf("resume: %+v %v", out, err)
	}
}
