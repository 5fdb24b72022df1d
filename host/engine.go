// engine.go holds the engine: its configuration, admission of invocations,
// driving them in turns (drive.go holds the loop, dispatch.go an act's way,
// grants.go the grant commands),
// resuming, sending, resolving and cancelling.
//
// Order matters for crashes. At a suspension the checkpoint is stored first
// (synced), so the act's arguments are pinned before it is proposed; the
// attempt is synced, with it, before the adapter runs; the outcome is written
// before the prog consumes it and synced by the next synced commit, before
// anything that depends on it leaves the host. A restart resumes from the
// stored checkpoint: an act with a recorded outcome is answered from the
// record, an act attempted without an outcome is reported Unknown and never
// re-run.

package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// Adapter performs one kind of act. Its error is the act's outcome (the prog
// sees it as an error of kind "failed"), not a failure of the engine. The
// operation's identity (invocation and ordinal) is the idempotency key an
// adapter can give the world.
type Adapter interface {
	Do(ctx context.Context, op *Operation) (reply any, err error)
}

// Engine runs invocations durably.
type Engine struct {
	Store      *store.Store
	Runtime    port.RuntimePort
	Adapters   map[string]Adapter // by act tag
	Generation uint64             // of this host process, increasing across restarts
	Clock      func() int64       // unix ms, recorded in each slice's checkpoint

	// OnEvent, if set, sees each run event as it is stored.
	OnEvent func(ev events.Event)
	// OnEmit, if set, sees each event a prog emits, as its slice ends.
	OnEmit func(inv string, e Emit)
	// OnSlice, if set, sees each slice run, with the steps it used.
	OnSlice func(inv string, steps uint64)
	// OnWarn, if set, sees each warning that a cap is nearly reached.
	OnWarn func(inv, msg string)
	// OnRecovered, if set, sees each act another host process left
	// attempted without an outcome in a tree this one took over (a shared
	// store; Open returns those of a store of its own).
	OnRecovered func(op *Operation)
	// OnWaitHost, if set, hears once per command that the host driving
	// its tree does not answer, and that the command waits for that
	// host's claims to lapse to take the tree over (forward.go).
	OnWaitHost func(msg string)
	// Redactor strips secrets from every event, and the host's own secrets
	// from every act's reply; the known formats only when nil.
	Redactor *redact.Redactor
	// Bounds are the engine's caps.
	Bounds Bounds
	// StatementTags are the tags of grant statements that are no act's
	// (tool.env). When set, a grant whose tag is neither an adapter's nor
	// one of these is refused, naming the nearest known tag: a typo
	// (fs.reed) would otherwise be a grant that allows nothing.
	StatementTags map[string]bool
	// Quantum, if not 0, is how many slices one Drive runs before it returns
	// the invocation Running, so that a scheduler can be fair.
	Quantum int
	// Cadence bounds the pure work a crash can lose (drive.go).
	Cadence Cadence
	// Slice is the steps of a slice, the grain of metering and of events;
	// port.DefaultSlice when 0. A crossing into the runtime runs as many
	// as fit in about a Quantum (Pacer).
	Slice uint64

	mu       sync.Mutex
	backlogs map[string]*events.Backlog // by invocation

	holds  holds      // one turn of a tree at a time (hold.go)
	claims *claims    // on a shared store, the trees this host drives (claim.go); nil on one of its own
	wakers wakers     // the Loops to tell of work a command asked of this host made (forward.go)
	ready  readyHints // invocations its commits made runnable, for its Loops (ready.go)

	idMu   sync.Mutex // NewInvocationID's counter, one writer at a time here
	runsMu sync.Mutex
	runs   map[string]*run // kept between turns: live machines, leased steps
	ask    map[string]bool // checkpoints asked for (Checkpoint)

	ward     *Ward
	ledger   *Ledger
	accounts *Accounts
	invs     *Invocations
	boxes    *Mailboxes
}

// NewEngine returns an engine over a store and a runtime.
func NewEngine(s *store.Store, rt port.RuntimePort, generation uint64, clock func() int64) *Engine {
	e := &Engine{Store: s, Runtime: rt, Adapters: map[string]Adapter{}, Generation: generation, Clock: clock, Bounds: DefaultBounds,
		ward: NewWard(s, clock), ledger: NewLedger(s), accounts: NewAccounts(s), invs: NewInvocations(s), boxes: NewMailboxes(s)}
	e.invs.clock = clock
	e.Adapters[SpawnTag] = spawner{e}
	s.SetCommitted(e.committed, store.Key(runPrefix), store.Key(duePrefix)) // hints of runnable work for its Loops (ready.go)
	return e
}

