// loop_test.go runs the continuous scheduler: many trees at once, deadlines
// woken on time, and a cancel that stops a running turn at its next slice.

package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
)

// untilSettled runs a loop until every invocation in ids stops being
// runnable (or the test's time runs out), then stops it.
func untilSettled(t *testing.T, e *Engine, ids ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{E: e, Workers: 4, Poll: 5 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		all := true
		for _, id := range ids {
			st, err := e.State(id)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Status.Terminal() {
				all = false
			}
		}
		if all {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := e.Park(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLoopRunsTreesAndDeadlines(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Adapters["calc"] = &recorder{}
	progs := map[string]string{
		"spin":    `var s = 0; for i in range(20000) { s += i }; return s`,
		"acts":    actsProg,
		"timeout": `try { return await {key: "never", timeout: 30} } catch err { return err.kind }`,
		"kids":    `if input == 3 { return 7 }; let k = act "spawn" {steps: 100000, input: 3}; return (await {key: k.id}).result`,
	}
	want := map[string]string{"spin": "199990000", "timeout": `"timeout"`, "kids": "7"}
	var ids []string
	for i := 0; i < 3; i++ {
		for name, src := range progs {
			id := fmt.Sprintf("%s%d", name, i)
			if name == "kids" {
				id = fmt.Sprintf("r%d", 100+i) // a child is named ROOT.N; each its own prog: runs of one prog at once conflict
			}
			if err := e.Admit(context.Background(), id, id, "", []byte(src), data(t, int64(0)), 10_000_000, 1); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	untilSettled(t, e, ids...)
	for _, id := range ids {
		st, err := e.State(id)
		if err != nil || st.Status != Completed {
			t.Fatalf("%s: %+v %v", id, st, err)
		}
		name := id[:len(id)-1]
		if id[0] == 'r' {
			name = "kids"
		}
		if w, ok := want[name]; ok && dataText(st.Result) != w {
			t.Errorf("%s: result %s, want %s", id, dataText(st.Result), w)
		}
	}
}

// countingRuntime counts the slices run.
type countingRuntime struct {
	port.RuntimePort
	steps atomic.Int64
}

func (c *countingRuntime) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	c.steps.Add(1)
	return c.RuntimePort.Step(ctx, req)
}

func TestLoopCancelStopsTheRunningTurn(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	rt := &countingRuntime{RuntimePort: e.Runtime}
	e.Runtime = rt
	if err := e.Admit(context.Background(), "r1", "forever", "", []byte(`var i = 0; while true { i += 1 }`), nil, 1<<40, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One turn lasts a million slices: only a stop ends it early.
	l := &Loop{E: e, Workers: 2, Quantum: 1_000_000}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.Run(ctx) }()
	for rt.steps.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	before := rt.steps.Load()
	if err := e.Cancel("r1"); err != nil {
		t.Fatal(err)
	}
	// The slice running when the cancel came, and the one that checkpoints
	// the live machine, and what ran while this goroutine waited for a core
	// on a loaded machine (CI on 2 cores saw 5): a handful, where the turn
	// had a million to go.
	if n := rt.steps.Load() - before; n > 20 {
		t.Fatalf("%d slices ran between the cancel and its return", n)
	}
	st, _ := e.State("r1")
	if st.Status != Cancelled {
		t.Fatalf("status %v", st.Status)
	}
	after := rt.steps.Load()
	time.Sleep(20 * time.Millisecond)
	if n := rt.steps.Load(); n != after {
		t.Fatalf("%d slices ran after the cancel", n-after)
	}
	cancel()
	wg.Wait()
}

// A Loop takes its turns from the hints of its engine's own commits: with
// a poll of an hour it lists the run index once, at its start, and an
// invocation's acts, its sleep and its child still run to the end, the
// sleep woken at its deadline rather than at the next poll.
func TestLoopTurnsFromHints(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Adapters["calc"] = &recorder{}
	src := `var s = 0
for i in range(20) { s += act "calc" {n: i} }
try { await {key: "nap.sleep", timeout: 30} } catch err {}
if input == 3 { return s }
let k = act "spawn" {steps: 100000, input: 3}
return s + (await {key: k.id}).result`
	if err := e.Admit(context.Background(), "r1", "p", "", []byte(src), data(t, int64(0)), 10_000_000, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &Loop{E: e, Workers: 2, Poll: time.Hour}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		st, err := e.State("r1")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status.Terminal() {
			if st.Status != Completed || dataText(st.Result) != "3800" {
				t.Fatalf("%+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done within a minute: %+v (the run index listed %d times)", st, l.listings.Load())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := l.listings.Load(); n != 1 {
		t.Errorf("the run index listed %d times, want 1", n)
	}
}
