// budget.go holds Budget: one token bucket for every card's edits in the
// process, at Slack's published rate for chat.update.

package status

import (
	"math"
	"sync"
	"time"

	"github.com/runehost/runehost/slack/clock"
)

// BudgetConfig configures a Budget. Zero fields take the defaults.
type BudgetConfig struct {
	PerMinute  float64       // Slack's limit, edits a minute for the whole app: 50 (chat.update, Tier 3)
	Burst      float64       // tokens the bucket holds: PerMinute/5
	Refill     float64       // tokens a minute: PerMinute-Burst, so that no minute ever sees more than PerMinute
	Reserve    float64       // tokens kept for terminal frames: Burst/2
	ChannelGap time.Duration // least time between two edits in one channel: 1 s
	LiveWindow time.Duration // a card silent longer leaves the fair share: 30 s
	ShareSpan  time.Duration // the span a card's share is counted over: 1 min
	PostGap    time.Duration // least time between two posts in one channel: 1 s (chat.postMessage)
}

func (c *BudgetConfig) defaults() {
	if c.PerMinute <= 0 {
		c.PerMinute = 50
	}
	if c.Burst <= 0 {
		c.Burst = c.PerMinute / 5
	}
	if c.Refill <= 0 {
		c.Refill = c.PerMinute - c.Burst
		if c.Refill <= 0 {
			c.Refill = c.PerMinute
		}
	}
	if c.Reserve <= 0 {
		c.Reserve = c.Burst / 2
	}
	if c.ChannelGap <= 0 {
		c.ChannelGap = time.Second
	}
	if c.LiveWindow <= 0 {
		c.LiveWindow = 30 * time.Second
	}
	if c.ShareSpan <= 0 {
		c.ShareSpan = time.Minute
	}
	if c.PostGap <= 0 {
		c.PostGap = time.Second
	}
}

// Budget funds card edits and, in a lane of its own, card posts. A full bucket and a minute's refill together
// never exceed Slack's limit, so no sliding minute sees more edits than it
// allows. Progress frames are refused (and dropped by the
// caller) when the bucket is down to the reserve, when their card has had
// its fair share of the live cards', or when their channel was edited less
// than ChannelGap ago. A terminal frame takes a token at once, from the
// reserve if need be; when there is none it reserves one (the bucket goes
// into debt) and is told when it will be funded, and progress frames yield
// until the debt is paid. The bucket refills at the rate, up to Burst, and a
// clock going backwards neither drains nor fills it.
type Budget struct {
	cfg BudgetConfig
	clk clock.Clock

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	blocked  time.Time // no edits before: Slack said Retry-After
	cards    map[string]*cardUse
	channels map[string]time.Time // the next free slot
	// The post lane: chat.postMessage has a limit of its own (about one a
	// second per channel), apart from chat.update's, so posts spend no edit
	// tokens and a throttled edit does not hold up a post, nor the reverse.
	posts       map[string]time.Time // the channel's next free post slot
	postBlocked time.Time            // no posts before: Slack said Retry-After
}

type cardUse struct {
	active time.Time
	edits  []time.Time
}

// NewBudget returns a full budget.
func NewBudget(clk clock.Clock, cfg BudgetConfig) *Budget {
	cfg.defaults()
	return &Budget{cfg: cfg, clk: clk, tokens: cfg.Burst, last: clk.Now(), cards: map[string]*cardUse{}, channels: map[string]time.Time{}, posts: map[string]time.Time{}}
}

func (b *Budget) rate() float64 { return b.cfg.Refill / 60 } // tokens a second

func (b *Budget) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.cfg.Burst, b.tokens+now.Sub(b.last).Seconds()*b.rate())
		b.last = now
	}
}

// now is the clock, never before the last time the budget saw: a clock
// going backwards must not leave slots and holds stranded in the future.
func (b *Budget) now() time.Time {
	now := b.clk.Now()
	if now.Before(b.last) {
		return b.last
	}
	return now
}

// Tokens reports the bucket's level (negative: in debt to terminal frames).
func (b *Budget) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.clk.Now())
	return b.tokens
}

// Touch marks a card live (it has something to show) without an edit.
func (b *Budget) Touch(card string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.use(card, b.clk.Now())
}

func (b *Budget) use(card string, now time.Time) *cardUse {
	u := b.cards[card]
	if u == nil {
		u = &cardUse{}
		b.cards[card] = u
	}
	u.active = now
	return u
}

// share is how many edits a card may make in ShareSpan with the others live.
func (b *Budget) share(now time.Time) int {
	live := 0
	for _, u := range b.cards {
		if now.Sub(u.active) <= b.cfg.LiveWindow {
			live++
		}
	}
	perSpan := b.cfg.Refill * b.cfg.ShareSpan.Minutes()
	return max(1, int(perSpan/float64(max(live, 1))))
}

// Progress asks to send a progress frame of card in channel now. It spends
// a token and returns true, or returns false: the frame is to be dropped.
func (b *Budget) Progress(card, channel string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.refill(now)
	u := b.use(card, now)
	if now.Before(b.blocked) || b.tokens-1 < b.cfg.Reserve || now.Before(b.channels[channel]) {
		return false
	}
	kept := u.edits[:0]
	for _, t := range u.edits {
		if now.Sub(t) < b.cfg.ShareSpan {
			kept = append(kept, t)
		}
	}
	u.edits = kept
	if len(u.edits) >= b.share(now) {
		return false
	}
	b.tokens--
	u.edits = append(u.edits, now)
	b.channels[channel] = now.Add(b.cfg.ChannelGap)
	return true
}

// Terminal funds a card's terminal frame and returns when to send it: now,
// or later when the bucket or the channel cannot take it now. The card
// leaves the live set.
func (b *Budget) Terminal(card, channel string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.refill(now)
	at := now
	b.tokens--
	if b.tokens < 0 {
		at = now.Add(time.Duration(-b.tokens / b.rate() * float64(time.Second)))
	}
	if at.Before(b.blocked) {
		at = b.blocked
	}
	if slot := b.channels[channel]; at.Before(slot) {
		at = slot
	}
	b.channels[channel] = at.Add(b.cfg.ChannelGap)
	delete(b.cards, card)
	return at
}

// Throttled tells the budget Slack refused an edit for retryAfter: nothing
// more is sent before it passes.
func (b *Budget) Throttled(retryAfter time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := b.clk.Now().Add(retryAfter); until.After(b.blocked) {
		b.blocked = until
	}
}

// Forget drops a card from the live set (it ended without a terminal frame,
// or Slack refused it for good): its share goes to the other cards at once.
func (b *Budget) Forget(card string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.cards, card)
}

// Post reserves channel's next post slot and returns when it is: now, or
// later when the channel had a post less than PostGap ago (posts in a
// channel go in the order they asked) or Slack throttled posts.
func (b *Budget) Post(channel string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	at := b.now()
	if at.Before(b.postBlocked) {
		at = b.postBlocked
	}
	if slot := b.posts[channel]; at.Before(slot) {
		at = slot
	}
	b.posts[channel] = at.Add(b.cfg.PostGap)
	return at
}

// ThrottledPosts tells the budget Slack refused a post for retryAfter: no
// post goes, in any channel, before it passes. Edits are not held up.
func (b *Budget) ThrottledPosts(retryAfter time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := b.now().Add(retryAfter); until.After(b.postBlocked) {
		b.postBlocked = until
	}
}
