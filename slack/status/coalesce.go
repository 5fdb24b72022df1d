// Package status holds what keeps a run's Slack card true and current within
// Slack's limits: the per-card coalescer, the process-wide edit budget (with
// a lane for posts), the one builder of every card paint, bounded to fit
// (card.go), the classes of Slack's errors (errors.go), and the post queue
// (post.go).
package status

import (
	"sync"
	"time"

	"github.com/runehost/runehost/slack/clock"
)

// MinInterval is the least time between two edits of one card.
const MinInterval = 3 * time.Second

// Frame is one paint of a card. Key identifies its content: two frames with
// the same key look the same.
type Frame struct {
	Key      string
	Terminal bool
	Payload  any
}

// Coalescer decides which frames of one card are sent, and when:
//   - the first frame after a quiet stretch goes at once;
//   - a burst collapses into one trailing edit, with the newest frame;
//   - a frame identical to the last one sent is skipped;
//   - the terminal frame goes at once, and nothing follows it.
type Coalescer struct {
	clk  clock.Clock
	min  time.Duration
	send func(Frame)

	mu      sync.Mutex
	lastKey string
	lastAt  time.Time
	sent    bool
	pending *Frame
	stop    func()
	closed  bool
}

// NewCoalescer returns a coalescer that calls send with each frame to send
// (never two at once for one card; send may block).
func NewCoalescer(clk clock.Clock, min time.Duration, send func(Frame)) *Coalescer {
	if min <= 0 {
		min = MinInterval
	}
	return &Coalescer{clk: clk, min: min, send: send}
}

// Update offers the card's newest frame.
func (c *Coalescer) Update(f Frame) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.pending != nil {
		if f.Key == c.lastKey { // the newest is what the card shows already
			c.pending = nil
			c.stopTimer()
		} else {
			c.pending = &f
		}
		c.mu.Unlock()
		return
	}
	if c.sent && f.Key == c.lastKey {
		c.mu.Unlock()
		return
	}
	now := c.clk.Now()
	if !c.sent || now.Sub(c.lastAt) >= c.min {
		c.mark(f, now)
		c.mu.Unlock()
		c.send(f)
		return
	}
	c.pending = &f
	c.stop = c.clk.AfterFunc(c.lastAt.Add(c.min).Sub(now), c.flush)
	c.mu.Unlock()
}

func (c *Coalescer) mark(f Frame, now time.Time) {
	c.lastKey, c.lastAt, c.sent = f.Key, now, true
}

// unmark forgets the last frame sent (it did not land).
func (c *Coalescer) unmark() {
	c.mu.Lock()
	c.lastKey = ""
	c.mu.Unlock()
}

func (c *Coalescer) stopTimer() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// flush sends the trailing frame of a burst.
func (c *Coalescer) flush() {
	c.mu.Lock()
	f := c.pending
	c.pending, c.stop = nil, nil
	if f == nil || c.closed {
		c.mu.Unlock()
		return
	}
	c.mark(*f, c.clk.Now())
	c.mu.Unlock()
	c.send(*f)
}

// Close sends the terminal frame at once; a pending frame is dropped and any
// later Update ignored, so no stale edit can follow it.
func (c *Coalescer) Close(f Frame) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.pending = nil
	c.stopTimer()
	f.Terminal = true
	c.mark(f, c.clk.Now())
	c.mu.Unlock()
	c.send(f)
}
