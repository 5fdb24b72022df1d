// claim_test.go tests many hosts on one shared store: engines on their own
// connections to one JetStream stream share the trees, each act is done
// once, and a host that stops renewing has its trees taken over.

package host

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/store/jetstream"
)

// journal records each act's effect once it happened, as a real service
// would, and answers lookups from it: the reconciling adapter of the tests.
type journal struct {
	mu    sync.Mutex
	done  map[string]int // op: how many times its effect happened
	block map[string]chan struct{}
}

func newJournal() *journal {
	return &journal{done: map[string]int{}, block: map[string]chan struct{}{}}
}

func opKey(op *Operation) string { return fmt.Sprintf("%s#%d", op.Invocation, op.Ordinal) }

func (j *journal) Do(ctx context.Context, op *Operation) (any, error) {
	j.mu.Lock()
	j.done[opKey(op)]++
	b := j.block[opKey(op)]
	j.mu.Unlock()
	if b != nil {
		<-b // the effect happened; its host stops before it records the outcome
	}
	return int64(op.Ordinal), nil
}

func (j *journal) Lookup(_ context.Context, op *Operation) (any, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return int64(op.Ordinal), j.done[opKey(op)] > 0, nil
}

func (j *journal) count(op string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[op]
}

func (j *journal) twice(t *testing.T) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	for op, n := range j.done {
		if n != 1 {
			t.Errorf("act %s done %d times", op, n)
		}
	}
}

// sharedHosts opens n engines on one shared stream of an embedded node, each
// on a connection of its own, as separate host processes would.
func sharedHosts(t testing.TB, n int, j *journal) []*Engine {
	t.Helper()
	node, err := jetstream.StartNode(jetstream.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	old := ClaimFor
	ClaimFor = 900 * time.Millisecond
	t.Cleanup(func() { ClaimFor = old })
	var es []*Engine
	for range n {
		s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: []string{node.ClientURL()}, Memory: true, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e, unknown, err := Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
		if err != nil || len(unknown) > 0 {
			t.Fatal(err, unknown)
		}
		e.Ward().Grant(AnyProg, "rec")
		e.Adapters["rec"] = j
		es = append(es, e)
	}
	return es
}

// run starts a Loop of e until the test ends; stop ends it.
func runLoop(t testing.TB, e *Engine) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&Loop{E: e, Workers: 2, OnTurn: func(tu Turn) {
			if tu.Err != nil {
				fmt.Println("TURN", e.Host(), tu.Invocation, tu.Err)
			}
		}}).Run(ctx)
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

