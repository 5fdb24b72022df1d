// drive_test.go tests checkpoints when they are needed: lazy slices, the
// cadence, leased steps, live machines that expire, parking, and crashes in
// the middle of pure work.

package host

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// watchPort is a RuntimePort that watches the engine: before each slice it
// checks that the store's allowance covers every step run so far and the
// slice about to run (a crash at any point charges no less than was run),
// and it counts the checkpoints the engine asked for.
type watchPort struct {
	port.RuntimePort
	s   *store.Store
	inv string

	mu          sync.Mutex
	last        map[string]uint64 // the machine's steps after its last result, by invocation
	ran         map[string]uint64 // steps run, re-runs included
	calls       int
	checkpoints int      // results that carried one
	uncovered   []string // slices the allowance did not cover
	expireEvery int      // every n-th lazy continuation finds its machine gone
	lazyCalls   int
	crashAt     int // the process dies at this call (runtime.Goexit)
}

func (w *watchPort) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	w.mu.Lock()
	w.calls++
	if w.crashAt > 0 && w.calls == w.crashAt {
		w.mu.Unlock()
		runtime.Goexit()
	}
	inv, prev := req.Invocation, uint64(0)
	if req.Checkpoint != nil {
		h, err := checkpoint.DecodeHeader(req.Checkpoint)
		if err != nil {
			w.mu.Unlock()
			return nil, err
		}
		inv, prev = h.Invocation, h.Used
	} else {
		prev = w.last[inv]
		if w.lazyCalls++; w.expireEvery > 0 && w.lazyCalls%w.expireEvery == 0 {
			w.mu.Unlock()
			return nil, fmt.Errorf("%w: dropped by the test", port.ErrExpired)
		}
	}
	al, err := NewAccounts(w.s).Get(inv)
	if err == nil && al.Charged+al.Held < w.ran[inv]+req.Slice {
		w.uncovered = append(w.uncovered, fmt.Sprintf("%s: %d steps run and %d to run, %d charged and %d held", inv, w.ran[inv], req.Slice, al.Charged, al.Held))
	}
	w.mu.Unlock()
	res, err := w.RuntimePort.Step(ctx, req)
	if err != nil {
		return res, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last, w.ran = map[string]uint64{}, map[string]uint64{}
	}
	w.ran[inv] += res.Used - prev
	w.last[inv] = res.Used
	if res.Checkpoint != nil {
		w.checkpoints++
	}
	return res, nil
}

const computeSrc = `var s = 0
var i = 0
while i < 30000 { s += i % 13; i += 1 }
return s`

func watched(t *testing.T, s *store.Store, gen uint64) (*Engine, *watchPort) {
	e := engine(t, s, gen)
	w := &watchPort{RuntimePort: e.Runtime, s: s}
	e.Runtime = w
	return e, w
}

func allowanceOf(t *testing.T, e *Engine, inv string) Allowance {
	t.Helper()
	al, err := e.accounts.Get(inv)
	if err != nil {
		t.Fatal(err)
	}
	return al
}

func usedOf(t *testing.T, e *Engine, inv string) uint64 {
	t.Helper()
	h, err := checkpoint.DecodeHeader(mustCP(t, e, inv))
	if err != nil {
		t.Fatal(err)
	}
	return h.Used
}

// A prog that only computes has one checkpoint taken, at its end; every
// slice still runs, and is charged exactly.
func TestLazyCheckpoints(t *testing.T) {
	for _, c := range []struct {
		name    string
		cadence Cadence
		want    func(slices int, used uint64) bool
	}{
		{"default", Cadence{}, func(slices int, used uint64) bool { return slices == 1 }},
		{"every slice", Cadence{Steps: 1}, func(slices int, used uint64) bool { return uint64(slices) == (used+999)/1000 }},
		{"every 20000 steps", Cadence{Steps: 20_000}, func(slices int, used uint64) bool { return uint64(slices) == used/20_000+1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, w := watched(t, memStore(t), 1)
			e.Cadence = c.cadence
			out, err := e.Start(context.Background(), "inv", "p", []byte(computeSrc), nil, 10_000_000, 1)
			if err != nil || out.Status != Completed {
				t.Fatalf("%+v %v", out, err)
			}
			used := usedOf(t, e, "inv")
			if !c.want(w.checkpoints, used) {
				t.Fatalf("%d checkpoints over %d steps in %d slices", w.checkpoints, used, w.calls)
			}
			if al := allowanceOf(t, e, "inv"); al.Charged != used || al.Held != 0 {
				t.Fatalf("allowance %+v after %d steps", al, used)
			}
			if len(w.uncovered) > 0 {
				t.Fatalf("%d slices ran without their steps held: %s", len(w.uncovered), strings.Join(w.uncovered[:min(3, len(w.uncovered))], "; "))
			}
		})
	}
}