// Clean is a text as it may be shown anywhere: control characters stripped,
// secrets redacted (the host's own included), then capped at n (0: not).
func (e *Engine) Clean(s string, n int) string { return e.clean(s, n) }

// Ward returns the engine's ward: the grants its acts are checked against.
func (e *Engine) Ward() *Ward { return e.ward }

// ProgOf returns the prog an invocation runs.
func (e *Engine) ProgOf(inv string) (string, error) {
	i, err := e.invs.get(inv)
	if err != nil {
		return "", err
	}
	return i.Prog, nil
}

// Limits are what an adapter declares of its acts. Zero fields take the
// engine's Bounds (and no time limit).
type Limits struct {
	Args  int           // bytes of encoded arguments
	Reply int           // bytes of the encoded reply
	Time  time.Duration // how long one act may take
}

// Limited is an adapter that declares its limits.
type Limited interface {
	Limits() Limits
}

// limitsOf returns the caps that apply to an adapter's acts.
func (e *Engine) limitsOf(a Adapter) Limits {
	l := Limits{Args: e.Bounds.ActArgs, Reply: e.Bounds.ActReply}
	if d, ok := a.(Limited); ok {
		dl := d.Limits()
		if dl.Args > 0 {
			l.Args = min(l.Args, dl.Args)
		}
		if dl.Reply > 0 {
			l.Reply = min(l.Reply, dl.Reply)
		}
		l.Time = dl.Time
	}
	return l
}

// RunState is where a Drive left an invocation.
type RunState struct {
	Status   Status
	Result   []byte            // data value, when Completed or Conflict
	Err      *checkpoint.Error // when Failed
	Waiting  string            // what it waits for, when Waiting
	Awaits   []string          // the event tags its await takes, when it waits for one
	Deadline int64             // unix ms when its await times out, or 0
	Unknown  *Operation        // an attempt without an outcome, when there is one
	Paused   string            // why the engine cannot run it, when paused (State)
	Emits    []Emit

	Admitted, Ended int64 // unix ms; Ended once terminal (State)

	noted bool // its status line is logged already (with the await it waits at)
}

// Emit is an event the prog emitted, with the invocation it came from.
type Emit struct {
	Kind string
	Data []byte
}

// semantics is the machine version whose checkpoints this engine resumes.
const semantics = compile.Version

func cpKey(inv string) store.Key   { return store.K("cp", inv) }
func srcKey(hash string) store.Key { return store.K("src", hash) }

// Start admits an invocation of prog with input and a step limit, stores its
// first checkpoint, and drives it.
func (e *Engine) Start(ctx context.Context, inv, prog string, source, input []byte, limit uint64, seed uint64) (*RunState, error) {
	return e.StartFrom(ctx, inv, prog, "", Binding{}, source, input, limit, seed)
}

// StartFrom is Start for an invocation that came from somewhere the caller
// must find it again after a restart (a Slack thread, say): origin is kept
// on the invocation, opaque to the engine. bind is as AdmitBound's.
func (e *Engine) StartFrom(ctx context.Context, inv, prog, origin string, bind Binding, source, input []byte, limit uint64, seed uint64) (*RunState, error) {
	if err := e.AdmitBound(ctx, inv, prog, origin, bind, source, input, limit, seed); err != nil {
		return nil, err
	}
	return e.Drive(ctx, inv)
}

// Admit is StartFrom without the drive: the invocation is stored runnable,
// for a scheduler (a Loop) to run. The source becomes the prog's whatever
// the prog is bound to: the caller vouches for it (AdmitBound checks).
func (e *Engine) Admit(ctx context.Context, inv, prog, origin string, source, input []byte, limit uint64, seed uint64) error {
	return e.AdmitBound(ctx, inv, prog, origin, Binding{}, source, input, limit, seed)
}

