// live.go holds Cards and Live: a run's card, edited through its coalescer
// and the process-wide budget on a slack-go client that does not retry
// rate-limited calls (a retry would queue a stale frame, and the reply,
// behind it). Each failed edit is classified (errors.go): a temporary one is
// retried with backoff, a rate limit backs off every card, a permanent one
// stops the card at once; a terminal frame that cannot land is posted as a
// new message in the thread (post.go).

package status

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/slack/clock"
)

// MaxTerminalRetries bounds the re-sends of a terminal frame refused for a
// rate limit or a temporary error; past it the end is posted as a new
// message in the thread.
const MaxTerminalRetries = 5

// EditTimeout bounds one call to Slack.
const EditTimeout = 10 * time.Second

// RetryRefused is when a card whose progress frame the budget refused is
// repainted, so that it catches up even if its run goes quiet; it is also
// the first backoff after a temporary error.
const RetryRefused = 2 * time.Second

// MaxBackoff bounds the backoff after repeated temporary errors.
const MaxBackoff = time.Minute

// backoff is the wait before the nth retry (n >= 1) after temporary errors:
// RetryRefused, doubled each time, up to MaxBackoff.
func backoff(n int) time.Duration {
	return min(RetryRefused<<min(max(n-1, 0), 6), MaxBackoff)
}

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
	// PostTimeout bounds how long a post (a card, a Reply, the end of a run
	// whose card Slack refused) is queued and retried: DefaultPostTimeout
	// when 0.
	PostTimeout time.Duration
	// Log gets each permanent failure of a card, once, and each post given
	// up that nobody else hears of (nil: discarded). Keys: channel, ts, inv,
	// code, err, action.
	Log *slog.Logger

	// Counters, for the load harness, the metrics and the logs.
	Edits             atomic.Int64 // chat.update calls that landed
	DroppedProgress   atomic.Int64 // progress frames not sent (budget) or not landed
	RefusedTerminal   atomic.Int64 // terminal frames whose edit never landed
	TerminalRetries   atomic.Int64 // re-sends of terminal frames
	PermanentFailures atomic.Int64 // cards Slack refused for good (edits stopped)
	Posts             atomic.Int64 // chat.postMessage calls that landed
	PostsQueued       atomic.Int64 // posts that waited for a slot (their channel's rate, a Retry-After)
	PostRetries       atomic.Int64 // posts re-sent after a temporary error or a rate limit
	FailedPosts       atomic.Int64 // posts given up (permanent error, or PostTimeout passed)
	FallbackPosts     atomic.Int64 // terminal frames shown as a new message in the thread
}

func (cs *Cards) log() *slog.Logger {
	if cs.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return cs.Log
}

// Live is one card on Slack.
type Live struct {
	cards            *Cards
	Channel, TS, key string
	// Thread is the ts of the thread the card is in, "" when it is not in
	// one (then the card's own thread is used): where the end of the run is
	// posted when the card cannot show it.
	Thread string
	coal   *Coalescer

	mu       sync.Mutex
	card     *Card
	closed   bool
	endAt    time.Time     // when Close was called: the terminal frame's time
	retrying bool          // a repaint is due after a refused progress frame
	broken   *Error        // Slack refused the card for good: no more edits
	limits   Limits        // what paints are measured against
	shrunk   bool          // a frame was refused for its size once: limits halved
	fails    int           // temporary failures of progress frames in a row
	frame    uint64        // frames that may have landed: block ids go on from it
	done     chan struct{} // closed when the terminal frame landed or gave up
	kick     chan struct{} // wakes the painter
	stop     chan struct{} // ends it

	// sendMu keeps one edit of the card on the wire at a time, so that no
	// progress edit can land after the terminal frame; final says the
	// terminal frame is under way, after which progress is not sent.
	sendMu sync.Mutex
	final  bool
}

func (cs *Cards) newLive(channel, thread, ts string, c *Card, lim Limits, frame uint64) *Live {
	l := &Live{cards: cs, Channel: channel, Thread: thread, TS: ts, key: channel + "/" + ts, card: c, limits: lim, frame: frame,
		done: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	l.coal = NewCoalescer(cs.Clock, cs.MinInterval, l.send)
	if !cs.Sync {
		go l.painter()
	}
	return l
}

// blockID is the block id of a card's nth frame: each frame has a new one.
func blockID(n uint64) string { return fmt.Sprintf("card-%d", n) }

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
		if l.broken != nil {
			l.mu.Unlock()
			continue
		}
		p := PaintWithin(l.card, l.cards.Clock.Now(), l.limits)
		l.mu.Unlock()
		l.coal.Update(Frame{Key: p.Key(), Payload: p})
	}
}

// later repaints the card after d, once.
func (l *Live) later(d time.Duration) {
	l.mu.Lock()
	if l.retrying || l.closed || l.broken != nil {
		l.mu.Unlock()
		return
	}
	l.retrying = true
	l.mu.Unlock()
	l.cards.Clock.AfterFunc(d, func() {
		l.mu.Lock()
		l.retrying = false
		l.mu.Unlock()
		l.Repaint()
	})
}

