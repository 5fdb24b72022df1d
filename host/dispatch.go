// dispatch.go holds an act's way through the engine: answering the act the
// machine reported, its attempt decided (caps, then the ward), its adapter
// called under its time limit, reconciliation after a crash, and its
// outcome recorded. The order of the records is in engine.go's opening.

package host

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// answer finds or produces the reply to the suspension in h. It returns an
// Outcome instead when the invocation must stop: waiting for an event, or at
// an act of unknown outcome.
func (e *Engine) answer(ctx context.Context, inv string, h *checkpoint.Header, fresh *prepared, took *taken) ([]byte, *settlement, *RunState, error) {
	p := h.Pending
	if nearly(p.Seq-1, p.Seq, e.Bounds.Journal) {
		e.warn(inv, "journal", fmt.Sprintf("%d acts and awaits, near the cap of %d", p.Seq, e.Bounds.Journal))
	}
	if p.Kind == checkpoint.PendingAwait {
		if p.Seq > e.Bounds.Journal {
			return limitReply("the journal is full: %d acts and awaits (cap %d)", p.Seq, e.Bounds.Journal), nil, nil, nil
		}
		b, out, err := e.awaitReply(inv, p, took)
		return b, nil, out, err
	}
	id := OpID{inv, p.Seq}
	var op *Operation
	var err error
	if fresh != nil && fresh.id == id && fresh.op != nil {
		op = fresh.op // proposed and attempted with its checkpoint, just now
	} else if op, err = e.ledger.Propose(Operation{Invocation: inv, Ordinal: p.Seq, Tag: p.Tag, Args: p.Args}); err != nil {
		return nil, nil, nil, err
	}
	switch op.Phase {
	case Proposed:
		o, err := e.dispatch(ctx, id, op)
		if err != nil {
			return nil, nil, nil, err
		}
		if o == nil {
			return e.unknown(inv, id, p.Tag)
		}
		return o.Reply, &settlement{id: id, tag: op.Tag, outcome: o}, nil, nil
	case Attempted, Unresolved:
		if fresh != nil && fresh.id == id && op.Phase == Attempted {
			// Attempted with the checkpoint, just now: an attempt, once
			// recorded, is carried out even if the host is stopping.
			o := e.perform(context.WithoutCancel(ctx), op, fresh)
			if o == nil {
				return e.unknown(inv, id, p.Tag)
			}
			return o.Reply, &settlement{id: id, tag: op.Tag, outcome: o}, nil, nil
		}
		if op.Phase == Attempted && op.Attempt.Generation == e.Generation {
			return nil, nil, nil, fmt.Errorf("operation %s: attempted by this process and still open", id)
		}
		if rec, ok := e.Adapters[op.Tag].(Reconciler); ok && op.Phase == Unresolved {
			if op, err = e.reconcile(ctx, rec, op); err != nil {
				return nil, nil, nil, err
			}
			if op.Phase == Recorded || op.Phase == Consumed {
				break
			}
		}
		if i, err := e.invs.get(inv); err == nil && i.Status == Running {
			e.invs.Move(inv, Waiting)
		}
		return nil, nil, &RunState{Status: Waiting, Waiting: "the outcome of act " + p.Tag, Unknown: op}, nil
	}
	b, err := e.reply(op.Outcome)
	return b, &settlement{id: id, tag: op.Tag}, nil, err
}

// exhausted stops an invocation with no steps left to reserve: it waits if
// steps it lent to children will come back, and fails otherwise (what its
// children used, and slices lost to crashes, count against its limit).
func (e *Engine) exhausted(inv string, emits []Emit) (*RunState, error) {
	al, err := e.accounts.Get(inv)
	if err != nil {
		return nil, err
	}
	if al.Lent > 0 {
		if _, err := e.invs.Move(inv, Waiting); err != nil {
			return nil, err
		}
		return &RunState{Status: Waiting, Waiting: fmt.Sprintf("the %d steps lent to its children", al.Lent), Emits: emits}, nil
	}
	ce := &checkpoint.Error{Kind: "steps", Msg: fmt.Sprintf("the allowance is spent: %d of %d steps charged (its children's and lost slices included)", al.Charged, al.Limit)}
	if _, err := e.invs.MoveFailed(inv, Failed, ce); err != nil {
		return nil, err
	}
	return &RunState{Status: Failed, Err: ce, Emits: emits}, nil
}

