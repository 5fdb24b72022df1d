// forward_test.go checks that an operator's command reaches a tree another
// host drives on a shared store: asked of that host while it lives, taken
// over once it is gone.

package host

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/store"
)

// blind is an act that blocks until let go and cannot be looked up: one
// left in flight by a host that dies becomes unknown, for an operator.
type blind struct {
	n    atomic.Int32
	gate chan struct{}
	once sync.Once
}

func (b *blind) Do(context.Context, *Operation) (any, error) {
	b.n.Add(1)
	<-b.gate
	return int64(7), nil
}

func (b *blind) open() { b.once.Do(func() { close(b.gate) }) }

// opHosts is three hosts on one store, each with the blind act.
func opHosts(t *testing.T) ([]*Engine, *blind) {
	es := sharedHosts(t, 3, newJournal())
	bl := &blind{gate: make(chan struct{})}
	for _, e := range es {
		e.Adapters["blind"] = bl
		e.Ward().Grant(AnyProg, "blind")
	}
	return es, bl
}

// loopOn runs a Loop of e until the test ends; the blind act is let go
// first, for the Loop's turns to end.
func loopOn(t *testing.T, e *Engine, bl *blind) {
	runLoop(t, e)
	t.Cleanup(bl.open)
}

// admitOn admits src on e and waits for it to reach want.
func admitOn(t *testing.T, e *Engine, src string, want Status) string {
	t.Helper()
	id, err := e.NewInvocationID()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Admit(context.Background(), id, "p"+id, "", []byte(src), nil, 1<<30, 1); err != nil { // a prog each: results published side by side
		t.Fatal(err)
	}
	waitStatus(t, e, id, want)
	return id
}

// kill makes e as good as dead to the others: its beat is no longer
// renewed and it answers no more (its Loop, if any, is fenced out).
func kill(e *Engine) {
	close(e.claims.stop)
	<-e.claims.done
}

const waitGo = `await {key: "go"}
return 2`

