// drive.go holds the engine's loop over one invocation, in phases: answer
// the suspension the machine reported, lease steps, step the machine, commit
// what must be kept (commit.go), finish; and the run, what the engine keeps of an
// invocation between its turns: the live machine, its lease of steps, and
// when its checkpoint was last stored.
//
// Durability is paid where it is needed. Slices stay short (Engine.Slice
// steps) for metering and events, but the machine stays live in the
// runtime between them (lazy slices), and one crossing into the runtime
// runs as many as fit in about a Quantum while nothing needs the host
// (Pacer, port.Request.Slices): a checkpoint is produced and stored
// only at a suspension (act, await), at the end, when a slice emitted events,
// when the host stops, and on a cadence (Cadence) that bounds the pure work
// a crash can lose. Re-running pure steps after a crash is fine: they are
// deterministic, and every act's record is kept as before.
//
// Steps are leased. A synced reservation holds many slices' worth (growing
// to MaxLease); the slices draw from it in memory; the steps run are
// charged with the next commit of the invocation, buffered. The store's
// allowance always holds at least what was run and not yet charged, so
// charged + held + lent <= limit holds across crashes: a recovery charges
// what a dead process held in full.

package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// Cadence defaults: at most this much pure work is lost to a crash. Two
// seconds is the bound that matters; ten million steps is a fifth of a
// second natively and several seconds in the sandbox.
const (
	DefaultCheckpointEvery = 2 * time.Second
	DefaultCheckpointSteps = 10_000_000
)

// MaxLease is the most steps one reservation holds: what a crash can charge
// an invocation beyond the work it loses (see maxLease).
const MaxLease = 1_000_000

// Cadence says how often a running invocation's checkpoint is stored besides
// its suspensions and its end: once Every has passed or Steps have run since
// the last one, whichever comes first (see due). Steps also bounds a lease.
// Zero fields take the defaults; Steps 1 stores a checkpoint at every slice.
type Cadence struct {
	Every time.Duration
	Steps uint64
}

func (c Cadence) every() time.Duration {
	if c.Every <= 0 {
		return DefaultCheckpointEvery
	}
	return c.Every
}

func (c Cadence) steps() uint64 {
	if c.Steps == 0 {
		return DefaultCheckpointSteps
	}
	return c.Steps
}

// run is an invocation being driven: where its machine stands, its last
// stored checkpoint, and the steps its allowance holds for it. Between turns
// the engine keeps it (Engine.runs) while the machine is live or steps are
// held; a process that dies loses it, and recovery starts again from the
// stored checkpoint and charges what was held.
type run struct {
	inv      string
	prog     string             // its prog, once read
	cp       []byte             // the last stored checkpoint
	h        *checkpoint.Header // cp's header; h.Pending is answered when reported
	reported bool               // cp is at a suspension the machine reported
	used     uint64             // the machine's steps now (beyond cp's when live)
	live     bool               // the runtime holds the machine, past cp
	stored   time.Time          // when cp was stored (or the run opened)
	lost     uint64             // where the runtime let the live machine go (0: never)
	cost     time.Duration      // what producing and storing cp took
	consumed int                // bytes of replies the machine took since cp (the store quota's, with the next)

	held  uint64 // the allowance's Held, as this run last wrote it
	spent uint64 // steps run since the allowance was last written
	lease uint64 // the size of the next reservation
	pace  Pacer  // slices a crossing

	// carried is the last act's settlement, written with the checkpoint of
	// the slice after it (carries), or by flush where that slice stores none.
	carried *settlement
	// took is what the await the last checkpoint reached took, in the
	// same transaction: its event, or none and the invocation waiting.
	took *taken
}

// taken is what an await took when its checkpoint was stored.
type taken struct {
	seq      uint64 // the await's
	ev       *Event // nil: none, the invocation waits
	deadline int64  // when none: the wait's deadline (unix ms), or 0
}

// unspent is what the lease still holds for slices.
func (r *run) unspent() uint64 { return r.held - r.spent }