// unknown leaves an attempt whose adapter could not say how it ended
// unresolved, and the invocation waiting on it.
func (e *Engine) unknown(inv string, id OpID, tag string) ([]byte, *settlement, *RunState, error) {
	op, err := e.ledger.Unresolve(id)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := e.invs.Move(inv, Waiting); err != nil && !errors.Is(err, ErrBadTransition) {
		return nil, nil, nil, err
	}
	return nil, nil, &RunState{Status: Waiting, Waiting: "the outcome of act " + tag, Unknown: op}, nil
}

// Reconciler is an adapter that can look an attempt up by its idempotency key
// (the operation's id) after a crash. Its answer is authoritative: found, the
// effect happened with that reply; not found, it never happened and will not.
// An adapter without this contract leaves an unresolved attempt Unknown until
// an operator resolves it.
type Reconciler interface {
	Adapter
	Lookup(ctx context.Context, op *Operation) (reply any, found bool, err error)
}

// Recovery says what resuming does with an attempt that an earlier process
// left without an outcome, from its adapter's lookup (which has no effect):
// redo, the attempt is done again, which has the same effect; found, the
// effect is known and its outcome is taken; otherwise an operator must say
// how it ended (runehost resolve), and why is why.
func (e *Engine) Recovery(ctx context.Context, op *Operation) (redo, found bool, why string) {
	rec, ok := e.Adapters[op.Tag].(Reconciler)
	if !ok {
		return false, false, "act " + op.Tag + " cannot be looked up"
	}
	_, found, err := rec.Lookup(ctx, op)
	if err != nil {
		return false, false, err.Error()
	}
	return !found, found, ""
}

// reconcile settles an unresolved attempt through its adapter's lookup: a
// found effect is recorded as the outcome; one that never happened is
// reopened and dispatched again.
func (e *Engine) reconcile(ctx context.Context, rec Reconciler, op *Operation) (*Operation, error) {
	v, found, err := rec.Lookup(ctx, op)
	if err != nil {
		return op, nil // the lookup failed: still Unknown
	}
	if !found {
		if op, err = e.ledger.Reopen(op.ID()); err != nil {
			return nil, err
		}
		o, err := e.dispatch(ctx, op.ID(), op)
		if err != nil {
			return nil, err
		}
		if o == nil {
			return e.ledger.Unresolve(op.ID())
		}
		return e.record(op.ID(), op.Tag, *o)
	}
	b, err := encodeReply(checkpoint.Reply{Value: e.hostSecrets(v)})
	if err != nil {
		return nil, err
	}
	return e.record(op.ID(), op.Tag, Outcome{Reply: b, Source: "reconciled", At: e.Clock()})
}

// prepared is an act's attempt as decided just before it is recorded: the
// grant that allows it, or why it is denied or refused.
type prepared struct {
	id      OpID
	attempt Attempt
	op      *Operation // as attempted, once its transaction committed
	refused []byte     // a reply of kind "limit": a cap refused it
	denied  error      // the ward denied it
	adapter Adapter
	tag     string
	plain   Attempt // the attempt before its tokens are decided (attemptPreparedTx)
	metered bool    // its adapter is Metered: it holds tokens
	tokens  uint64  // what it reserves, when metered
	limits  Limits
	grants  []Grant
	stamped bool // decided on grants read at stamp: its attempt checks it (checkGrantsTx)
	stamp   uint64
}

// prepare decides an act's attempt: the caps, then the ward, now.
func (e *Engine) prepare(ctx context.Context, op *Operation) (*prepared, error) {
	i, err := e.invs.get(op.Invocation)
	if err != nil {
		return nil, err
	}
	return e.prepareFor(ctx, i.Prog, op)
}

