// live_test.go: against the rate-limited fake, a rate-limited progress frame
// is dropped and a rate-limited terminal frame is re-sent after Retry-After
// and lands, without holding up Close.

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

func TestRateLimitedFrames(t *testing.T) {
	clk := clock.NewFake(t0)
	fake := fakeslack.New(clk)
	defer fake.Close()
	fake.UpdatesPerMinute = 2
	// A budget far above the fake's limit, so that Slack's 429 is what stops us.
	cs := &Cards{API: slack.New("xoxb-t", slack.OptionAPIURL(fake.URL())), Clock: clk, MinInterval: time.Millisecond, Sync: true,
		Budget: NewBudget(clk, BudgetConfig{PerMinute: 1000, ChannelGap: time.Millisecond})}
	live, err := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		clk.Advance(10 * time.Millisecond)
		live.Update(func(c *Card) {
			c.Apply(events.Event{At: clk.Now().UnixMilli(), Kind: events.KindToolCall, ToolCall: &events.ToolCall{Description: "step"}})
		})
	}
	if cs.Edits.Load() != 2 {
		t.Fatalf("%d edits", cs.Edits.Load())
	}
	live.Close(func(c *Card) { c.Status = "completed" })
	select {
	case <-live.Done():
		t.Fatal("the terminal frame landed through a 429")
	default: // Close returned; the frame waits for Retry-After
	}
	clk.Advance(2 * time.Minute)
	<-live.Done()
	if cs.RefusedTerminal.Load() != 0 || cs.TerminalRetries.Load() == 0 {
		t.Fatalf("refused %d, retries %d", cs.RefusedTerminal.Load(), cs.TerminalRetries.Load())
	}
	if m := fake.Messages()[0]; !strings.HasPrefix(m.Text, "✅ p completed") {
		t.Fatalf("the card ends on %q", m.Text)
	}
}

func TestRateLimitedProgressDropped(t *testing.T) {
	clk := clock.NewFake(t0)
	fake := fakeslack.New(clk)
	defer fake.Close()
	fake.UpdatesPerMinute = 1
	cs := &Cards{API: slack.New("xoxb-t", slack.OptionAPIURL(fake.URL())), Clock: clk, MinInterval: time.Millisecond, Sync: true,
		Budget: NewBudget(clk, BudgetConfig{PerMinute: 1000, ChannelGap: time.Millisecond})}
	live, _ := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	for i := 0; i < 3; i++ {
		clk.Advance(10 * time.Millisecond)
		live.Update(func(c *Card) { c.Acts++ })
	}
	refused := 0
	for _, n := range fake.Refused() {
		refused += n
	}
	// One 429, then the budget holds back until Retry-After: no more.
	if cs.Edits.Load() != 1 || cs.DroppedProgress.Load() != 2 || refused != 1 {
		t.Fatalf("%d edits, %d dropped, %d refused by Slack", cs.Edits.Load(), cs.DroppedProgress.Load(), refused)
	}
}