// Cancel, resume, resolve and migrate made through one host (b) reach the
// tree another live host (a) drives: a does them, and goes on driving.
func TestCommandsReachTheDrivingHost(t *testing.T) {
	es, bl := opHosts(t)
	a, b, c := es[0], es[1], es[2]
	loopOn(t, a, bl)

	// cancel
	id := admitOn(t, a, waitGo, Waiting)
	if err := b.Cancel(id); err != nil {
		t.Fatalf("cancel through another host: %v", err)
	}
	waitStatus(t, a, id, Cancelled)

	// resume: a pause lifted, and the run goes on where it is driven
	id = admitOn(t, a, waitGo, Waiting)
	if _, err := a.invs.Pause(id, "held by the test"); err != nil {
		t.Fatal(err)
	}
	if err := b.Deliver(id, "go", []byte{0xf6}); err != nil {
		t.Fatal(err)
	}
	if err := b.Ready(id); err != nil {
		t.Fatalf("resume through another host: %v", err)
	}
	waitStatus(t, a, id, Completed)

	// migrate: a gives the tree up, b stores the replacement and frees it
	id = admitOn(t, a, waitGo, Waiting)
	if _, err := a.invs.Pause(id, "needs a migration"); err != nil {
		t.Fatal(err)
	}
	in, err := a.Inspect(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Migrate(id, in.Checkpoint, nil, false); err != nil {
		t.Fatalf("migrate through another host: %v", err)
	}
	if err := b.Deliver(id, "go", []byte{0xf6}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a, id, Completed) // driven by a again

	// resolve: c dies inside an act that cannot be looked up; a takes the
	// tree over and finds the act unknown; b resolves it, through a.
	loopOn(t, c, bl)
	cid, _ := c.NewInvocationID()
	if err := c.Admit(context.Background(), cid, "p", "", []byte(`return act "blind" {} + 1`), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	for bl.n.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	kill(c)
	st := waitUnknown(t, a, cid)
	if err := b.Settle(OpID{Invocation: cid, Ordinal: st.Unknown.Ordinal}, reply(t, int64(41))); err != nil {
		t.Fatalf("resolve through another host: %v", err)
	}
	st = waitStatus(t, a, cid, Completed)
	if got := porttestJSON(t, st.Result); got != "42" {
		t.Fatalf("resolved run's result %s, want 42", got)
	}
	if owner(t, b, cid) != a.Host() {
		t.Fatalf("the resolved tree is driven by %q, want %s", owner(t, b, cid), a.Host())
	}
}

// The same commands against a tree whose host died: each waits for the
// dead host's claims to lapse and takes the tree over.
func TestCommandsTakeADeadHostsTree(t *testing.T) {
	es, bl := opHosts(t)
	a, b := es[0], es[1]
	loopOn(t, a, bl)
	cancelled := admitOn(t, a, waitGo, Waiting)
	resumed := admitOn(t, a, waitGo, Waiting)
	if _, err := a.invs.Pause(resumed, "held by the test"); err != nil {
		t.Fatal(err)
	}
	migrated := admitOn(t, a, waitGo, Waiting)
	if _, err := a.invs.Pause(migrated, "needs a migration"); err != nil {
		t.Fatal(err)
	}
	in, err := a.Inspect(migrated)
	if err != nil {
		t.Fatal(err)
	}
	resolved, _ := a.NewInvocationID()
	if err := a.Admit(context.Background(), resolved, "q", "", []byte(`return act "blind" {} + 1`), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	for bl.n.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	kill(a)
	killed := time.Now()
	var told atomic.Int64
	b.OnWaitHost = func(msg string) {
		if strings.Contains(msg, "does not answer") {
			told.Add(1)
		}
	}

	if err := b.Cancel(cancelled); err != nil {
		t.Fatalf("cancel of a dead host's tree: %v", err)
	}
	t.Logf("cancelled %s after the host died (claims last %s)", time.Since(killed).Round(time.Millisecond), ClaimFor)
	if told.Load() != 1 {
		t.Errorf("the cancel said %d times that it waits for the dead host's claims, want once", told.Load())
	}
	waitStatus(t, b, cancelled, Cancelled)
	if err := b.Ready(resumed); err != nil {
		t.Fatalf("resume of a dead host's tree: %v", err)
	}
	if _, err := b.Migrate(migrated, in.Checkpoint, nil, false); err != nil {
		t.Fatalf("migrate of a dead host's tree: %v", err)
	}
	op := OpID{Invocation: resolved, Ordinal: 1}
	if err := b.Settle(op, reply(t, int64(41))); err != nil {
		t.Fatalf("resolve of a dead host's act: %v", err)
	}
	loopOn(t, b, bl)
	for _, id := range []string{resumed, migrated} {
		if err := b.Deliver(id, "go", []byte{0xf6}); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, b, resumed, Completed)
	waitStatus(t, b, migrated, Completed)
	if st := waitStatus(t, b, resolved, Completed); porttestJSON(t, st.Result) != "42" {
		t.Fatalf("resolved run's result %s, want 42", porttestJSON(t, st.Result))
	}
}

// waitUnknown waits until id's state shows an act of unknown outcome.
func waitUnknown(t *testing.T, e *Engine, id string) *RunState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := e.State(id)
		if err == nil && st.Unknown != nil && st.Unknown.Phase == Unresolved {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s shows no unknown act within a minute: %+v %v", id, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// owner is the host whose claim id's tree is under.
func owner(t *testing.T, e *Engine, id string) string {
	t.Helper()
	var r claimRecord
	if err := e.Store.View(func(tx *store.Tx) error { _, err := tx.Get(claimKey(rootOf(id)), &r); return err }); err != nil {
		t.Fatal(err)
	}
	return r.Host
}

// A send through one host wakes a tree another host drives at once: the
// driving host's Loop, which would not look again for an hour, is told.
func TestSendWakesTheDrivingHost(t *testing.T) {
	es := sharedHosts(t, 2, newJournal())
	a, b := es[0], es[1]
	l := &Loop{E: a, Workers: 2, Poll: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	id, _ := a.NewInvocationID()
	if err := a.Admit(context.Background(), id, "p", "", []byte(waitGo), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	l.Notify() // as the server does at an admission
	waitStatus(t, a, id, Waiting)
	if err := b.Deliver(id, "go", []byte{0xf6}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a, id, Completed)
}

// A host that takes a command's request and dies before it answers (on
// NATS an unsubscribe is not instant: a request can land on a host that
// is stopping) never answers; the command finds the host gone by its beat
// and takes the tree over, rather than wait out its whole bound.
func TestCommandOutlivesAHostThatDiesAsked(t *testing.T) {
	es, bl := opHosts(t)
	a, b := es[0], es[1]
	loopOn(t, a, bl)
	id := admitOn(t, a, waitGo, Waiting)
	host := a.Host()
	kill(a)
	gate := make(chan struct{})
	defer close(gate)
	stop, err := a.Store.Serve("host."+host, func([]byte) []byte { <-gate; return nil }) // takes it, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	start := time.Now()
	if err := b.Cancel(id); err != nil {
		t.Fatalf("cancel of a tree whose host died holding the request: %v", err)
	}
	t.Logf("cancelled %s after the host died (claims last %s, the bound is %s)", time.Since(start).Round(time.Millisecond), ClaimFor, forwardFor())
	waitStatus(t, b, id, Cancelled)
}