func waitDone(t testing.TB, e *Engine, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, id := range ids {
		for {
			st, err := e.State(id)
			if err == nil && st.Status == Completed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not completed within %s: %+v %v", id, within, st, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

const claimProg = `var s = 0
for i in range(5) { s += act "rec" {} }
return s`

// Two hosts admit and drive trees of their own on one store; an event sent
// through one host wakes a tree the other drives.
func TestHostsShareAStore(t *testing.T) {
	j := newJournal()
	es := sharedHosts(t, 2, j)
	for _, e := range es {
		runLoop(t, e)
	}
	var ids []string
	for i := range 10 {
		e := es[i%2]
		id, err := e.NewInvocationID()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Admit(context.Background(), id, fmt.Sprintf("p%d", i), "", []byte(claimProg), nil, 1<<30, 1); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitDone(t, es[0], ids, 30*time.Second)
	j.twice(t)
	// A waiting tree of host 0, woken through host 1.
	id, _ := es[0].NewInvocationID()
	if err := es[0].Admit(context.Background(), id, "w", "", []byte(`let e = await {key: "go"}
return e + 1`), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	for st, _ := es[1].State(id); st == nil || st.Status != Waiting; st, _ = es[1].State(id) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := es[1].Deliver(id, "go", []byte{0x18, 41}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, es[1], []string{id}, 30*time.Second) // as long as the first wait: under -race on two busy cores a beat can lapse
	// Host 1 cancels a tree host 0 drives by asking host 0, which keeps
	// the claim (forward_test.go tests every command).
	id2, _ := es[0].NewInvocationID()
	es[0].Admit(context.Background(), id2, "w", "", []byte(`let e = await {key: "go"}
return e`), nil, 1<<30, 1)
	if err := es[1].Cancel(id2); err != nil {
		t.Fatalf("cancel through the other host: %v", err)
	}
	if got := owner(t, es[1], id2); got != es[0].Host() {
		t.Fatalf("the cancelled tree's claim is %q's, want %s's", got, es[0].Host())
	}
}

// A host that stops (its beat no longer renewed, an act's effect done but
// its outcome not recorded) has its tree taken over by another within the
// claim's time and a round; the act is found done, not done again; and the
// stopped host, come back, commits nothing more for the tree.
func TestTakeover(t *testing.T) {
	j := newJournal()
	es := sharedHosts(t, 2, j)
	a, b := es[0], es[1]
	id, _ := a.NewInvocationID()
	gate := make(chan struct{})
	j.block[fmt.Sprintf("%s#%d", id, 3)] = gate
	open := true
	t.Cleanup(func() {
		if open {
			close(gate)
		}
	})
	stopA := runLoop(t, a)
	if err := a.Admit(context.Background(), id, "p", "", []byte(claimProg), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	for { // host a is inside the third act
		j.mu.Lock()
		n := j.done[fmt.Sprintf("%s#%d", id, 3)]
		j.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(a.claims.stop) // a stops renewing: as if killed, its act in flight
	<-a.claims.done
	killed := time.Now()
	runLoop(t, b)
	waitDone(t, b, []string{id}, 10*ClaimFor)
	took := time.Since(killed)
	t.Logf("taken over and finished %s after the host stopped (claims last %s)", took.Round(time.Millisecond), ClaimFor)
	st, _ := b.State(id)
	if st.Status != Completed || string(st.Result) != string([]byte{0x0f}) { // 1+2+3+4+5 = 15
		t.Fatalf("result %+v", st)
	}
	// a comes back: its act returns, and it may not record it or go on.
	close(gate)
	open = false
	time.Sleep(ClaimFor / 2)
	stopA()
	j.twice(t)
	st2, _ := b.State(id)
	if st2.Status != Completed || string(st2.Result) != string(st.Result) {
		t.Fatalf("after the old host came back: %+v", st2)
	}
}

// stallRT is a runtime whose slices stall, once armed, until let go: a host
// stopped mid-slice (a pause, a partition) that comes back later.
type stallRT struct {
	port.RuntimePort
	mu    sync.Mutex
	armed bool
	in    chan struct{} // closed when a slice stalls
	gate  chan struct{}
}

func (r *stallRT) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	res, err := r.RuntimePort.Step(ctx, req)
	r.mu.Lock()
	stall := r.armed && err == nil && res.Kind == port.Act // the slice that ends at the next act
	if stall {
		r.armed = false
	}
	r.mu.Unlock()
	if stall {
		close(r.in)
		<-r.gate
	}
	return res, err
}

// A host that stalls mid-slice while another takes its tree over and
// finishes it cannot, come back, commit the slice it was in: the act that
// slice reached, which the other host did meanwhile, is not done again, and
// its checkpoint, events and step counts go nowhere.
func TestStaleHostIsFenced(t *testing.T) {
	j := newJournal()
	es := sharedHosts(t, 2, j)
	a, b := es[0], es[1]
	rt := &stallRT{RuntimePort: a.Runtime, in: make(chan struct{}), gate: make(chan struct{})}
	a.Runtime = rt
	t.Cleanup(func() {
		select {
		case <-rt.gate:
		default:
			close(rt.gate)
		}
	})
	id, _ := a.NewInvocationID()
	// After the second act a slice of work, where a stalls.
	prog := `var s = 0
for i in range(2) { s += act "rec" {} }
var k = 0
while k < 20000 { k += 1 }
for i in range(3) { s += act "rec" {} }
return s`
	var once sync.Once
	a.OnSlice = func(inv string, _ uint64) {
		j.mu.Lock()
		n := j.done[fmt.Sprintf("%s#%d", id, 2)]
		j.mu.Unlock()
		if n > 0 {
			once.Do(func() { rt.mu.Lock(); rt.armed = true; rt.mu.Unlock() })
		}
	}
	stopA := runLoop(t, a)
	if err := a.Admit(context.Background(), id, "p", "", []byte(prog), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	<-rt.in // a is mid-slice
	close(a.claims.stop)
	<-a.claims.done
	runLoop(t, b)
	waitDone(t, b, []string{id}, 10*ClaimFor)
	var n []events.Event
	for len(n) == 0 || n[len(n)-1].Outcome == nil { // b's last event: the outcome, logged after the status
		time.Sleep(10 * time.Millisecond)
		n, _ = b.Events(id, 1, 0)
	}
	alw, _ := b.accounts.Get(id)
	close(rt.gate) // a comes back and ends its turn
	time.Sleep(ClaimFor / 2)
	stopA()
	j.twice(t)
	got, _ := b.State(id)
	if got.Status != Completed || string(got.Result) != string([]byte{0x0f}) {
		t.Fatalf("the stale host changed the tree: %+v", got)
	}
	if now, _ := b.accounts.Get(id); now != alw {
		t.Fatalf("the stale host wrote the allowance: %+v, was %+v", now, alw)
	}
	evs, _ := b.Events(id, 1, 0)
	if len(evs) != len(n) {
		t.Fatalf("the stale host logged: %d events, were %d", len(evs), len(n))
	}
	calls := map[string]int{}
	for _, ev := range evs {
		if ev.ToolCall != nil {
			calls[ev.ToolCall.CallID]++
		}
	}
	for c, n := range calls {
		if n > 1 {
			t.Errorf("the run log shows %q %d times", c, n)
		}
	}
	if a.Fenced() == 0 || b.Fenced() != 0 { // what an operator sees in health
		t.Errorf("fenced: the stale host %d, the other %d", a.Fenced(), b.Fenced())
	}
}