// CheckBinding is nil if bind may admit a run of prog: the check AdmitBound
// makes (and makes again when it stores), for a caller to make before it
// spends anything on the run, such as an invocation id.
func (e *Engine) CheckBinding(prog string, bind Binding) error {
	p, err := e.invs.Prog(prog)
	if errors.Is(err, ErrNoSuchProg) {
		return nil
	}
	if err != nil {
		return err
	}
	return p.admits(bind)
}

// AdmitBound is Admit for a prog bound to bind.To (Prog.Bound): a prog
// bound to another file or source is refused with a BoundError, before
// anything is stored, unless bind.Replace. The zero Binding checks
// nothing.
func (e *Engine) AdmitBound(ctx context.Context, inv, prog, origin string, bind Binding, source, input []byte, limit uint64, seed uint64) error {
	info, err := e.Runtime.Load(ctx, source)
	if err != nil {
		return err
	}
	// The invocation, its allowance, its source and its first checkpoint are
	// written in one transaction: a crash leaves all of them or none.
	p, err := e.invs.Prog(prog)
	if errors.Is(err, ErrNoSuchProg) {
		p, err = &Prog{Name: prog}, nil
	}
	if err != nil {
		return err
	}
	if err := p.admits(bind); err != nil {
		return err // and again in the transaction, which decides
	}
	cp, err := e.Runtime.Start(ctx, port.Input{Source: source, Input: input, State: p.State, Invocation: inv, Seed: seed, Limit: limit})
	if err != nil {
		return err
	}
	hash := fmt.Sprintf("%x", info.Hash)
	// Its tree is held until its run is kept: a Loop that found it
	// runnable before would take the held lease for one a crash lost.
	defer e.holds.lock(inv)()
	root := inv == rootOf(inv) && e.claims != nil // a new tree: its claim is admitted with it
	var first []events.Event
	if root {
		defer func() {
			if err != nil {
				e.claims.forget(inv) // not admitted: not claimed
			}
		}()
	}
	err = e.Store.Retry(store.Synced, func(tx *store.Tx) error {
		if root {
			if err := e.claims.admitted(tx, inv); err != nil {
				return err
			}
		}
		i, err := e.invs.admit(tx, inv, prog, hash, bind)
		if err != nil {
			return err
		}
		if origin != "" {
			i.Origin = origin
			if err := putInv(tx, i); err != nil {
				return err
			}
		}
		if i.Revision != p.Revision {
			return fmt.Errorf("prog %s moved to revision %d while %s was admitted with the state of revision %d; run it again", prog, i.Revision, inv, p.Revision)
		}
		// The first lease of steps is reserved with the invocation: the
		// run begins without a synced reservation of its own.
		if err := tx.Put(allowanceKey(inv), Allowance{Limit: limit, Held: min(e.slice(), limit)}); err != nil {
			return err
		}
		if err := tx.Put(tokenKey(inv), Allowance{Limit: tokensOf(ctx)}); err != nil {
			return err
		}
		if err := tx.PutRaw(srcKey(hash), source); err != nil {
			return err
		}
		if _, err := e.putCheckpointTx(tx, inv, cp, 0); err != nil {
			return err
		}
		at := e.Clock()
		first, err = appendLog(tx, inv, []events.Event{
			{At: at, Kind: events.KindInput, Input: &events.Input{Text: e.clean(inputText(input), 0)}},
			{At: at, Kind: events.KindRunMeta, RunMeta: &events.RunMeta{Prog: prog, Revision: i.Revision, Limit: limit, Program: hash}},
		})
		return err
	})
	if err != nil {
		return err
	}
	e.published(first)
	h, err := checkpoint.DecodeHeader(cp)
	if err != nil {
		return err
	}
	e.keep(&run{inv: inv, cp: cp, h: h, used: h.Used, stored: time.Now(), held: min(e.slice(), limit)})
	return nil
}

// Drive runs an invocation from its stored checkpoint until it ends, waits
// for an event, or meets an act of unknown outcome. A change of status is
// logged. If driving fails for a reason that is not the context's (the
// sandbox failed, the store refused), the invocation is paused with that
// reason: it stays as it was, inspectable, out of the scheduler's turns,
// never left looking as if it ran, until an operator resumes it.
func (e *Engine) Drive(ctx context.Context, inv string) (*RunState, error) {
	unlock, err := e.lockTree(inv)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return e.driveTurn(ctx, inv, e.Quantum)
}