// due says the next slice's checkpoint must be stored: Cadence.Every has
// passed, or Cadence.Steps will have run, or the slices re-run since the
// runtime let the live machine go have not yet passed where it was lost
// (each of them is kept: a runtime that keeps letting machines go cannot
// stop progress, and a slice that lost its machine by running out of
// memory runs out again where the failure can be stored). The default step bound also waits for
// ten times what the last checkpoint cost: a large heap is not written out
// every ten million steps, storing checkpoints takes at most about a tenth
// of the time, and a crash still loses at most Every of work.
func (e *Engine) due(r *run, slice uint64) bool {
	since := time.Since(r.stored)
	if since >= e.Cadence.every() || r.lost > 0 && r.used <= r.lost || e.asked(r.inv) {
		return true
	}
	if r.used+slice-r.h.Used < e.Cadence.steps() {
		return false
	}
	return e.Cadence.Steps != 0 || since >= 10*r.cost
}

// drive runs inv for at most quantum slices (0: no limit).
func (e *Engine) drive(ctx context.Context, inv string, quantum int) (*RunState, error) {
	r, err := e.openRun(ctx, inv)
	if err != nil {
		return nil, err
	}
	out, err := e.driveRun(ctx, r, quantum)
	e.closeRun(ctx, r, out, err)
	return out, err
}

// openRun takes the run the engine kept from inv's last turn, or opens one
// from its stored checkpoint.
func (e *Engine) openRun(ctx context.Context, inv string) (*run, error) {
	e.runsMu.Lock()
	r := e.runs[inv]
	delete(e.runs, inv)
	e.runsMu.Unlock()
	if r != nil {
		return r, nil
	}
	cp, err := e.checkpoint(inv)
	if err != nil {
		return nil, err
	}
	r = &run{inv: inv, cp: cp, stored: time.Now()}
	if err := e.restart(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// restart puts r back at its stored checkpoint: the machine is decoded from
// it (once; after that each step's result says where it stands).
func (e *Engine) restart(ctx context.Context, r *run) error {
	c, err := checkpoint.Decode(r.cp, checkpoint.Expect{Semantics: semantics})
	if err != nil {
		return fmt.Errorf("invocation %s: stored checkpoint: %w", r.inv, err)
	}
	if want := fmt.Sprintf("%x", c.Header.Program); c.Header.Invocation != "" && c.Header.Invocation != r.inv {
		return fmt.Errorf("invocation %s: stored checkpoint is of invocation %s (program %.16s): %w", r.inv, c.Header.Invocation, want, store.ErrCorrupt)
	}
	r.h, r.used, r.live, r.consumed = &c.Header, c.Header.Used, false, 0
	r.reported = c.Header.Pending != nil && c.Machine.Steps == c.Header.Used // a suspension the machine reported
	return e.ensureLoaded(ctx, r.h)
}

// closeRun keeps a run that will have another turn, or gives back the steps
// it holds: those run are charged, the rest return. A turn that ended as
// its context did is kept too: its machine may be live, with work since
// its stored checkpoint, for the next turn or Park to store.
func (e *Engine) closeRun(ctx context.Context, r *run, out *RunState, err error) {
	if err == nil && out != nil && out.Status == Running {
		e.keep(r)
		return
	}
	e.release(r)
}

// keep holds r for inv's next turn.
func (e *Engine) keep(r *run) {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	if e.runs == nil {
		e.runs = make(map[string]*run)
	}
	e.runs[r.inv] = r
}

// release charges what r ran and gives back what it held (buffered: a
// release lost to a crash only charges more). A failure leaves the steps
// held, for a recovery to charge.
func (e *Engine) release(r *run) {
	if r.held == 0 && r.spent == 0 {
		return
	}
	var held uint64
	err := e.Store.RetryInReserve(store.Buffered, func(tx *store.Tx) error {
		al, err := changeAllowance(tx, r.inv, settleRun(r, true))
		held = al.Held
		return err
	})
	if err == nil {
		r.held, r.spent = held, 0
	}
}

// dropRun forgets inv's run (a cancel, say), giving back what it held.
func (e *Engine) dropRun(inv string) {
	e.runsMu.Lock()
	r := e.runs[inv]
	delete(e.runs, inv)
	e.runsMu.Unlock()
	if r != nil {
		e.release(r)
	}
}

// kept says whether the engine holds a run of inv between turns.
func (e *Engine) kept(inv string) bool {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	return e.runs[inv] != nil
}

// Park stores the checkpoint of every invocation whose machine is live
// between turns and gives back the steps held for them: a host that stops
// loses no work. It drives each for one slice, checkpointed.
func (e *Engine) Park(ctx context.Context) error {
	return e.park(ctx, "")
}

// parkTree is Park for root's tree alone, its lock held by the caller.
func (e *Engine) parkTree(root string) error {
	return e.park(context.Background(), root)
}

// park stores the live machines of root's tree (all when ""), each at a
// slice of its own; locked unless of root.
func (e *Engine) park(ctx context.Context, root string) error {
	e.runsMu.Lock()
	var invs []string
	for inv := range e.runs {
		if root == "" || rootOf(inv) == root {
			invs = append(invs, inv)
		}
	}
	e.runsMu.Unlock()
	slices.Sort(invs)
	stopped, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cancel() // a stopping drive runs one checkpointed slice of a live machine
	var errs []error
	for _, inv := range invs {
		unlock := func() {}
		if root == "" {
			unlock = e.holds.lock(inv)
		}
		_, err := e.turn(stopped, inv, 1)
		unlock()
		if err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("invocation %s: %w", inv, err))
		}
	}
	return errors.Join(errs...)
}

