// post.go holds the post queue: every chat.postMessage of the cards (a
// card's first frame, a Reply, the end of a run whose card Slack refused)
// is drawn from the budget's post lane (one a second per channel), queued,
// and retried with backoff after a temporary error or a rate limit, within
// a bound.

package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
)

// DefaultPostTimeout is how long a post is queued and retried when
// Cards.PostTimeout is 0.
const DefaultPostTimeout = 30 * time.Second

// MaxPostBackoff bounds the backoff between two tries of a post after
// temporary errors (1 s, 2 s, 4 s, then 8 s).
const MaxPostBackoff = 8 * time.Second

// ErrPostTimeout is in the chain of the error of a post that could not land
// within Cards.PostTimeout.
var ErrPostTimeout = errors.New("the post could not land within the post timeout")

func (cs *Cards) postTimeout() time.Duration {
	if cs.PostTimeout > 0 {
		return cs.PostTimeout
	}
	return DefaultPostTimeout
}

// postReq is one post in the queue.
type postReq struct {
	cs               *Cards
	ctx              context.Context
	channel, thread  string
	paint            func(Limits) Painted // the payload, within the limits given
	done             func(ts string, err *Error)
	deadline         time.Time
	tries            int
	shrunk, waited   bool
	last             *Error
	abandoned, ended atomic.Bool
}

// post queues a post of paint's payload in channel (in thread, if not "")
// and calls done once with its ts, or with why it could not land: a
// permanent error at once, or after PostTimeout the last refusal, wrapping
// ErrPostTimeout. done may run on the caller's goroutine (a free slot) or
// on a clock's timer.
func (cs *Cards) post(ctx context.Context, channel, thread string, paint func(Limits) Painted, done func(ts string, err *Error)) *postReq {
	r := &postReq{cs: cs, ctx: ctx, channel: channel, thread: thread, paint: paint, done: done,
		deadline: cs.Clock.Now().Add(cs.postTimeout())}
	r.schedule(0)
	return r
}

// postWait is post, waiting for the outcome or ctx's end.
func (cs *Cards) postWait(ctx context.Context, channel, thread string, paint func(Limits) Painted) (string, error) {
	type result struct {
		ts  string
		err *Error
	}
	res := make(chan result, 1)
	r := cs.post(ctx, channel, thread, paint, func(ts string, err *Error) { res <- result{ts, err} })
	select {
	case o := <-res:
		if o.err != nil {
			return "", o.err
		}
		return o.ts, nil
	case <-ctx.Done():
		r.abandoned.Store(true)
		return "", Classify(ctx.Err())
	}
}

func (r *postReq) finish(ts string, err *Error) {
	if r.ended.Swap(true) {
		return
	}
	if err != nil {
		r.cs.FailedPosts.Add(1)
	}
	r.done(ts, err)
}

// timedOut ends the post: it could not land within the bound.
func (r *postReq) timedOut() {
	e := &Error{Class: RateLimit, Code: "post_timeout", Err: ErrPostTimeout}
	if r.last != nil {
		e = &Error{Class: r.last.Class, Code: r.last.Code, RetryAfter: r.last.RetryAfter, Err: fmt.Errorf("%w: %w", ErrPostTimeout, r.last)}
	}
	r.finish("", e)
}

// schedule tries the post again no sooner than d from now, in its
// channel's next free slot.
func (r *postReq) schedule(d time.Duration) {
	cs := r.cs
	now := cs.Clock.Now()
	if now.Add(d).After(r.deadline) {
		r.timedOut()
		return
	}
	if d > 0 {
		r.queued()
		cs.Clock.AfterFunc(d, func() { r.schedule(0) })
		return
	}
	at := cs.Budget.Post(r.channel)
	if at.After(r.deadline) {
		r.timedOut()
		return
	}
	if wait := at.Sub(now); wait > 0 {
		r.queued()
		cs.Clock.AfterFunc(wait, r.attempt)
		return
	}
	r.attempt()
}

func (r *postReq) queued() {
	if !r.waited {
		r.waited = true
		r.cs.PostsQueued.Add(1)
	}
}

// attempt sends the post and acts on the outcome.
func (r *postReq) attempt() {
	cs := r.cs
	if r.abandoned.Load() {
		r.finish("", Classify(context.Canceled))
		return
	}
	if err := r.ctx.Err(); err != nil {
		r.finish("", Classify(err))
		return
	}
	lim := DefaultLimits
	if r.shrunk {
		lim = lim.Half()
	}
	p := r.paint(lim)
	opts := []slack.MsgOption{slack.MsgOptionText(p.Text, false)}
	if len(p.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(p.Blocks...))
	}
	if r.thread != "" {
		opts = append(opts, slack.MsgOptionTS(r.thread))
	}
	if r.tries > 0 {
		cs.PostRetries.Add(1)
	}
	r.tries++
	ctx, cancel := context.WithTimeout(r.ctx, EditTimeout)
	_, ts, err := cs.API.PostMessageContext(ctx, r.channel, opts...)
	cancel()
	e := Classify(err)
	if e == nil {
		cs.Posts.Add(1)
		r.finish(ts, nil)
		return
	}
	r.last = e
	switch {
	case e.Class == RateLimit:
		cs.Budget.ThrottledPosts(e.RetryAfter)
		r.schedule(0) // the slot is past the Retry-After
	case e.Class == Temporary:
		r.schedule(min(time.Second<<min(r.tries-1, 4), MaxPostBackoff))
	case e.TooBig() && !r.shrunk:
		r.shrunk = true
		r.schedule(0)
	default:
		r.finish("", e)
	}
}

// Reply posts text, plain and literal (the characters Slack's mrkdwn
// parses are escaped; it is cut to Slack's 40,000), in channel's thread
// threadTS ("" for none), through the same queue and bound as Open: for a
// mention that cannot get a card, to say why (the *Error Open returned has
// the class and Slack's code). It blocks until the reply lands or cannot;
// its error is an *Error as Open's.
func (cs *Cards) Reply(ctx context.Context, channel, threadTS, text string) error {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if r := []rune(text); len(r) > DefaultLimits.Text/2 { // escaping may double it
		text = string(r[:DefaultLimits.Text/2-1]) + "…"
	}
	if strings.TrimSpace(text) == "" {
		text = "…" // Slack refuses an empty message (no_text)
	}
	p := Painted{Text: escape(text)}
	_, err := cs.postWait(ctx, channel, threadTS, func(Limits) Painted { return p })
	return err
}

// endMessage is the message that says how a run ended when its card cannot
// (code: why), small enough for any limit: the title, a note, and the
// answer cut short.
func endMessage(c *Card, at time.Time, code string) Painted {
	title := Title(c, at)
	els := []slack.RichTextElement{
		slack.NewRichTextSection(text(title, bold)),
		slack.NewRichTextSection(text("The status card could not be updated ("+oneLine(code, 80)+"); this is how the run ended.", ital)),
	}
	if c.Answer != "" {
		els = append(els, pre(Cut(c.Answer, MaxPreLines, 500)))
	}
	if c.Link != "" {
		els = append(els, slack.NewRichTextSection(slack.NewRichTextSectionLinkElement(c.Link, "run "+oneLine(c.Run, 80), ital)))
	}
	return Painted{Text: escape(title), Blocks: []slack.Block{slack.NewRichTextBlock("end", els...)}}
}
