// backlog.go holds Backlog: the bounded in-memory window of a run's events
// that live readers (a terminal, a status card) catch up from.

package events

import "sync"

// Backlog keeps the newest events of a run, at most Max of them. When it has
// dropped older ones it says so: a reader then knows the window is not the
// whole run (the store has all of it).
type Backlog struct {
	Max int

	mu      sync.Mutex
	events  []Event
	dropped uint64
}

// DefaultBacklog is the size of a backlog with Max 0.
const DefaultBacklog = 2000

// Add appends an event, dropping the oldest quarter in one step when full.
func (b *Backlog) Add(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.Max
	if limit <= 0 {
		limit = DefaultBacklog
	}
	if len(b.events) >= limit {
		n := max(1, limit/4)
		b.dropped += uint64(n)
		b.events = append(b.events[:0], b.events[n:]...)
	}
	b.events = append(b.events, e)
}

// Since returns the kept events with seq above after, and whether events
// after it were dropped from the window (truncated).
func (b *Backlog) Since(after uint64) (evs []Event, truncated bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.events {
		if e.Seq > after {
			evs = append(evs, e)
		}
	}
	if len(b.events) > 0 && b.dropped > 0 && b.events[0].Seq > after+1 {
		truncated = true
	}
	return evs, truncated
}

// Last is the seq of the newest event kept (0: none).
func (b *Backlog) Last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.events) == 0 {
		return 0
	}
	return b.events[len(b.events)-1].Seq
}

// Truncated reports whether the backlog has dropped events.
func (b *Backlog) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped > 0
}
