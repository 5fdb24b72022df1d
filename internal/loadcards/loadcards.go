// Package loadcards simulates many live status cards against the fake
// Slack's rate limits, on a virtual clock: each card ticks with its run's
// events and closes; the harness checks that no terminal frame was refused,
// every card ended on its final frame, no minute saw more edits than the
// limit, and that the edits are the same with the limit lifted.
package loadcards

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/slack/clock"
	"github.com/runehost/runehost/slack/fakeslack"
	"github.com/runehost/runehost/slack/status"
)

// Result is one simulation's outcome.
type Result struct {
	Cards, RefusedTerminal, MaxPerMinute, Closed  int
	PermanentFailures, FallbackPosts, PostRetries int
	PostsQueued                                   int             // posts that waited for their channel's slot
	MaxChannelPerMinute                           int             // the most calls one channel saw land in a minute
	EndToFinal                                    []time.Duration // from each run's end to its terminal frame, sorted
	PostDelays                                    []time.Duration // from each card's post asked to landed, sorted
	Finals                                        []string        // each card's final blocks, in card order
	Edits                                         []string        // card:key of every accepted edit, in order
	Violations                                    []string
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// Run simulates n cards with the fake limiting chat.update to limit a minute
// (0: no limit), seeded, with the budget at Slack's rate.
func Run(n, limit int, seed int64) (*Result, error) { return RunWith(n, limit, 50, seed) }

// RunWith is Run with the budget set to budgetPerMinute.
func RunWith(n, limit int, budgetPerMinute float64, seed int64) (*Result, error) {
	clk := clock.NewFake(t0)
	// The strict fake: Slack's tiers and per-channel posting rate, blocks
	// validated with Slack's errors, updates checked by channel.
	cfg := fakeslack.Strict()
	if limit > 0 {
		cfg.PerMinute["chat.update"] = limit
	} else {
		delete(cfg.PerMinute, "chat.update")
	}
	fake := fakeslack.NewWith(clk, cfg)
	defer fake.Close()
	api := slack.New("xoxb-load", slack.OptionAPIURL(fake.URL()))
	cards := &status.Cards{API: api, Budget: status.NewBudget(clk, status.BudgetConfig{PerMinute: budgetPerMinute}), Clock: clk, Sync: true}
	rng := rand.New(rand.NewSource(seed))
	type plan struct {
		card   *status.Card
		openAt time.Duration
		live   *status.Live
		at     []time.Duration // event times
		end    time.Duration
		next   int
		closed bool
		ended  time.Duration // when its run ended (Close was called)
		landed time.Duration // when its terminal frame landed
	}
	plans := make([]*plan, n)
	var postDelays []time.Duration
	for i := range plans {
		// Cards are posted OpenGap apart: a channel (one in 7) gets a post
		// every 7 gaps, past chat.postMessage's rate, so Open never waits.
		p := &plan{card: &status.Card{Run: fmt.Sprintf("r%d", i+1), Prog: "load", Started: t0, Verbosity: status.Verbose},
			openAt: time.Duration(i) * OpenGap}
		k := 20 + rng.Intn(30)
		start := p.openAt + time.Duration(rng.Intn(60))*time.Second
		t := start
		for j := 0; j < k; j++ {
			t += time.Duration(200+rng.Intn(8000)) * time.Millisecond
			p.at = append(p.at, t)
		}
		p.end = t + time.Duration(rng.Intn(5000))*time.Millisecond
		plans[i] = p
	}
	step := 100 * time.Millisecond
	for now := time.Duration(0); ; now += step {
		open := 0
		for i, p := range plans {
			if p.live == nil {
				if p.openAt > now {
					open++
					continue
				}
				asked := clk.Now()
				live, err := openCard(clk, cards, fmt.Sprintf("C%d", i%7), p.card)
				if err != nil {
					return nil, err
				}
				p.live = live
				postDelays = append(postDelays, clk.Now().Sub(asked))
			}
			for p.next < len(p.at) && p.at[p.next] <= now {
				j := p.next
				p.next++
				at := t0.Add(p.at[j]).UnixMilli()
				ev := events.Event{At: at, Kind: events.KindToolCall, ToolCall: &events.ToolCall{CallID: fmt.Sprintf("r%d#%d", i+1, j), Tool: "tool.run", Description: fmt.Sprintf("tool.run step-%d", j)}}
				if j%2 == 1 {
					ev = events.Event{At: at, Kind: events.KindToolResult, ToolResult: &events.ToolResult{Tool: "tool.run", OK: true, Summary: fmt.Sprintf("done %d", j)}}
				}
				p.live.Update(func(c *status.Card) { c.Apply(ev) })
			}
			if !p.closed && p.next == len(p.at) && p.end <= now {
				p.closed, p.ended = true, now
				p.live.Close(func(c *status.Card) { c.Status, c.Answer = "completed", fmt.Sprintf("card %d finished", i+1) })
			}
			if !p.closed {
				open++
			}
		}
		for _, p := range plans {
			if p.closed && p.landed == 0 {
				select {
				case <-p.live.Done():
					p.landed = now
				default:
				}
			}
		}
		if open == 0 {
			break
		}
		clk.Advance(step)
	}
	for i := 0; i < 20*60*10; i++ { // drain the funded terminal frames
		done := true
		for _, p := range plans {
			select {
			case <-p.live.Done():
				if p.landed == 0 {
					p.landed = clk.Now().Sub(t0)
				}
			default:
				done = false
			}
		}
		if done {
			break
		}
		clk.Advance(step)
	}
	res := &Result{Cards: n, RefusedTerminal: int(cards.RefusedTerminal.Load()), MaxPerMinute: fake.MaxUpdatesPerMinute(),
		PermanentFailures: int(cards.PermanentFailures.Load()), FallbackPosts: int(cards.FallbackPosts.Load()), PostRetries: int(cards.PostRetries.Load())}
	msgs := map[string]fakeslack.Message{}
	for _, m := range fake.Messages() {
		msgs[m.Channel+"/"+m.TS] = m
	}
	for i, p := range plans {
		select {
		case <-p.live.Done():
			res.Closed++
		default:
			res.Violations = append(res.Violations, fmt.Sprintf("card %d never got its terminal frame", i+1))
		}
		m := msgs[p.live.Channel+"/"+p.live.TS]
		final := status.Paint(ptr(p.live.Card()), time.Time{})
		if !strings.Contains(m.Text, "✅ load completed") {
			res.Violations = append(res.Violations, fmt.Sprintf("card %d ends on %q, not its final frame", i+1, m.Text))
		}
		_ = final
		res.Finals = append(res.Finals, m.Text+"\n"+m.Blocks)
	}
	for _, p := range plans {
		if p.landed > 0 {
			res.EndToFinal = append(res.EndToFinal, p.landed-p.ended)
		}
	}
	slices.Sort(res.EndToFinal)
	perMinute := map[string]int{} // channel and minute: calls that landed
	for _, r := range fake.Requests() {
		if r.Method == "chat.update" && r.Status == 200 {
			res.Edits = append(res.Edits, r.Body)
		}
		if (r.Method == "chat.update" || r.Method == "chat.postMessage") && r.Status == 200 {
			k := channelOf(r.Body) + "@" + r.At.Truncate(time.Minute).String()
			perMinute[k]++
			res.MaxChannelPerMinute = max(res.MaxChannelPerMinute, perMinute[k])
		}
	}
	res.PostsQueued = int(cards.PostsQueued.Load())
	slices.Sort(postDelays)
	res.PostDelays = postDelays
	if limit > 0 && res.MaxPerMinute > limit {
		res.Violations = append(res.Violations, fmt.Sprintf("%d edits in a minute, over the limit of %d", res.MaxPerMinute, limit))
	}
	if res.PermanentFailures > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d cards refused for good", res.PermanentFailures))
	}
	if res.RefusedTerminal > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d terminal frames refused", res.RefusedTerminal))
	}
	return res, nil
}

