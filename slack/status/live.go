// live.go holds Cards: posting a run's card at once, then editing it through
// its coalescer and the process-wide budget, on a slack-go client that does
// not retry rate-limited calls (a retry would queue a stale frame, and the
// reply, behind it).

package status

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/slack/clock"
)

// MaxTerminalRetries bounds the re-sends of a rate-limited terminal frame.
const MaxTerminalRetries = 5

// API is what cards need of a Slack client.
type API interface {
	PostMessageContext(ctx context.Context, channel string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channel, ts string, options ...slack.MsgOption) (string, string, string, error)
}

// Cards posts and edits status cards.
type Cards struct {
	API         API
	Budget      *Budget
	Clock       clock.Clock
	MinInterval time.Duration
	// Sync paints and sends on the caller's goroutine (the load harness, on
	// a virtual clock); otherwise each card has a painter of its own, so
	// that a run never waits on Slack.
	Sync bool

	// Counters, for the load harness and the logs.
	Edits, DroppedProgress, RefusedTerminal, TerminalRetries atomic.Int64
}

// Live is one card on Slack.
type Live struct {
	cards            *Cards
	Channel, TS, key string
	coal             *Coalescer

	mu       sync.Mutex
	card     *Card
	closed   bool
	retrying bool          // a repaint is due after a refused progress frame
	done     chan struct{} // closed when the terminal frame landed or gave up
	kick     chan struct{} // wakes the painter
	stop     chan struct{} // ends it

	// sendMu keeps one edit of the card on the wire at a time, so that no
	// progress edit can land after the terminal frame; final says the
	// terminal frame is under way, after which progress is not sent.
	sendMu sync.Mutex
	final  bool
}

// EditTimeout bounds one call to Slack.
const EditTimeout = 10 * time.Second

func (cs *Cards) newLive(channel, ts string, c *Card) *Live {
	l := &Live{cards: cs, Channel: channel, TS: ts, key: channel + "/" + ts, card: c,
		done: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	l.coal = NewCoalescer(cs.Clock, cs.MinInterval, l.send)
	if !cs.Sync {
		go l.painter()
	}
	return l
}

// painter paints the card's newest state whenever kicked.
func (l *Live) painter() {
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		p := Paint(l.card, l.cards.Clock.Now())
		l.mu.Unlock()
		l.coal.Update(Frame{Key: p.Key(), Payload: p})
	}
}

// RetryRefused is when a card whose progress frame the budget refused is
// repainted, so that it catches up even if its run goes quiet.
const RetryRefused = 2 * time.Second

// later repaints the card after RetryRefused, once.
func (l *Live) later() {
	l.mu.Lock()
	if l.retrying || l.closed {
		l.mu.Unlock()
		return
	}
	l.retrying = true
	l.mu.Unlock()
	l.cards.Clock.AfterFunc(RetryRefused, func() {
		l.mu.Lock()
		l.retrying = false
		l.mu.Unlock()
		l.Repaint()
	})
}

// Open posts a card's first frame at once (before any work on the run) in a
// thread, and returns it live.
func (cs *Cards) Open(ctx context.Context, channel, threadTS string, c *Card) (*Live, error) {
	p := Paint(c, cs.Clock.Now())
	opts := []slack.MsgOption{slack.MsgOptionText(p.Text, false), slack.MsgOptionBlocks(p.Blocks...)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	_, ts, err := cs.API.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return nil, err
	}
	l := cs.newLive(channel, ts, c)
	l.coal.mark(Frame{Key: p.Key()}, cs.Clock.Now())
	cs.Budget.Touch(l.key)
	return l, nil
}

// Attach takes up a card already on Slack (after a restart): it is edited
// from now on, nothing is posted.
func (cs *Cards) Attach(channel, ts string, c *Card) *Live {
	l := cs.newLive(channel, ts, c)
	cs.Budget.Touch(l.key)
	return l
}

// Update changes the card's state under f and offers the new frame.
func (l *Live) Update(f func(c *Card)) {
	l.update(f, true)
}

// Repaint offers the card's frame again (its elapsed time, its quiet
// suffix) without counting as activity for the budget's fair share.
func (l *Live) Repaint() { l.update(func(*Card) {}, false) }