// Open posts a card's first frame (before any work on the run) in a thread
// (threadTS; "" for none), and returns it live. The post is drawn from the
// budget's post lane (about one a second per channel), queued, and retried
// with backoff after a temporary error or a rate limit, for at most
// PostTimeout or until ctx ends. When it cannot land the error is an *Error:
// Permanent (channel_not_found, not_in_channel, invalid_auth...: the same
// post will never land), or the class and code of the last refusal, wrapping
// ErrPostTimeout, once PostTimeout passed; ctx's end gives a Temporary
// error with code "canceled" or "timeout". Open blocks until then.
func (cs *Cards) Open(ctx context.Context, channel, threadTS string, c *Card) (*Live, error) {
	var posted Painted
	var lim Limits
	ts, err := cs.postWait(ctx, channel, threadTS, func(l Limits) Painted {
		lim = l
		posted = PaintWithin(c, cs.Clock.Now(), l)
		return posted.WithBlockID(blockID(1))
	})
	if err != nil {
		return nil, err
	}
	l := cs.newLive(channel, threadTS, ts, c, lim, 1)
	l.coal.mark(Frame{Key: posted.Key()}, cs.Clock.Now())
	cs.Budget.Touch(l.key)
	return l, nil
}

// Attach takes up a card already on Slack (after a restart): it is edited
// from now on, nothing is posted. The end of the run, if the card cannot
// show it, goes in the card's own thread: AttachInThread names the thread.
func (cs *Cards) Attach(channel, ts string, c *Card) *Live {
	return cs.AttachInThread(channel, "", ts, c)
}

