// forward.go holds an operator's command for a tree another host drives on
// a shared store: it is asked of that host (store.Ask), which does it where
// the tree's turns run; a host that does not answer is gone, and once its
// claims lapse the command takes the tree over here.

package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/store"
)

// hostOp is a command asked of the host that drives a tree.
type hostOp struct {
	Op      string `cbor:"1,keyasint"` // opCancel, opReady, opSettle, opRelease
	Inv     string `cbor:"2,keyasint"`
	Ordinal uint64 `cbor:"3,keyasint,omitempty"` // opSettle's act
	Reply   []byte `cbor:"4,keyasint,omitempty"` // opSettle's outcome
}

const (
	opCancel  = "cancel"
	opReady   = "ready"   // resume
	opSettle  = "settle"  // resolve
	opRelease = "release" // give the tree up, for migrate
)

// hostAnswer is the host's answer: its error's text and class, none when
// it was done.
type hostAnswer struct {
	Err   string `cbor:"1,keyasint,omitempty"`
	Class string `cbor:"2,keyasint,omitempty"`
}

// classes are the errors an answer carries by name, so that the asker
// reads them as the host's own (an API's not found, conflict, ...).
var classes = map[string]error{
	"no-such-invocation": ErrNoSuchInvocation,
	"no-such-op":         ErrUnknownOp,
	"ended":              ErrEnded,
	"transition":         ErrBadTransition,
	"claimed":            ErrClaimed,
	"no-space":           store.ErrNoSpace,
}

// HostError is an error a command met on the host it was asked of.
type HostError struct {
	Host  string
	Msg   string
	class error
}

func (e *HostError) Error() string { return e.Msg + " (on host " + e.Host + ")" }
func (e *HostError) Unwrap() error { return e.class }

// forwardFor bounds how long a command waits for the host that drives its
// tree: to answer, or to be found gone with its claims lapsed.
func forwardFor() time.Duration { return 2*ClaimFor + 10*time.Second }

// elsewhere does op by do, here; when do meets a tree another live host
// drives, it asks that host to do op instead. A host that does not answer
// is gone or going: once its claims lapse (ClaimFor), do takes the tree
// over here; meanwhile it looks again every SharedPoll.
func (e *Engine) elsewhere(op hostOp, do func() error) error {
	if e.claims == nil {
		return do()
	}
	ctx, cancel := context.WithTimeout(context.Background(), forwardFor())
	defer cancel()
	told := false
	for {
		err := do()
		var ce *ClaimError
		if !errors.As(err, &ce) || ce.Host == "" || ce.Host == e.claims.host {
			return err
		}
		err = e.askHost(ctx, ce.Host, op)
		switch {
		case err == nil && op.Op == opRelease:
			continue // given up there: do takes it
		case !errors.Is(err, store.ErrNobody) && !errors.Is(err, ErrClaimed):
			return err // done there, or refused there
		}
		if errors.Is(err, store.ErrNobody) && !told && e.OnWaitHost != nil {
			told = true
			e.OnWaitHost(fmt.Sprintf("%s %s: host %s drives its tree and does not answer: waiting for its claims to lapse (within %s) to take the tree over", op.Op, op.Inv, ce.Host, ClaimFor))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: host %s drives its tree and did not do it, nor did its claim lapse, within %s: %w", op.Op, op.Inv, ce.Host, forwardFor(), ce)
		case <-time.After(SharedPoll):
		}
	}
}

// askHost asks host to do op and waits for its answer, or for host to be
// found gone (its beat lapsed): a host that took the request as it died
// never answers, and that is store.ErrNobody, as if it had not taken it.
// A live host is never asked twice: what it is doing, it may yet do.
func (e *Engine) askHost(ctx context.Context, host string, op hostOp) error {
	req, err := cbor.Marshal(op)
	if err != nil {
		return err
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		b   []byte
		err error
	}
	got := make(chan answer, 1)
	go func() {
		b, err := e.Store.Ask(actx, "host."+host, req)
		got <- answer{b, err}
	}()
	var a0 answer
	for waiting := true; waiting; {
		select {
		case a0 = <-got:
			waiting = false
		case <-time.After(SharedPoll):
			if e.hostGone(host) {
				return fmt.Errorf("%s %s: host %s took the request and is gone: %w", op.Op, op.Inv, host, store.ErrNobody)
			}
		}
	}
	b, err := a0.b, a0.err
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: asked of host %s, which drives its tree: no answer within %s (it may yet do it)", op.Op, op.Inv, host, forwardFor())
		}
		return err
	}
	var a hostAnswer
	if err := cbor.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("%s %s: host %s answered what is not an answer: %w", op.Op, op.Inv, host, err)
	}
	if a.Err == "" && a.Class == "" {
		return nil
	}
	return &HostError{Host: host, Msg: a.Err, class: classes[a.Class]}
}