// Checkpoint asks for inv's checkpoint to be stored at its next slice, as
// where it stands now (an operator's request; serve's API). It returns at
// once; the next slice of a running invocation stores it.
func (e *Engine) Checkpoint(inv string) {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	if e.ask == nil {
		e.ask = make(map[string]bool)
	}
	e.ask[inv] = true
}

// asked takes an operator's request for inv's checkpoint.
func (e *Engine) asked(inv string) bool {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	if !e.ask[inv] {
		return false
	}
	delete(e.ask, inv)
	return true
}

// driveRun is the loop: a turn of at most quantum slices.
func (e *Engine) driveRun(ctx context.Context, r *run, quantum int) (out *RunState, err error) {
	defer func() {
		if ferr := e.flush(r); ferr != nil && err == nil {
			out, err = nil, ferr
		}
	}()
	inv := r.inv
	var emits []Emit
	var fresh *prepared // the act the last slice reached, attempted with its checkpoint
	woken := false
	for turn := 0; ; { // turn counts slices, however many a crossing runs
		stopping := ctx.Err() != nil
		if stopping && fresh == nil && !r.live {
			return nil, ctx.Err()
		}
		// Its turn is over, once an attempt made is carried out: at its
		// quantum of slices, or, in a turn of time, past DefaultQuantum
		// slices and its time (a slow crossing alone does not end it).
		over := quantum > 0 && turn >= quantum || turn >= DefaultQuantum && turnOver(ctx)
		if over && fresh == nil && !r.reported && !stopping {
			return &RunState{Status: Running, Emits: emits}, nil
		}
		var reply []byte
		var pend *settlement
		if r.reported {
			var out *RunState
			var err error
			reply, pend, out, err = e.answer(ctx, inv, r.h, fresh, r.took)
			r.took = nil
			if err != nil || out != nil {
				if out != nil {
					out.Emits = emits
				}
				return out, err
			}
			if !woken { // only the first answer of a turn can find it waiting
				woken = true
				if i, err := e.invs.get(inv); err == nil && i.Status == Waiting {
					if _, err := e.invs.Move(inv, Running); err != nil {
						return nil, err
					}
				}
			}
		}
		if over {
			if _, err := e.leaseSlice(r, pend, false); err != nil && !errors.Is(err, ErrExhausted) {
				return nil, err
			}
			return &RunState{Status: Running, Emits: emits}, nil
		}
		if e.carries(pend, stopping) {
			r.carried, pend = pend, nil
		}
		n, err := e.leaseSlice(r, pend, true)
		if errors.Is(err, ErrExhausted) {
			if err := e.flush(r); err != nil {
				return nil, err
			}
			e.release(r) // what it ran is charged before the failure says so
			return e.exhausted(inv, emits)
		}
		if err != nil {
			return nil, err
		}
		if stopping && !r.live { // the act's outcome is recorded; the slice is not run
			return nil, ctx.Err()
		}
		t0 := time.Now()
		most := uint64(MaxSlices)
		if quantum > 0 {
			most = uint64(max(quantum-turn, 1))
		}
		res, k, err := e.step(ctx, r, reply, n, most, stopping)
		turn += int(k)
		spend(ctx, time.Since(t0))
		if err != nil || res.Checkpoint == nil {
			// No checkpoint to carry the last act's settlement: it is
			// written now (a compute-bound slice does not hold it).
			if err := e.flush(r); err != nil {
				return nil, err
			}
		}
		if errors.Is(err, port.ErrExpired) {
			// The runtime let the live machine go: the slices since the
			// stored checkpoint run again (their steps stay charged).
			lost := r.used
			if err := e.restart(ctx, r); err != nil {
				return nil, err
			}
			r.lost = lost
			continue
		}
		if errors.Is(err, checkpoint.ErrTooLarge) {
			// A runtime that says the machine is too large to write,
			// where the port's contract has it fail the machine itself
			// (guest/port): the prog's limit all the same.
			msg, large := err.Error(), (*checkpoint.SizeError)(nil)
			if errors.As(err, &large) {
				msg = large.Error()
			}
			return e.failLimit(inv, msg, emits)
		}
		if err != nil {
			return nil, err
		}
		if res.Checkpoint == nil { // a lazy Yield: nothing to keep yet
			r.live = true
			continue
		}
		r.live = false
		out, err := e.commit(ctx, r, res, &emits, &fresh)
		if out != nil || err != nil {
			return out, err
		}
		r.cost = time.Since(t0)
	}
}