// prepareFor is prepare for an act of an invocation of prog.
func (e *Engine) prepareFor(ctx context.Context, prog string, op *Operation) (*prepared, error) {
	id := op.ID()
	pr := &prepared{id: id, tag: op.Tag, adapter: e.Adapters[op.Tag], attempt: Attempt{Generation: e.Generation, At: e.Clock()}}
	defer func() { pr.plain = pr.attempt }()
	pr.limits = e.limitsOf(pr.adapter)
	if _, ok := pr.adapter.(Reconciler); ok {
		pr.attempt.Contract = "lookup"
	}
	switch {
	case id.Ordinal > e.Bounds.Journal:
		pr.refused, pr.attempt.Executor = limitReply("the journal is full: %d acts and awaits (cap %d)", id.Ordinal, e.Bounds.Journal), "bounds"
	case len(op.Args) > pr.limits.Args:
		pr.refused, pr.attempt.Executor = limitReply("act %s: arguments of %d bytes are over the cap of %d", op.Tag, len(op.Args), pr.limits.Args), "bounds"
	default:
		if nearly(0, uint64(len(op.Args)), uint64(pr.limits.Args)) {
			e.warn(id.Invocation, "act-args", fmt.Sprintf("act %s: arguments of %d bytes, near the cap of %d", op.Tag, len(op.Args), pr.limits.Args))
		}
		pr.attempt.Grant, pr.stamp, pr.denied = e.ward.authorize(ctx, prog, op, pr.adapter)
		pr.grants, pr.stamped = op.Grants, op.Tag != SpawnTag
		if pr.denied != nil && !errors.Is(pr.denied, ErrDenied) {
			return nil, pr.denied
		}
		pr.attempt.Executor = op.Tag
		if pr.denied != nil {
			pr.attempt.Executor = "ward" // nothing is dispatched
		}
	}
	if m, ok := pr.adapter.(Metered); ok && pr.refused == nil && pr.denied == nil {
		want, err := m.Reserve(op)
		if err != nil {
			var ce *checkpoint.Error
			if !errors.As(err, &ce) {
				ce = &checkpoint.Error{Kind: "value", Msg: err.Error()}
			}
			pr.denied, pr.attempt.Executor = ce, "tokens" // nothing is dispatched
		} else {
			pr.metered, pr.tokens = true, want
		}
	}
	return pr, nil
}

// retryGranted runs fn as Store.Retry does, where fn attempts the act
// *pr decided: when the grants changed since (errGrantsChanged), the ward
// drops what it kept and the act is decided again (again) and fn run again.
func (e *Engine) retryGranted(d store.Durability, pr **prepared, again func() (*prepared, error), fn func(tx *store.Tx) error) error {
	for tries := 0; ; tries++ {
		err := e.Store.Retry(d, fn)
		if !errors.Is(err, errGrantsChanged) || tries == maxRegrants {
			return err
		}
		e.ward.changed()
		if *pr, err = again(); err != nil {
			return err
		}
	}
}

// dispatch attempts an act (synced) and performs it; it returns the
// outcome, for the caller to record, or nil when the outcome is unknown.
func (e *Engine) dispatch(ctx context.Context, id OpID, op *Operation) (*Outcome, error) {
	pr, err := e.prepare(ctx, op)
	if err != nil {
		return nil, err
	}
	err = e.retryGranted(store.Synced, &pr, func() (*prepared, error) { return e.prepare(ctx, op) }, func(tx *store.Tx) error {
		_, err := attemptPreparedTx(tx, pr)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.log(id.Invocation, e.callEvents(op, pr.attempt.At, pr.attempt.Grant)...) // the log is a view; the attempt is recorded
	return e.perform(context.WithoutCancel(ctx), op, pr), nil
}

// perform runs an attempted act's adapter, unless it was denied or refused,
// and returns its outcome.
func (e *Engine) perform(ctx context.Context, op *Operation, pr *prepared) *Outcome {
	if pr.refused != nil {
		return &Outcome{Reply: pr.refused, Source: "bounds", At: e.Clock()}
	}
	var r checkpoint.Reply
	var ce *checkpoint.Error
	if errors.As(pr.denied, &ce) {
		r.Err = ce // the adapter said what was wrong with the act (bad arguments)
	} else if pr.denied != nil {
		r.Err = &checkpoint.Error{Kind: "denied", Msg: strings.TrimPrefix(pr.denied.Error(), "denied: ")}
	} else {
		op.Attempt, op.Grants = &pr.attempt, pr.grants
		v, err, unknown := e.do(ctx, op, pr)
		if unknown {
			return nil
		}
		if errors.As(err, &ce) {
			r.Err = ce
		} else if err != nil {
			r.Err = &checkpoint.Error{Kind: "failed", Msg: err.Error()}
		} else {
			r.Value = e.hostSecrets(v)
		}
		if r.Err != nil && e.Redactor != nil {
			c := *r.Err
			c.Msg = e.Redactor.Known(c.Msg)
			r.Err = &c
		}
	}
	b, err := encodeReply(r)
	switch {
	case err != nil:
		b, _ = checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "failed", Msg: "reply is not data: " + err.Error()}})
	case len(b) > pr.limits.Reply:
		b = limitReply("act %s: reply of %d bytes is over the cap of %d", op.Tag, len(b), pr.limits.Reply)
	case nearly(0, uint64(len(b)), uint64(pr.limits.Reply)):
		e.warn(op.Invocation, "act-reply", fmt.Sprintf("act %s: reply of %d bytes, near the cap of %d", op.Tag, len(b), pr.limits.Reply))
	}
	return &Outcome{Reply: b, Source: "adapter", At: e.Clock()}
}

