// loop.go holds Loop: the scheduler run continuously by a long-lived host
// (runehost serve), giving turns to several trees at once and waking awaits
// when their deadlines pass.

package host

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runehost/runehost/store"
)

// DefaultPoll is how often a Loop lists the run index and looks for
// deadlines that passed, for the work no hint of its engine's commits
// names (ready.go).
const DefaultPoll = 50 * time.Millisecond

// SharedPoll is DefaultPoll on a shared store, where each look is a few
// requests to the cluster for every idle host, and work admitted by another
// host is only seen by looking: measured, three idle hosts polling every
// 50 ms kept a three-node cluster at some 60% of a core.
const SharedPoll = 250 * time.Millisecond

// Loop gives turns to every runnable invocation of an engine until its
// context ends, Workers trees at a time. Turns of one tree never overlap
// (hold.go); a tree that is busy (driven by a command's RunTree, say) is
// passed over until it is free.
type Loop struct {
	E       *Engine
	Workers int           // trees driven at once; runtime.NumCPU() when 0
	Poll    time.Duration // DefaultPoll when 0 (SharedPoll on a shared store)
	Quantum int           // slices per turn; DefaultQuantum (for at least TurnTime) when 0
	// OnTurn, if set, sees each turn as it ends (from the worker's
	// goroutine).
	OnTurn func(Turn)

	once     sync.Once
	wake     chan struct{}
	listings atomic.Int64 // of the run index (for tests)
}

func (l *Loop) init() {
	l.once.Do(func() { l.wake = make(chan struct{}, 1) })
}

// Notify says there may be new work: the loop looks at once.
func (l *Loop) Notify() {
	l.init()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run gives turns until ctx ends, then waits for the turns running to stop:
// each finishes its slice and checkpoints its live machine. The caller then
// parks the machines kept between turns (Engine.Park).
func (l *Loop) Run(ctx context.Context) error {
	l.init()
	defer l.E.addWaker(l)()
	if l.E.claims != nil { // another host's send to a tree this one drives (wakeDriver)
		if stop, err := l.E.Store.Hear("wake."+l.E.Host(), func(inv []byte) {
			if id := string(inv); validID(id) {
				l.E.ready.push(id)
			}
			l.Notify()
		}); err == nil {
			defer stop()
		}
	}
	workers := l.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	poll := l.Poll
	if poll <= 0 {
		poll = DefaultPoll
		if l.E.claims != nil {
			poll = SharedPoll
		}
	}
	sched := &Scheduler{E: l.E, Quantum: l.Quantum}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		driving  = map[string]bool{} // roots with a worker
		after    string              // the cursor: the last invocation given a turn
		listed   time.Time           // when the run index was last listed
		lastWake time.Time           // when deadlines were last looked at
	)
	busy := func(id string) bool { return driving[rootOf(id)] || l.E.holds.busy(id) }
	slots := make(chan struct{}, workers)
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		mu.Lock()
		var id string
		var err error
		if time.Since(listed) < poll { // hints first (ready.go); the index at least once a poll
			id, err = sched.nextHint(after, busy)
		}
		if id == "" && err == nil && time.Since(listed) >= poll {
			listed = time.Now()
			l.listings.Add(1)
			id, err = sched.nextAfter(after, func(id string) bool { return busy(id) || l.E.claimedElsewhere(rootOf(id)) })
		}
		if id != "" {
			driving[rootOf(id)], after = true, id
		}
		mu.Unlock()
		if err != nil {
			<-slots
			return err
		}
		if id == "" {
			<-slots
			due, dueIn := l.E.ready.dueBy(l.E.Clock())
			if due || time.Since(lastWake) >= poll {
				lastWake = time.Now()
				if n, err := sched.Wake(); err != nil {
					return err
				} else if n > 0 {
					continue
				}
			}
			wait := min(poll-time.Since(listed), poll-time.Since(lastWake)) // a notify without a hint does not put the listing off
			if dueIn > 0 {
				wait = min(wait, dueIn) // a deadline set here: at its time, not the next poll
			}
			wait = max(wait, time.Millisecond)
			select {
			case <-ctx.Done():
				return nil
			case <-l.wake:
			case <-time.After(wait):
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := sched.turn(ctx, id)
			mu.Lock()
			delete(driving, rootOf(id))
			mu.Unlock()
			<-slots
			if l.OnTurn != nil && ctx.Err() == nil {
				l.OnTurn(t)
			}
			if t.Err == nil && t.State != nil && t.State.Status == Running {
				l.E.ready.push(id) // a turn that ended with more to run wrote no index (ready.go)
			}
			l.Notify() // its tree may have more to run
		}()
	}
}

// nextAfter returns the first runnable invocation in scope after the
// cursor (wrapping round) that skip does not pass over, or "".
func (s *Scheduler) nextAfter(after string, skip func(string) bool) (string, error) {
	prefix := store.K("run")
	if s.Scope != "" {
		prefix = store.K("run", s.Scope)
	}
	var first, next string
	err := s.E.Store.View(func(tx *store.Tx) error {
		first, next = "", "" // a View may run again
		return tx.Scan(prefix, func(k store.Key, _ func(any) error) (bool, error) {
			parts := k.Parts()
			id := parts[len(parts)-1]
			if skip(id) {
				return true, nil
			}
			if first == "" {
				first = id
			}
			if after == "" || string(k) > string(runKey(after)) {
				next = id
				return false, nil
			}
			return true, nil
		})
	})
	if next == "" {
		next = first
	}
	return next, err
}

// turn gives id one turn and takes a failing one out of the index. A turn
// of the default quantum lasts about TurnTime: a native machine runs 8
// slices in a tenth of a millisecond, less than choosing the next
// invocation costs, and a crossing into the sandbox runs many. A quantum
// set is kept exactly.
func (s *Scheduler) turn(ctx context.Context, id string) Turn {
	q := s.Quantum
	start := time.Now()
	if q == 0 {
		// Slices without number while TurnTime of running lasts, looked at
		// between crossings (each about a Quantum): as many as a crossing
		// may ask for.
		q = turnSlices
		ctx = withTurnTime(ctx, TurnTime)
	}
	st, err := s.E.resumeTurn(ctx, id, q)
	for s.Quantum == 0 && err == nil && st.Status == Running && time.Since(start) < TurnTime && ctx.Err() == nil {
		st, err = s.E.resumeTurn(ctx, id, q)
	}
	if err != nil && ctx.Err() != nil {
		return Turn{Invocation: id, Err: ctx.Err()}
	}
	if err != nil && !errors.Is(err, ErrClaimed) { // another host's tree stays indexed for it
		s.unindex(id)
	}
	if !errors.Is(err, ErrClaimed) {
		s.E.TellChanged(id) // its status, which no event may say
	}
	return Turn{Invocation: id, State: st, Err: err}
}

// unindex drops a failing invocation from the run index, unless it is
// runnable, so that turns do not spin on it. The index is derived: a
// resume by hand puts it back.
func (s *Scheduler) unindex(id string) {
	s.E.Store.Retry(store.Synced, func(tx *store.Tx) error {
		if inv, gerr := getInv(tx, id); gerr == nil && !inv.Runnable() {
			return nil
		}
		return tx.Delete(runKey(id))
	})
}