// Acts, awaits, spawns and pure work in between: every slice is covered by
// the allowance before it runs, the lease gives children what they are
// lent, and at the end what ran is what is charged.
func TestLeaseCoversSteps(t *testing.T) {
	src := []byte(`if input != nil {
  var k = 0
  while k < 3000 { k += 1 }
  return k + input
}
var t = 0
for n in range(5) {
  t += act "calc" {n: n}
  var j = 0
  while j < 2500 { j += 1 }
}
let kid = act "spawn" {steps: 50000, input: 7}
t += await {key: "go"}
t += (await {key: kid.id}).result
return t`)
	s := memStore(t)
	e, w := watched(t, s, 1)
	e.Adapters["calc"] = &recorder{}
	out, err := e.Start(context.Background(), "r1", "p", src, nil, 200_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := e.Send(context.Background(), "r1", "go", data(t, int64(1))); err != nil {
		t.Fatal(err)
	}
	out, err = e.RunTree(context.Background(), "r1")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "3108" {
		t.Fatalf("%+v %v", out, err)
	}
	if len(w.uncovered) > 0 {
		t.Fatalf("%d slices ran without their steps held: %s", len(w.uncovered), strings.Join(w.uncovered[:min(3, len(w.uncovered))], "; "))
	}
	// What the child ran (its allowance gone with it) is charged to its
	// parent too.
	parent, kid := allowanceOf(t, e, "r1"), w.ran["r1.6"]
	if kid == 0 || parent.Charged != usedOf(t, e, "r1")+kid || parent.Held != 0 || parent.Lent != 0 {
		t.Fatalf("r1: allowance %+v after %d steps, its child's %d (%v)", parent, usedOf(t, e, "r1"), kid, w.ran)
	}
}

// The runtime may let a live machine go between slices: the engine goes on
// from the stored checkpoint, with the same result; the steps run twice are
// charged twice.
func TestLiveMachineExpires(t *testing.T) {
	ref := engine(t, memStore(t), 1)
	want, err := ref.Start(context.Background(), "inv", "p", []byte(computeSrc), nil, 10_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, w := watched(t, memStore(t), 1)
	e.Cadence = Cadence{Steps: 7_000}
	w.expireEvery = 5
	got, err := e.Start(context.Background(), "inv", "p", []byte(computeSrc), nil, 10_000_000, 1)
	if err != nil || got.Status != Completed || string(got.Result) != string(want.Result) {
		t.Fatalf("got %+v %v, want %s", got, err, porttestJSON(t, want.Result))
	}
	used := usedOf(t, e, "inv")
	if al := allowanceOf(t, e, "inv"); al.Charged <= used || al.Charged != w.ran["inv"] || al.Held != 0 {
		t.Fatalf("allowance %+v; %d steps used, %d run", al, used, w.ran["inv"])
	}
}

// A host that stops between turns parks its live machines: their
// checkpoints are stored where they stand, the steps held are given back,
// and another process finishes them losing nothing.
func TestParkKeepsWork(t *testing.T) {
	ref := engine(t, memStore(t), 1)
	want, err := ref.Start(context.Background(), "inv", "p", []byte(computeSrc), nil, 10_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := memStore(t)
	e, w := watched(t, s, 1)
	e.Quantum = 5
	out, err := e.Start(context.Background(), "inv", "p", []byte(computeSrc), nil, 10_000_000, 1)
	if err != nil || out.Status != Running || !e.kept("inv") {
		t.Fatalf("%+v %v", out, err)
	}
	if err := e.Park(context.Background()); err != nil {
		t.Fatal(err)
	}
	used := usedOf(t, e, "inv")
	if e.kept("inv") || used != w.last["inv"] || used < 5000 {
		t.Fatalf("parked at %d steps, the machine at %d", used, w.last["inv"])
	}
	if al := allowanceOf(t, e, "inv"); al.Charged != used || al.Held != 0 {
		t.Fatalf("allowance %+v after parking at %d steps", al, used)
	}
	e2 := engine(t, s, 2)
	got, err := e2.Resume(context.Background(), "inv")
	if err != nil || got.Status != Completed || string(got.Result) != string(want.Result) {
		t.Fatalf("got %+v %v, want %s", got, err, porttestJSON(t, want.Result))
	}
	if al := allowanceOf(t, e2, "inv"); al.Charged != usedOf(t, e2, "inv") {
		t.Fatalf("allowance %+v after %d steps: work was lost", al, usedOf(t, e2, "inv"))
	}
}

// A stop (Ctrl-C, a drain) that comes as a turn ends, with the machine
// live, keeps its work: the next turn or Park stores it, charging exactly
// what is in the checkpoint.
func TestStopAtTurnEndKeepsWork(t *testing.T) {
	for _, at := range []int{1, 2, 3} { // the slice of the turn the stop comes in
		s := memStore(t)
		e := engine(t, s, 1)
		if err := e.Admit(context.Background(), "inv", "p", "", []byte(computeSrc), nil, 10_000_000, 1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		e.OnSlice = func(string, uint64) {
			if n++; n == at {
				cancel()
			}
		}
		e.driveTurn(ctx, "inv", 3)
		if err := e.Park(context.Background()); err != nil {
			t.Fatal(err)
		}
		used := usedOf(t, e, "inv")
		if al := allowanceOf(t, e, "inv"); al.Charged != used || al.Held != 0 || used == 0 {
			t.Fatalf("stop in slice %d: allowance %+v with %d steps in the checkpoint: work was lost", at, al, used)
		}
	}
}

// The process dies in the middle of pure work, at many points: the next
// one resumes from the last stored checkpoint and finishes with the same
// result, within the limit, charging at least what ran; no act runs twice.
func TestCrashMidCompute(t *testing.T) {
	src := []byte(`var t = 0
for n in range(3) {
  t += act "calc" {n: n}
  var j = 0
  var s = 0
  while j < 6000 { s = (s * 31 + j) % 10007; j += 1 }
  t += s
}
return t`)
	ref := engine(t, memStore(t), 1)
	ref.Adapters["calc"] = &recorder{}
	want, err := ref.Start(context.Background(), "inv", "p", src, nil, 10_000_000, 1)
	if err != nil || want.Status != Completed {
		t.Fatalf("%+v %v", want, err)
	}
	t.Logf("%d steps", usedOf(t, ref, "inv"))
	// A death at every 11th call of the runtime, 15 of them, with
	// RUNEHOST_LONG=1 (make test-long); every other one in make test.
	every := 22
	if longTests {
		every = 11
	}
	for crashAt := 3; crashAt < 160; crashAt += every {
		t.Run(fmt.Sprint(crashAt), func(t *testing.T) {
			dir := t.TempDir()
			s, err := store.Open(store.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			e, w := watched(t, s, 1)
			e.Adapters["calc"] = rec
			e.Cadence = Cadence{Steps: 4_000}
			w.crashAt = crashAt
			if !dies(func() { e.Start(context.Background(), "inv", "p", src, nil, 400_000, 1) }) {
				t.Skip("finished before the crash")
			}
			s.Close() // the process is gone; what it wrote survives
			s, err = store.Open(store.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			e2, _, err := Open(s, w.RuntimePort, e.Clock)
			if err != nil {
				t.Fatal(err)
			}
			e2.Adapters["calc"] = rec
			got, err := e2.Resume(context.Background(), "inv")
			if err != nil || got.Status != Completed || string(got.Result) != string(want.Result) {
				t.Fatalf("got %+v %v, want %s", got, err, porttestJSON(t, want.Result))
			}
			for call, n := range rec.calls {
				if n != 1 {
					t.Fatalf("act %s ran %d times", call, n)
				}
			}
			al := allowanceOf(t, e2, "inv")
			if al.Charged < usedOf(t, e2, "inv") || al.Charged > al.Limit || al.Held != 0 {
				t.Fatalf("allowance %+v after %d steps", al, usedOf(t, e2, "inv"))
			}
			if len(w.uncovered) > 0 {
				t.Fatalf("%d slices ran without their steps held: %s", len(w.uncovered), strings.Join(w.uncovered[:min(3, len(w.uncovered))], "; "))
			}
		})
	}
}

// An operator's request stores the checkpoint at the next slice.
func TestCheckpointOnRequest(t *testing.T) {
	e, w := watched(t, memStore(t), 1)
	e.Quantum = 3
	if out, err := e.Start(context.Background(), "inv", "p", []byte(computeSrc), nil, 10_000_000, 1); err != nil || out.Status != Running {
		t.Fatalf("%+v %v", out, err)
	}
	before := usedOf(t, e, "inv")
	e.Checkpoint("inv")
	if _, err := e.Resume(context.Background(), "inv"); err != nil {
		t.Fatal(err)
	}
	if after := usedOf(t, e, "inv"); after <= before || w.checkpoints != 1 {
		t.Fatalf("stored at %d steps, then %d; %d checkpoints", before, after, w.checkpoints)
	}
}