// step runs slices of n steps of r's machine, at most most of them, and
// says how many it asked for: lazily (no checkpoint at a Yield) unless a
// checkpoint is due or the host is stopping, and then one.
func (e *Engine) step(ctx context.Context, r *run, reply []byte, n, most uint64, stopping bool) (*port.Result, uint64, error) {
	stopping = stopping || ctx.Err() != nil // since the loop looked: this slice parks it
	req := port.Request{Reply: reply, Slice: n, Clock: e.Clock(), Lazy: !stopping && !e.due(r, n)}
	if req.Lazy {
		// Many slices a crossing while nothing needs the host (see pace.go),
		// within the lease and short of where the cadence stores the
		// checkpoint; each slice's steps are accounted as before.
		k := min(r.pace.Slices(), max(r.unspent()/n, 1), max(most, 1))
		for k > 1 && e.due(r, n*k) {
			k /= 2
		}
		req.Slices = k
	}
	steps := req.Steps()
	if r.live {
		req.Invocation = r.inv
	} else {
		req.Checkpoint = r.cp
	}
	if stopping || r.live {
		// A slice is short, and a live machine's slice stopped by the
		// context would lose its work since the stored checkpoint: a stop
		// that comes now is taken at the next slice boundary.
		ctx = context.WithoutCancel(ctx)
	}
	t0 := time.Now()
	res, err := e.Runtime.Step(ctx, req)
	if r.live && errors.Is(err, port.ErrExpired) {
		return nil, 0, err
	}
	if err != nil {
		r.spent += steps // how far it got is unknown: the slices are charged in full
		return nil, 0, fmt.Errorf("invocation %s: %w", r.inv, err)
	}
	r.pace.Took(max(req.Slices, 1), time.Since(t0), res.Kind == port.Yield && res.Checkpoint == nil)
	if res.Used < r.used || res.Used-r.used > steps {
		r.spent += steps
		return nil, 0, fmt.Errorf("invocation %s: the runtime says %d steps were used after %d, in %d slices of %d", r.inv, res.Used, r.used, max(req.Slices, 1), n)
	}
	if res.Checkpoint == nil && res.Kind != port.Yield {
		r.spent += res.Used - r.used
		return nil, 0, fmt.Errorf("invocation %s: a %s without a checkpoint", r.inv, res.Kind)
	}
	r.spent += res.Used - r.used
	if e.OnSlice != nil {
		e.OnSlice(r.inv, res.Used-r.used)
	}
	r.used, r.reported = res.Used, false // the reply, if any, is taken
	r.consumed += len(reply)
	return res, max(req.Slices, 1), nil
}

func (e *Engine) checkpoint(inv string) ([]byte, error) {
	var cp []byte
	err := e.Store.View(func(tx *store.Tx) error {
		b, ok, err := getCheckpoint(tx, inv)
		if err == nil && !ok {
			err = fmt.Errorf("invocation %s: %w", inv, ErrNoSuchInvocation)
		}
		cp = b
		return err
	})
	return cp, err
}