// do calls an adapter under its time limit. A panic is the act's failure,
// not the host's. If the adapter gave up because its time ran out (or the
// host is stopping), whether the effect happened is unknown: unknown is
// true, and the attempt stays open. An adapter that overruns its limit
// without giving up (blocked in a call that ignores its context) is left
// behind after a grace: its outcome is unknown too, and the engine goes on.
func (e *Engine) do(ctx context.Context, op *Operation, pr *prepared) (v any, err error, unknown bool) {
	if pr.limits.Time <= 0 {
		return e.call(ctx, op, pr)
	}
	ctx, cancel := context.WithTimeout(ctx, pr.limits.Time)
	defer cancel()
	type result struct {
		v       any
		err     error
		unknown bool
		exited  bool // the adapter's goroutine exited (runtime.Goexit)
	}
	done := make(chan result, 1) // buffered: a late adapter never blocks
	go func() {
		r := result{exited: true}
		defer func() { done <- r }()
		r.v, r.err, r.unknown = e.call(ctx, op, pr)
		r.exited = false
	}()
	answer := func(r result) (any, error, bool) {
		if r.exited {
			runtime.Goexit() // as if the adapter had run on this goroutine
		}
		return r.v, r.err, r.unknown
	}
	select {
	case r := <-done:
		return answer(r)
	case <-ctx.Done():
	}
	grace := time.NewTimer(min(OverrunGrace, pr.limits.Time))
	defer grace.Stop()
	select {
	case r := <-done:
		return answer(r)
	case <-grace.C:
		e.warn(op.Invocation, "act-overrun", fmt.Sprintf("act %s: still running %s after its limit of %s; its outcome is unknown", op.Tag, min(OverrunGrace, pr.limits.Time), pr.limits.Time))
		return nil, context.DeadlineExceeded, true
	}
}

// OverrunGrace is how long an adapter past its time limit has to answer
// before the engine leaves it behind.
const OverrunGrace = time.Second

// call calls an adapter, its panic turned into the act's failure.
func (e *Engine) call(ctx context.Context, op *Operation, pr *prepared) (v any, err error, unknown bool) {
	defer func() {
		if p := recover(); p != nil {
			v, err, unknown = nil, &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("act %s: the adapter failed: %v", op.Tag, p)}, false
		}
	}()
	ctx, st := e.streamFor(ctx, op)
	defer st.end()
	v, err = pr.adapter.Do(ctx, op)
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return nil, err, true
	}
	return v, err, false
}

// encodeReply encodes a reply the machine will accept: an error's kind and
// message made valid UTF-8, and a kind the machine keeps for itself (steps,
// fault) or an empty one turned into "failed". A reply the machine refused
// would be recorded and replayed for ever.
func encodeReply(r checkpoint.Reply) ([]byte, error) {
	if r.Err != nil {
		ce := *r.Err
		ce.Kind, ce.Msg = strings.ToValidUTF8(ce.Kind, "?"), strings.ToValidUTF8(ce.Msg, "?")
		if ce.Kind == "" || ce.Kind == "steps" || ce.Kind == "fault" {
			ce.Msg = "(" + ce.Kind + ") " + ce.Msg
			ce.Kind = "failed"
		}
		ce.Pos, ce.Trace = "", nil
		r.Err = &ce
	}
	b, err := checkpoint.EncodeReply(r)
	if err != nil {
		return nil, err
	}
	if _, err := checkpoint.DecodeReply(b); err != nil {
		return nil, err
	}
	return b, nil
}

// record settles an operation in the ledger and then logs its outcome.
func (e *Engine) record(id OpID, tag string, o Outcome) (*Operation, error) {
	reply := o.Reply
	o, err := e.byRef(o)
	if err != nil {
		return nil, err
	}
	var op *Operation
	var charge *tokenCharge
	// The effect happened: its outcome may use the disk reserve. It is
	// synced before anyone consumes it; the tokens the attempt held are
	// charged with it.
	err = e.Store.RetryInReserve(store.Synced, func(tx *store.Tx) error {
		var err error
		if op, charge, err = e.recordChargedTx(tx, id, o, reply); err != nil {
			return err
		}
		return wakeTx(tx, id.Invocation)
	})
	if err != nil {
		return nil, err
	}
	e.warnCharge(id.Invocation, charge)
	return op, e.outcomeRecorded(op)
}

// outcomeRecorded logs a recorded outcome.
func (e *Engine) outcomeRecorded(op *Operation) error {
	reply, err := e.reply(op.Outcome)
	if err != nil {
		return err
	}
	return e.log(op.Invocation, e.resultEvents(op, op.Outcome, reply)...)
}