// AttachInThread is Attach for a card in the thread threadTS.
func (cs *Cards) AttachInThread(channel, threadTS, ts string, c *Card) *Live {
	// Block ids go on from the time, past any the last process gave.
	l := cs.newLive(channel, threadTS, ts, c, DefaultLimits, uint64(max(cs.Clock.Now().UnixMilli(), 0)))
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
	if l.broken != nil { // the state is kept for the end; nothing is sent
		l.mu.Unlock()
		return
	}
	var p Painted
	if l.cards.Sync {
		p = PaintWithin(l.card, l.cards.Clock.Now(), l.limits)
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
// it; it returns at once. Done is closed when it has landed, or when the end
// was posted as a new message in the thread instead, or given up. A card is
// closed once: a later Close does nothing.
func (l *Live) Close(f func(c *Card)) { l.CloseAt(time.Time{}, f) }

// CloseAt is Close for a run that ended at at: the card's duration is
// counted to it (a card closed after the fact, its run found ended by a
// later process). A zero at is now.
func (l *Live) CloseAt(at time.Time, f func(c *Card)) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	f(l.card)
	l.card.Ended = true
	l.endAt = at
	if at.IsZero() {
		l.endAt = l.cards.Clock.Now()
	}
	p := PaintWithin(l.card, l.endAt, l.limits)
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

// Err is the permanent error that stopped the card's edits, or nil.
func (l *Live) Err() *Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// forgetSent tells the coalescer the frame it passed on did not land, so
// that the same frame offered again is not skipped as identical.
func (l *Live) forgetSent() { l.coal.unmark() }

// edit sends p as the card's next frame, with a new block id; a frame that
// may have landed (it did, or the call failed on the way) moves the id on.
func (l *Live) edit(p Painted) *Error {
	l.mu.Lock()
	n := l.frame + 1
	l.mu.Unlock()
	p = p.WithBlockID(blockID(n))
	ctx, cancel := context.WithTimeout(context.Background(), EditTimeout)
	defer cancel()
	_, _, _, err := l.cards.API.UpdateMessageContext(ctx, l.Channel, l.TS,
		slack.MsgOptionText(p.Text, false), slack.MsgOptionBlocks(p.Blocks...))
	e := Classify(err)
	if e == nil || e.Class == Temporary {
		l.mu.Lock()
		l.frame = n
		l.mu.Unlock()
	}
	if e == nil {
		l.cards.Edits.Add(1)
	}
	return e
}

// shrink halves the card's limits after a frame refused for its size; it
// says false when that was done already (the error is permanent then).
func (l *Live) shrink() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shrunk {
		return false
	}
	l.shrunk = true
	l.limits = l.limits.Half()
	return true
}

// breakCard stops the card for good after e: no more edits, its share of
// the budget goes to the others at once, and it is logged and counted.
func (l *Live) breakCard(e *Error, action string) {
	l.mu.Lock()
	if l.broken != nil {
		l.mu.Unlock()
		return
	}
	l.broken = e
	inv := l.card.Run
	l.mu.Unlock()
	cs := l.cards
	cs.PermanentFailures.Add(1)
	cs.Budget.Forget(l.key)
	cs.log().Warn("slack: the card was refused for good", "channel", l.Channel, "ts", l.TS, "inv", inv,
		"code", e.Code, "err", e.Err, "action", action)
}

// send is the coalescer's: a progress frame is sent if the budget allows
// and dropped otherwise; a terminal frame is sent when funded (sendEnd).
func (l *Live) send(f Frame) {
	if f.Terminal {
		l.sendEnd(f)
		return
	}
	cs := l.cards
	p, _ := f.Payload.(Painted)
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	if l.final || l.Err() != nil {
		return // the terminal frame is under way, or the card is refused
	}
	if !cs.Budget.Progress(l.key, l.Channel) {
		cs.DroppedProgress.Add(1)
		l.forgetSent()
		l.later(RetryRefused)
		return
	}
	e := l.edit(p)
	if e == nil {
		l.mu.Lock()
		l.fails = 0
		l.mu.Unlock()
		return
	}
	switch {
	case e.Class == RateLimit:
		cs.Budget.Throttled(e.RetryAfter)
		cs.DroppedProgress.Add(1)
		l.forgetSent()
		l.later(max(e.RetryAfter, RetryRefused))
	case e.Class == Temporary:
		l.mu.Lock()
		l.fails++
		n := l.fails
		l.mu.Unlock()
		cs.DroppedProgress.Add(1)
		l.forgetSent()
		l.later(backoff(n))
	case e.TooBig() && l.shrink():
		cs.DroppedProgress.Add(1)
		l.forgetSent()
		l.later(RetryRefused) // painted within the halved limits
	default:
		cs.DroppedProgress.Add(1)
		l.breakCard(e, "stopped editing the card")
	}
}

// sendEnd sends the terminal frame when the budget funds it: re-sent after
// Retry-After (the whole budget backs off) or a backoff, up to
// MaxTerminalRetries; painted smaller once if refused for its size. When it
// cannot land (a permanent error, the retries spent, or the card refused
// already) the end is posted as a new message in the thread.
func (l *Live) sendEnd(f Frame) {
	cs := l.cards
	p, _ := f.Payload.(Painted)
	l.sendMu.Lock()
	l.final = true
	l.sendMu.Unlock()
	if e := l.Err(); e != nil {
		cs.RefusedTerminal.Add(1)
		l.fallback(e)
		return
	}
	var try func(n int)
	at := func(d time.Duration, n int) { // funded, and no sooner than d from now
		now := cs.Clock.Now()
		when := cs.Budget.Terminal(l.key, l.Channel)
		if w := now.Add(d); when.Before(w) {
			when = w
		}
		if wait := when.Sub(now); wait > 0 {
			cs.Clock.AfterFunc(wait, func() { try(n) })
			return
		}
		try(n)
	}
	try = func(n int) {
		l.sendMu.Lock()
		e := l.edit(p)
		l.sendMu.Unlock()
		if e == nil {
			close(l.done)
			return
		}
		switch {
		case e.Class == Permanent && e.TooBig() && l.shrink():
			l.mu.Lock()
			p = PaintWithin(l.card, l.endAt, l.limits)
			l.mu.Unlock()
			cs.TerminalRetries.Add(1)
			at(0, n+1)
		case e.Class == Permanent:
			cs.RefusedTerminal.Add(1)
			l.breakCard(e, "posting the end of the run in the thread")
			l.fallback(e)
		case n >= MaxTerminalRetries:
			cs.RefusedTerminal.Add(1)
			cs.log().Warn("slack: the card's last frame did not land", "channel", l.Channel, "ts", l.TS, "inv", l.Card().Run,
				"code", e.Code, "err", e.Err, "action", "posting the end of the run in the thread")
			l.fallback(e)
		case e.Class == RateLimit:
			// At least Retry-After, and longer each time: the HTTP-200
			// rate_limited names no Retry-After, and a tier's window is a
			// minute.
			d := max(e.RetryAfter, backoff(n+1))
			cs.Budget.Throttled(d)
			cs.TerminalRetries.Add(1)
			at(d, n+1)
		default:
			cs.TerminalRetries.Add(1)
			at(backoff(n+1), n+1)
		}
	}
	at(0, 0)
}

// fallback posts how the run ended as a new message in the card's thread,
// for a card that cannot show it (why: e), then closes Done.
func (l *Live) fallback(e *Error) {
	cs := l.cards
	l.mu.Lock()
	c := *l.card
	endAt := l.endAt
	l.mu.Unlock()
	thread := l.Thread
	if thread == "" {
		thread = l.TS
	}
	p := endMessage(&c, endAt, e.Code)
	cs.post(context.Background(), l.Channel, thread, func(Limits) Painted { return p }, func(_ string, perr *Error) {
		if perr == nil {
			cs.FallbackPosts.Add(1)
		} else {
			cs.log().Error("slack: the end of the run could not be posted", "channel", l.Channel, "ts", l.TS, "inv", c.Run,
				"code", perr.Code, "err", perr.Err, "action", "gave up")
		}
		close(l.done)
	})
}
