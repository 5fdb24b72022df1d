// ready.go holds the hints of runnable invocations an engine gathers from
// its own commits: a Loop takes its next turn from them before it lists
// the run index, which on a shared store is a scan of the cluster's stream
// (three requests). The index stays the truth: a hint is checked against
// the invocation before its turn, and what no hint names (work another
// host admitted, a tree to take over) is found by the listing, at least
// once a poll.

package host

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runehost/runehost/store"
)

// maxHints bounds the hints kept; past it they are dropped, and the run
// index's listing finds what they named.
const maxHints = 4096

// readyHints is a set of invocations, each once, taken in the order the
// run index's listing takes them, so that a Loop's turns go as they went
// when it listed the index at each turn (and as a command's RunTree takes
// them).
type readyHints struct {
	mu  sync.Mutex
	q   []string
	in  map[string]bool
	due int64 // the earliest deadline a commit of this process set (unix ms); 0 for none
}

// dueAt notes a deadline set.
func (r *readyHints) dueAt(ms int64) {
	r.mu.Lock()
	if r.due == 0 || ms < r.due {
		r.due = ms
	}
	r.mu.Unlock()
}

// dueBy says whether a deadline noted has come by now, and forgets it if
// so (the Loop's Wake then finds every one that has); else how long until
// the next (0 for none).
func (r *readyHints) dueBy(now int64) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.due == 0:
		return false, 0
	case r.due <= now:
		r.due = 0
		return true, 0
	}
	return false, time.Duration(r.due-now) * time.Millisecond
}

func (r *readyHints) push(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in == nil {
		r.in = map[string]bool{}
	}
	if r.in[id] || len(r.q) >= maxHints {
		return
	}
	r.in[id] = true
	r.q = append(r.q, id)
}

// pop takes the hint the run index's listing would give a turn next: the
// first after the cursor (wrapping round) in the index's order, of those
// busy does not pass over. It drops the hints gone says are another's;
// those busy passes over stay. The judges run outside the lock (gone may
// read the store).
func (r *readyHints) pop(after string, busy, gone func(string) bool) string {
	r.mu.Lock()
	q := slices.Clone(r.q)
	r.mu.Unlock()
	cursor := string(runKey(after))
	var first, next string // by the index's order: the first of all, the first after the cursor
	for _, id := range q {
		switch {
		case gone(id):
			r.remove(id)
			continue
		case busy(id):
			continue
		}
		k := string(runKey(id))
		if first == "" || k < string(runKey(first)) {
			first = id
		}
		if after != "" && k > cursor && (next == "" || k < string(runKey(next))) {
			next = id
		}
	}
	if next == "" {
		next = first
	}
	if next != "" && r.remove(next) {
		return next
	}
	return ""
}

// remove drops id's hint and says whether there was one.
func (r *readyHints) remove(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.in[id] {
		return false
	}
	delete(r.in, id)
	r.q = slices.DeleteFunc(r.q, func(x string) bool { return x == id })
	return true
}

func (r *readyHints) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.q)
}

// The kinds of the indexes a commit's hints come from: runKey's and
// dueKey's.
var (
	runPrefix = string(store.K("run"))
	duePrefix = string(store.K("due"))
)

// committed is the store's committed function (SetCommitted): every
// invocation a commit of this process indexed as runnable is a hint, every
// deadline it set is noted, and the Loops are told.
func (e *Engine) committed(put []store.Key) {
	n := 0
	for _, k := range put {
		switch {
		case strings.HasPrefix(string(k), runPrefix):
			parts := k.Parts()
			e.ready.push(parts[len(parts)-1])
			n++
		case strings.HasPrefix(string(k), duePrefix):
			if parts := k.Parts(); len(parts) == 3 {
				if ms, err := strconv.ParseUint(parts[1], 16, 63); err == nil {
					e.ready.dueAt(int64(ms))
					n++
				}
			}
		}
	}
	if n > 0 {
		e.wakeLoops()
	}
}

// nextHint is the next hinted invocation, in the order the run index's
// listing from after would give, that is runnable and that busy does not
// pass over, or "". A hint of a tree another host drives is
// dropped (that host's Loop has its own), and so is one whose invocation
// is no longer runnable (another turn ran it, an operator paused it).
func (s *Scheduler) nextHint(after string, busy func(string) bool) (string, error) {
	for {
		id := s.E.ready.pop(after, busy, func(id string) bool {
			return s.Scope != "" && rootOf(id) != s.Scope || s.E.claimedElsewhere(rootOf(id))
		})
		if id == "" {
			return "", nil
		}
		inv, err := s.E.invs.get(id)
		if err != nil && !errors.Is(err, ErrNoSuchInvocation) {
			return "", err
		}
		if err == nil && inv.Runnable() {
			return id, nil
		}
	}
}

// validID reports whether id may be an invocation's id: what another host
// told is checked before it becomes part of a key.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return false
		}
	}
	return true
}