// driveTurn is Drive for at most quantum slices (0: no limit), holding
// inv's tree. A turn stopped for a cancel returns where inv stands.
func (e *Engine) driveTurn(ctx context.Context, inv string, quantum int) (*RunState, error) {
	tctx, done := e.holds.running(ctx, inv)
	out, err := e.turn(tctx, inv, quantum)
	stopped := tctx.Err() != nil
	done()
	if err != nil && ctx.Err() == nil && stopped {
		return e.State(inv)
	}
	if errors.Is(err, ErrClaimed) && e.claims != nil {
		e.claims.forget(rootOf(inv)) // what this host kept of the tree went unrecorded: from the store again, if it claims it again
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrNoSuchInvocation) && !errors.Is(err, ErrClaimed) { // a tree another host took is not this host's to pause
		if _, perr := e.invs.Pause(inv, err.Error()); perr != nil {
			return nil, errors.Join(err, perr)
		}
		e.logEnding(inv, e.note(events.NotePaused, err.Error()))
	}
	return out, err
}

// turn drives inv for at most quantum slices and logs how it stands.
func (e *Engine) turn(ctx context.Context, inv string, quantum int) (*RunState, error) {
	i, err := e.invs.get(inv)
	if err != nil {
		return nil, err
	}
	if i.Status.Terminal() || i.Status == Joining {
		return &RunState{Status: i.Status, Result: i.Result, Err: i.Err}, nil
	}
	out, err := e.drive(ctx, inv, quantum)
	if errors.Is(err, store.ErrNoSpace) {
		// Stopped cleanly at its last stored step: paused, resumable once
		// there is space again.
		if _, perr := e.invs.Pause(inv, err.Error()); perr != nil {
			return out, errors.Join(err, perr)
		}
	}
	if err == nil && out.Status != i.Status && !out.noted {
		if out.Status.Terminal() {
			err = e.logEnding(inv, e.statusNote(out)...)
		} else {
			err = e.log(inv, e.statusNote(out)...)
		}
	}
	if err == nil && out.Status.Terminal() {
		err = e.conclude(inv)
	}
	return out, err
}

// conclude logs a run's verification and outcome once it has ended, unless
// its log already ends with them.
func (e *Engine) conclude(inv string) error {
	i, err := e.invs.get(inv)
	if err != nil || !i.Status.Terminal() {
		return err
	}
	var last events.Event
	err = e.Store.View(func(tx *store.Tx) error {
		last = events.Event{} // a View may run again
		var c logCounter
		if _, err := tx.Get(store.K("evn", inv), &c); err != nil || c.Next == 0 {
			return err
		}
		_, err := tx.Get(runEventKey(inv, c.Next), &last)
		return err
	})
	if err != nil || last.Kind == events.KindOutcome {
		e.dropBacklog(inv)
		return err
	}
	var final []events.Event
	for _, ev := range e.finalEvents(inv, i.Status, i.Result) {
		if !ev.Content() {
			final = append(final, ev)
		}
	}
	err = e.logEnding(inv, final...)
	e.dropBacklog(inv)
	return err
}

// inputText is a run's input as text: a string as it is, else JSON.
func inputText(b []byte) string {
	if len(b) == 0 {
		return "null"
	}
	if d, err := checkpoint.DecodeData(b); err == nil {
		if s, ok := d.(string); ok {
			return s
		}
	}
	return dataText(b)
}

// ensureLoaded gives the runtime the invocation's source (after a restart
// it has none).
func (e *Engine) ensureLoaded(ctx context.Context, h *checkpoint.Header) error {
	src, err := e.source(fmt.Sprintf("%x", h.Program))
	if err != nil {
		return err
	}
	_, err = e.Runtime.Load(ctx, src)
	return err
}

// source returns a stored source by its hash.
func (e *Engine) source(hash string) ([]byte, error) {
	var src []byte
	err := e.Store.View(func(tx *store.Tx) error {
		b, ok, err := tx.GetRaw(srcKey(hash))
		if err == nil && !ok {
			err = fmt.Errorf("source %.16s: %w", hash, store.ErrCorrupt)
		}
		src = b
		return err
	})
	return src, err
}