func (l *Live) update(f func(c *Card), active bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	f(l.card)
	var p Painted
	if l.cards.Sync {
		p = Paint(l.card, l.cards.Clock.Now())
	}
	l.mu.Unlock()
	if active {
		l.cards.Budget.Touch(l.key)
	}
	if !l.cards.Sync {
		select {
		case l.kick <- struct{}{}:
		default: // a paint is due already; it will show this too
		}
		return
	}
	l.coal.Update(Frame{Key: p.Key(), Payload: p})
}

// Close paints the terminal frame and sends it as soon as the budget funds
// it; it returns at once. Done is closed when it has landed or given up.
func (l *Live) Close(f func(c *Card)) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	f(l.card)
	l.card.Ended = true
	p := Paint(l.card, l.cards.Clock.Now())
	l.mu.Unlock()
	if !l.cards.Sync {
		close(l.stop)
		// The terminal frame may wait on an edit on the wire and on Slack:
		// the caller (a reply to the run) does not.
		go l.coal.Close(Frame{Key: p.Key(), Payload: p, Terminal: true})
		return
	}
	l.coal.Close(Frame{Key: p.Key(), Payload: p, Terminal: true})
}

// Done is closed once the terminal frame landed or was given up.
func (l *Live) Done() <-chan struct{} { return l.done }

// Card returns a copy of the card's state.
func (l *Live) Card() Card {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.card
}

// forgetSent tells the coalescer the frame it passed on did not land, so
// that the same frame offered again is not skipped as identical.
func (l *Live) forgetSent() { l.coal.unmark() }

func (l *Live) edit(p Painted) error {
	ctx, cancel := context.WithTimeout(context.Background(), EditTimeout)
	defer cancel()
	_, _, _, err := l.cards.API.UpdateMessageContext(ctx, l.Channel, l.TS,
		slack.MsgOptionText(p.Text, false), slack.MsgOptionBlocks(p.Blocks...))
	if err == nil {
		l.cards.Edits.Add(1)
	}
	return err
}

// retryAfter says whether err is a rate limit, and for how long.
func retryAfter(err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return max(rl.RetryAfter, time.Second), true
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == 429 {
		return time.Second, true
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "ratelimited" {
		return time.Second, true
	}
	return 0, false
}

// send is the coalescer's: a progress frame is sent if the budget allows
// and dropped otherwise (or when rate-limited); a terminal frame is sent
// when funded, re-sent after Retry-After up to MaxTerminalRetries.
func (l *Live) send(f Frame) {
	cs := l.cards
	p, _ := f.Payload.(Painted)
	if !f.Terminal {
		l.sendMu.Lock()
		defer l.sendMu.Unlock()
		if l.final {
			return // the terminal frame is under way: nothing may follow it
		}
		if !cs.Budget.Progress(l.key, l.Channel) {
			cs.DroppedProgress.Add(1)
			l.forgetSent()
			l.later()
			return
		}
		if err := l.edit(p); err != nil {
			if d, ok := retryAfter(err); ok {
				cs.Budget.Throttled(d)
			}
			cs.DroppedProgress.Add(1)
			l.forgetSent()
			l.later()
		}
		return
	}
	l.sendMu.Lock()
	l.final = true
	l.sendMu.Unlock()
	var try func(n int)
	try = func(n int) {
		l.sendMu.Lock()
		err := l.edit(p)
		l.sendMu.Unlock()
		if err == nil {
			close(l.done)
			return
		}
		d, limited := retryAfter(err)
		if !limited || n >= MaxTerminalRetries {
			cs.RefusedTerminal.Add(1)
			close(l.done)
			return
		}
		cs.Budget.Throttled(d)
		cs.TerminalRetries.Add(1)
		cs.Clock.AfterFunc(d, func() { try(n + 1) })
	}
	at := cs.Budget.Terminal(l.key, l.Channel)
	if wait := at.Sub(cs.Clock.Now()); wait > 0 {
		cs.Clock.AfterFunc(wait, func() { try(0) })
		return
	}
	try(0)
}