// hostGone says whether host's beat has lapsed: it drives nothing now.
func (e *Engine) hostGone(host string) bool {
	var live bool
	err := e.Store.View(func(tx *store.Tx) error {
		var err error
		live, err = liveTx(tx, host)
		return err
	})
	return err == nil && !live
}

// serveOps answers the commands other hosts ask of this one, until the
// returned stop.
func (e *Engine) serveOps(host string) (stop func(), err error) {
	return e.Store.Serve("host."+host, e.answerOp)
}

// answerOp does what another host asks, here, where the tree is driven:
// never asked on again (a tree this host no longer holds answers
// ErrClaimed, and the asker looks again).
func (e *Engine) answerOp(req []byte) []byte {
	var op hostOp
	err := cbor.Unmarshal(req, &op)
	if err == nil {
		switch op.Op {
		case opCancel:
			err = e.cancelHere(op.Inv)
		case opReady:
			err = e.readyHere(op.Inv)
		case opSettle:
			err = e.settleHere(OpID{Invocation: op.Inv, Ordinal: op.Ordinal}, op.Reply)
		case opRelease:
			err = e.releaseTree(op.Inv)
		default:
			err = fmt.Errorf("no command %q", op.Op)
		}
	} else {
		err = fmt.Errorf("a request that does not decode: %w", err)
	}
	if err == nil && op.Op != opRelease {
		e.wakeLoops()
	}
	var a hostAnswer
	if err != nil {
		a.Err = err.Error()
		for name, c := range classes {
			if errors.Is(err, c) {
				a.Class = name
			}
		}
		var le *LedgerError
		if a.Class == "" && errors.As(err, &le) {
			a.Class = "transition" // a conflict, as the API reads it
		}
	}
	b, _ := cbor.Marshal(a) // strings only
	return b
}

// releaseTree gives up the tree of inv, which this host drives, for a
// command on another host to take it: within the tree's lock, its live
// machines are stored as checkpoints first.
func (e *Engine) releaseTree(inv string) error {
	root := rootOf(inv)
	unlock := e.holds.lock(root)
	defer unlock()
	c := e.claims
	if !e.holdsClaim(root) {
		return &ClaimError{Root: root, Why: "this host does not hold it"}
	}
	if err := e.parkTree(root); err != nil {
		return err
	}
	if err := c.release(root); err != nil {
		return err
	}
	c.forget(root)
	return nil
}

// wakeDriver tells the Loops of the host that drives inv's tree, on a
// store shared by hosts, that it may have work (Loop.Run hears it): a
// send through one host wakes a tree another drives at once. A word lost
// costs that host's next look (SharedPoll).
func (e *Engine) wakeDriver(inv string) {
	c := e.claims
	if c == nil {
		return
	}
	var r claimRecord
	if err := e.Store.View(func(tx *store.Tx) error { _, err := tx.Get(claimKey(rootOf(inv)), &r); return err }); err != nil || r.Host == "" {
		return
	}
	if r.Host == c.host {
		e.wakeLoops()
		return
	}
	e.Store.Tell("wake."+r.Host, []byte(inv)) // a hint there (ready.go)
}

// wakers are the Loops of this engine, told of work a command made.
type wakers struct {
	mu sync.Mutex
	fs map[*Loop]bool
}

func (e *Engine) addWaker(l *Loop) (remove func()) {
	e.wakers.mu.Lock()
	defer e.wakers.mu.Unlock()
	if e.wakers.fs == nil {
		e.wakers.fs = map[*Loop]bool{}
	}
	e.wakers.fs[l] = true
	return func() {
		e.wakers.mu.Lock()
		delete(e.wakers.fs, l)
		e.wakers.mu.Unlock()
	}
}

func (e *Engine) wakeLoops() {
	e.wakers.mu.Lock()
	defer e.wakers.mu.Unlock()
	for l := range e.wakers.fs {
		l.Notify()
	}
}