func (e *Engine) awaitReply(inv string, p *checkpoint.Pending, took *taken) ([]byte, *RunState, error) {
	aw, bad := parseAwait(p)
	if bad != "" {
		b, err := checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "value", Msg: bad}})
		return b, nil, err
	}
	var ev *Event
	var err error
	if took != nil && took.seq == p.Seq {
		// Taken with the checkpoint that reached the await, just now.
		ev = took.ev
		if ev == nil {
			return nil, &RunState{Status: Waiting, Waiting: waitingFor(aw), Awaits: aw.Tags, Deadline: took.deadline, noted: true}, nil
		}
	} else {
		ev, err = e.boxes.Take(inv, aw, e.Clock())
	}
	if errors.Is(err, ErrNoEvent) {
		if i, err := e.invs.get(inv); err == nil && i.Status == Running {
			e.invs.Move(inv, Waiting)
		}
		out := &RunState{Status: Waiting, Waiting: waitingFor(aw), Awaits: aw.Tags}
		if out.Deadline, err = e.boxes.Deadline(inv); err != nil {
			return nil, nil, err
		}
		return nil, out, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if ev.Timeout {
		b, err := checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "timeout", Msg: fmt.Sprintf("no event %v within %d ms", aw.Tags, aw.Timeout)}})
		return b, nil, err
	}
	payload, err := checkpoint.DecodeData(ev.Payload)
	if err != nil {
		return nil, nil, fmt.Errorf("event %s#%d: %w", inv, ev.Seq, err)
	}
	b, err := checkpoint.EncodeReply(checkpoint.Reply{Value: payload})
	return b, nil, err
}

// waitingFor is what an invocation waiting at aw waits for.
func waitingFor(aw Await) string { return fmt.Sprintf("an event %v", aw.Tags) }

// MaxTimeout is the longest await timeout, in milliseconds: a year.
const MaxTimeout = 366 * 24 * 3600 * 1000

// parseAwait reads an await's selector: a map whose "key" (a string) or
// "keys" (a list of strings) name the tags it takes and whose optional
// "timeout" is in milliseconds. What is wrong with it is returned as a
// message the prog sees as an error of kind "value".
func parseAwait(p *checkpoint.Pending) (Await, string) {
	aw := Await{Seq: p.Seq}
	sel, err := checkpoint.DecodeData(p.Args)
	if err != nil {
		return aw, "await selector: " + err.Error()
	}
	m, ok := sel.(*checkpoint.Map)
	if !ok {
		return aw, "await selector must be a map with a key or keys"
	}
	if k, ok := m.Get("key"); ok {
		s, ok := k.(string)
		if !ok {
			return aw, "await selector: key must be a string"
		}
		aw.Tags = append(aw.Tags, s)
	}
	if ks, ok := m.Get("keys"); ok {
		l, ok := ks.([]any)
		if !ok {
			return aw, "await selector: keys must be a list of strings"
		}
		for _, k := range l {
			s, ok := k.(string)
			if !ok {
				return aw, "await selector: keys must be a list of strings"
			}
			aw.Tags = append(aw.Tags, s)
		}
	}
	if len(aw.Tags) == 0 {
		return aw, "await selector must name a key or keys"
	}
	if t, ok := m.Get("timeout"); ok {
		n, ok := t.(int64)
		if !ok || n <= 0 || n > MaxTimeout {
			return aw, fmt.Sprintf("await selector: timeout must be a positive int of milliseconds, at most %d (a year)", int64(MaxTimeout))
		}
		aw.Timeout = n
	}
	return aw, ""
}

// Resume recovers an invocation's held allowance (a lost settlement is
// charged), lifts a pause, and drives it (paused again, with the reason, if
// driving fails: see Drive).
func (e *Engine) Resume(ctx context.Context, inv string) (*RunState, error) {
	return e.resumeTurn(ctx, inv, e.Quantum)
}

// resumeTurn is Resume for at most quantum slices (0: no limit).
func (e *Engine) resumeTurn(ctx context.Context, inv string, quantum int) (*RunState, error) {
	unlock, err := e.lockTree(inv)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if i, err := e.invs.get(inv); err == nil && !i.Status.Terminal() {
		if err := e.room(inv, "resume", false); err != nil {
			return nil, err
		}
	}
	if !e.kept(inv) { // what this engine holds is its own; the rest was lost
		if _, err := e.accounts.Recover(inv); err != nil {
			return nil, err
		}
	}
	if _, err := e.invs.Pause(inv, ""); err != nil {
		return nil, err
	}
	return e.driveTurn(ctx, inv, quantum)
}
