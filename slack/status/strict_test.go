// strict_test.go runs cards against the shared strict fake Slack: its
// chat.update tier refusing in both of Slack's forms, and a deleted card.

package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/slack/clock"
	"github.com/runehost/runehost/slack/fakeslack"
)

// A chat.update limit far under the budget: the fake refuses as Slack does
// (HTTP 429 with Retry-After, or rate_limited in an HTTP 200), the budget
// backs off, and the terminal frame still lands, at production intervals
// on the virtual clock.
func TestStrictFakeRateLimits(t *testing.T) {
	for _, as200 := range []bool{false, true} {
		t.Run(map[bool]string{false: "429", true: "200"}[as200], func(t *testing.T) {
			clk := clock.NewFake(t0)
			cfg := fakeslack.Strict()
			cfg.PerMinute["chat.update"] = 3
			cfg.RateLimitedAs200 = as200
			fake := fakeslack.NewWith(clk, cfg)
			defer fake.Close()
			cs := &Cards{API: slack.New("xoxb-test", slack.OptionAPIURL(fake.URL())), Clock: clk, Sync: true, Budget: NewBudget(clk, BudgetConfig{})}
			live, err := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 40; i++ {
				clk.Advance(time.Second)
				live.Update(func(c *Card) {
					c.Apply(events.Event{At: clk.Now().UnixMilli(), Kind: events.KindToolCall, ToolCall: &events.ToolCall{Description: "step"}})
				})
			}
			live.Close(func(c *Card) { c.Status = "completed" })
			for i := 0; i < 600; i++ {
				select {
				case <-live.Done():
					i = 600
				default:
					clk.Advance(time.Second)
				}
			}
			select {
			case <-live.Done():
			default:
				t.Fatal("the terminal frame never landed")
			}
			refused := 0
			for r, n := range fake.Refusals() {
				if r.Method == "chat.update" && (r.Status == 429 || r.Error == "rate_limited") {
					refused += n
				}
			}
			if refused == 0 {
				t.Fatal("the fake never refused: the test tests nothing")
			}
			if m := fake.Messages()[0]; !strings.HasPrefix(m.Text, "✅ p completed") || cs.RefusedTerminal.Load() != 0 {
				t.Fatalf("the card ends on %q; %d terminal frames refused", m.Text, cs.RefusedTerminal.Load())
			}
			if n := fake.MaxPerMinute("chat.update"); n > 3 {
				t.Fatalf("%d edits landed in a minute, over the fake's 3", n)
			}
		})
	}
}