func ptr(c status.Card) *status.Card { return &c }

// channelOf is the channel a form-encoded (or JSON) call names.
func channelOf(body string) string {
	if v, err := url.ParseQuery(body); err == nil && v.Get("channel") != "" {
		return v.Get("channel")
	}
	var j struct {
		Channel string `json:"channel"`
	}
	json.Unmarshal([]byte(body), &j)
	return j.Channel
}

// Percentile is the p-th percentile (0 to 100) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// OpenGap is the time between two cards' posts in the simulation; 0 opens
// them all at once, a burst that queues on the channels' posting rate.
var OpenGap = 200 * time.Millisecond

// openCard posts a card. A post that had to wait for its slot (or be
// retried) waits on the virtual clock, which is advanced here until it lands
// or the post's bound passes; one that did not leaves the clock alone.
func openCard(clk *clock.Fake, cards *status.Cards, channel string, c *status.Card) (*status.Live, error) {
	type result struct {
		live *status.Live
		err  error
	}
	res := make(chan result, 1)
	queued := cards.PostsQueued.Load()
	go func() {
		l, err := cards.Open(context.Background(), channel, "", c)
		res <- result{l, err}
	}()
	for {
		select {
		case r := <-res:
			return r.live, r.err
		case <-time.After(time.Millisecond):
			if cards.PostsQueued.Load() > queued { // it waits on the clock, not on the fake
				clk.Advance(10 * time.Millisecond)
			}
		}
	}
}

// Compare runs the simulation with the limit and with it lifted, and checks
// that the edits are the same.
func Compare(n, limit int, seed int64) (*Result, error) {
	limited, err := Run(n, limit, seed)
	if err != nil {
		return nil, err
	}
	free, err := Run(n, 0, seed)
	if err != nil {
		return nil, err
	}
	if len(limited.Edits) != len(free.Edits) {
		limited.Violations = append(limited.Violations, fmt.Sprintf("%d edits with the limit, %d without", len(limited.Edits), len(free.Edits)))
	} else {
		for i := range limited.Edits {
			if limited.Edits[i] != free.Edits[i] {
				limited.Violations = append(limited.Violations, fmt.Sprintf("edit %d differs with the limit lifted", i+1))
				break
			}
		}
	}
	for i := range limited.Finals {
		if limited.Finals[i] != free.Finals[i] {
			limited.Violations = append(limited.Violations, fmt.Sprintf("card %d's final frame differs with the limit lifted", i+1))
		}
	}
	return limited, nil
}
