// pace_test.go tests how many slices a crossing asks for: a prog that
// computes holds the runtime for about a Quantum a crossing, no more.

package host

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
)

func TestPacer(t *testing.T) {
	var p Pacer
	if p.Slices() != 1 {
		t.Fatalf("the zero Pacer asks for %d", p.Slices())
	}
	for range 20 {
		p.Took(p.Slices(), Quantum/4, true)
	}
	if p.Slices() != MaxSlices {
		t.Fatalf("fast crossings: %d slices, want %d", p.Slices(), MaxSlices)
	}
	p.Took(p.Slices(), Quantum/4, false) // ended early (an act): no change
	p.Took(8, Quantum/4, true)           // asked for fewer (the lease): no change
	if p.Slices() != MaxSlices {
		t.Fatalf("%d", p.Slices())
	}
	p.Took(p.Slices(), 3*Quantum, true)
	if p.Slices() != MaxSlices/2 {
		t.Fatalf("a slow crossing: %d slices, want %d", p.Slices(), MaxSlices/2)
	}
	for range 20 {
		p.Took(p.Slices(), 10*Quantum, true)
	}
	if p.Slices() != 1 {
		t.Fatalf("slow crossings: %d slices, want 1", p.Slices())
	}
	p.Took(1, 3*Quantum/4, true) // past half the quantum: kept
	if p.Slices() != 1 {
		t.Fatalf("%d", p.Slices())
	}
}

// slowRuntime is a runtime whose slices each take at least per: it notes
// how many slices each crossing asked for.
type slowRuntime struct {
	port.RuntimePort
	per   time.Duration
	mu    sync.Mutex
	asked []uint64
}

func (s *slowRuntime) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	s.mu.Lock()
	s.asked = append(s.asked, max(req.Slices, 1))
	s.mu.Unlock()
	time.Sleep(time.Duration(max(req.Slices, 1)) * s.per)
	return s.RuntimePort.Step(ctx, req)
}

// Where a slice takes half a quantum or more, a crossing runs one: a prog
// that computes never holds the runtime for many quanta at a crossing.
func TestPacedBySliceTime(t *testing.T) {
	e := engine(t, memStore(t), 1)
	slow := &slowRuntime{RuntimePort: e.Runtime, per: Quantum / 2}
	e.Runtime = slow
	e.Quantum = 40
	src := []byte("var i = 0\nwhile true { i += 1 }")
	if _, err := e.Start(context.Background(), "r1", "p", src, nil, 1<<40, 1); err != nil {
		t.Fatal(err)
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if len(slow.asked) < 10 {
		t.Fatalf("%d crossings", len(slow.asked))
	}
	for i, k := range slow.asked {
		if k > 1 {
			t.Fatalf("crossing %d asked for %d slices of %s each", i, k, slow.per)
		}
	}
}

// Where slices are quick, crossings ask for many, never past the turn's
// quantum of slices, and the machine is where a slice a crossing leaves it.
func TestPacedTurn(t *testing.T) {
	src := []byte("var i = 0\nwhile true { i += 1 }")
	var used [2]uint64
	for _, paced := range []bool{false, true} {
		e := engine(t, memStore(t), 1)
		rt := &slowRuntime{RuntimePort: e.Runtime}
		e.Runtime = rt
		e.Quantum = 300
		if !paced {
			e.Cadence = Cadence{Steps: 1} // a checkpoint every slice: one a crossing
		}
		if _, err := e.Start(context.Background(), "r1", "p", src, nil, 1<<40, 1); err != nil {
			t.Fatal(err)
		}
		total := uint64(0)
		for _, k := range rt.asked {
			total += k
		}
		if total != 300 {
			t.Fatalf("paced %v: %d slices in a turn of 300", paced, total)
		}
		e.runsMu.Lock()
		used[boolIndex(paced)] = e.runs["r1"].used
		e.runsMu.Unlock()
	}
	if used[0] != used[1] {
		t.Fatalf("a turn of 300 slices: %d steps a slice a crossing, %d paced", used[0], used[1])
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// crossingLog is a runtime whose slices each take at least per, and that
// logs each crossing's invocation.
type crossingLog struct {
	port.RuntimePort
	per time.Duration
	mu  sync.Mutex
	log []string // invocation, or a mark
	big bool     // a crossing asked for more than one slice
}

func (c *crossingLog) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	inv := req.Invocation
	if req.Checkpoint != nil {
		if h, err := checkpoint.DecodeHeader(req.Checkpoint); err == nil {
			inv = h.Invocation
		}
	}
	c.mu.Lock()
	c.log = append(c.log, inv)
	c.big = c.big || req.Slices > 1
	c.mu.Unlock()
	time.Sleep(time.Duration(max(req.Slices, 1)) * c.per)
	return c.RuntimePort.Step(ctx, req)
}

func (c *crossingLog) mark(m string) {
	c.mu.Lock()
	c.log = append(c.log, m)
	c.mu.Unlock()
}

func (c *crossingLog) count(inv string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.log {
		if s == inv {
			n++
		}
	}
	return n
}

// Fairness: a prog that computes does not keep a prog that acts from its
// turn for more than a turn. Each slice here takes a quantum, so crossings
// run one slice each and a turn ends at its DefaultQuantum slices: counted
// in crossings, not timed, what a load on the machine cannot change.
func TestFairness(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	rt := &crossingLog{RuntimePort: e.Runtime, per: Quantum}
	e.Runtime = rt
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{E: e, Workers: 1, Poll: 5 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := e.Admit(context.Background(), "spin", "spin", "", []byte("var i = 0\nwhile true { i += 1 }"), nil, 1<<40, 1); err != nil {
		t.Fatal(err)
	}
	l.Notify()
	for deadline := time.Now().Add(time.Minute); rt.count("spin") < 3*DefaultQuantum; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the spinning prog did not run")
		}
	}
	rt.mark("admitted")
	if err := e.Admit(context.Background(), "acts", "acts", "", []byte(`return act "calc" {n: 1}`), nil, 1_000_000, 1); err != nil {
		t.Fatal(err)
	}
	l.Notify()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if st, err := e.State("acts"); err == nil && st.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the acting prog never ran")
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	spins := 0
	for _, s := range rt.log[slices.Index(rt.log, "admitted"):] {
		if s == "acts" {
			break
		}
		if s == "spin" {
			spins++
		}
	}
	// The turn under way when it came, then its own.
	if spins > DefaultQuantum+1 {
		t.Fatalf("the spinning prog crossed %d times before the acting one's first (a turn is %d slices)", spins, DefaultQuantum)
	}
	if rt.big {
		t.Fatal("a crossing asked for many slices of a quantum each")
	}
}
