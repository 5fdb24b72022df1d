// live_test.go: against this package's fake Slack (fake_test.go), on the
// fake clock: rate limits back off every card and a terminal frame is
// re-sent after Retry-After; a permanent error stops a card at once and
// releases its share, and its end is posted in the thread; a frame refused
// for its size is painted smaller once; every frame has a new block id.

package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/slack/clock"
)

// cards is a Cards on f and clk, synchronous, with a budget far above any
// fake limit unless cfg says otherwise.
func cards(f *fake, clk *clock.Fake, cfg BudgetConfig) *Cards {
	if cfg.PerMinute == 0 {
		cfg.PerMinute, cfg.ChannelGap = 1000, time.Millisecond
	}
	return &Cards{API: f.api(), Clock: clk, MinInterval: time.Millisecond, Sync: true, Budget: NewBudget(clk, cfg)}
}

func TestRateLimitedFrames(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	f.perMinute = 3 // the post is not an update: two edits, then the close
	cs := cards(f, clk, BudgetConfig{})
	live, err := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		clk.Advance(10 * time.Millisecond)
		live.Update(func(c *Card) {
			c.Apply(events.Event{At: clk.Now().UnixMilli(), Kind: events.KindToolCall, ToolCall: &events.ToolCall{Description: "step"}})
		})
	}
	if cs.Edits.Load() != 3 {
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
	if m := f.Messages()[0]; !strings.HasPrefix(m.Text, "✅ p completed") {
		t.Fatalf("the card ends on %q", m.Text)
	}
}

func TestRateLimitedProgressDropped(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	f.perMinute = 1
	cs := cards(f, clk, BudgetConfig{})
	live, _ := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	for i := 0; i < 3; i++ {
		clk.Advance(10 * time.Millisecond)
		live.Update(func(c *Card) { c.Acts++ })
	}
	// One 429, then the budget holds back until Retry-After: no more.
	if cs.Edits.Load() != 1 || cs.DroppedProgress.Load() != 2 || f.count("chat.update", "", false) != 1 {
		t.Fatalf("%d edits, %d dropped, %d refused by Slack", cs.Edits.Load(), cs.DroppedProgress.Load(), f.count("chat.update", "", false))
	}
}

// Both spellings of a rate limit, as HTTP 200 and as 429 (with and without
// Retry-After), back off the whole budget, and the terminal frame is re-sent
// once the wait has passed, and lands.
func TestRateLimitBacksOffTheBudget(t *testing.T) {
	for _, c := range []struct {
		name string
		a    answer
		wait time.Duration
	}{
		{"rate_limited, HTTP 200", answer{err: "rate_limited"}, DefaultRetryAfter},
		{"ratelimited, HTTP 200", answer{err: "ratelimited"}, DefaultRetryAfter},
		{"429 with Retry-After", answer{status: 429, retryAfter: "7", err: "ratelimited"}, 7 * time.Second},
		{"429 without Retry-After", answer{status: 429, err: "ratelimited"}, DefaultRetryAfter},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			f := newFake(t, clk)
			cs := cards(f, clk, BudgetConfig{})
			live, err := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
			if err != nil {
				t.Fatal(err)
			}
			refused := false
			f.setRefuse(func(cl call) *answer {
				if cl.Method == "chat.update" && !refused {
					refused = true
					return &c.a
				}
				return nil
			})
			live.Close(func(c *Card) { c.Status = "completed" })
			if !refused {
				t.Fatal("the terminal frame was not sent")
			}
			clk.Advance(c.wait - 100*time.Millisecond)
			if cs.Budget.Progress("other", "C9") {
				t.Fatal("another card's progress went during the back-off")
			}
			select {
			case <-live.Done():
				t.Fatal("done before the Retry-After passed")
			default:
			}
			clk.Advance(200 * time.Millisecond)
			<-live.Done()
			ups := []call{}
			for _, cl := range f.Calls() {
				if cl.Method == "chat.update" {
					ups = append(ups, cl)
				}
			}
			if len(ups) != 2 || ups[1].Err != "" || ups[1].At.Sub(ups[0].At) < c.wait {
				t.Fatalf("updates %+v", ups)
			}
			if !strings.HasPrefix(f.Messages()[0].Text, "✅ p completed") || cs.TerminalRetries.Load() != 1 || cs.RefusedTerminal.Load() != 0 {
				t.Fatalf("ends on %q, %d retries, %d refused", f.Messages()[0].Text, cs.TerminalRetries.Load(), cs.RefusedTerminal.Load())
			}
		})
	}
}

// A permanent error on a progress edit stops the card's edits at once and
// its share goes to the other card; it is logged once, with the channel and
// ts; its end is then posted in the thread.
func TestPermanentProgressStopsTheCard(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	var logs bytes.Buffer
	cs := cards(f, clk, BudgetConfig{PerMinute: 50})
	cs.MinInterval = time.Second
	cs.Log = slog.New(slog.NewTextHandler(&logs, nil))
	a, _ := cs.Open(context.Background(), "C1", "100.000001", &Card{Run: "ra", Prog: "p", Started: t0})
	b, _ := cs.Open(context.Background(), "C2", "", &Card{Run: "rb", Prog: "p", Started: t0})
	f.setRefuse(func(cl call) *answer {
		if cl.Method == "chat.update" && cl.TS == a.TS {
			return &answer{err: "message_not_found"}
		}
		return nil
	})
	bEdits := func() int { return f.count("chat.update", b.TS, true) }
	var firstMinute int
	for i := 0; i < 240; i++ { // two minutes, both cards busy
		clk.Advance(500 * time.Millisecond)
		a.Update(func(c *Card) { c.Acts++ })
		b.Update(func(c *Card) { c.Acts++ })
		if i == 119 {
			firstMinute = bEdits()
		}
	}
	if n := f.count("chat.update", a.TS, false); n != 1 || f.count("chat.update", a.TS, true) != 0 {
		t.Fatalf("the refused card was edited %d times", n)
	}
	if a.Err() == nil || a.Err().Code != "message_not_found" || a.Err().Class != Permanent || cs.PermanentFailures.Load() != 1 {
		t.Fatalf("err %v, %d permanent failures", a.Err(), cs.PermanentFailures.Load())
	}
	// Alone in the budget, b gets the whole refill (40 a minute), not half.
	if second := bEdits() - firstMinute; second < 30 {
		t.Fatalf("the other card got %d edits in the second minute", second)
	}
	if n := strings.Count(logs.String(), "refused for good"); n != 1 || !strings.Contains(logs.String(), "channel=C1") || !strings.Contains(logs.String(), "ts="+a.TS) {
		t.Fatalf("logged %d times: %s", n, logs.String())
	}
	a.Close(func(c *Card) { c.Status, c.Answer = "completed", "42" })
	<-a.Done()
	msgs := f.Messages()
	end := msgs[len(msgs)-1]
	if end.ThreadTS != "100.000001" || !strings.Contains(end.Text, "p completed") || !strings.Contains(end.Blocks, "42") || cs.FallbackPosts.Load() != 1 {
		t.Fatalf("the end: %+v, %d fallbacks", end, cs.FallbackPosts.Load())
	}
	if f.count("chat.update", a.TS, false) != 1 {
		t.Fatal("the terminal frame of a refused card was sent as an edit")
	}
}

// A permanent error on the terminal frame posts how the run ended as a new
// message in the thread (the card's own when it is in none).
func TestPermanentTerminalPostsInTheThread(t *testing.T) {
	for _, thread := range []string{"100.000001", ""} {
		clk := clock.NewFake(t0)
		f := newFake(t, clk)
		cs := cards(f, clk, BudgetConfig{})
		live, _ := cs.Open(context.Background(), "C1", thread, &Card{Run: "r1", Prog: "p", Started: t0})
		f.setRefuse(func(cl call) *answer {
			if cl.Method == "chat.update" {
				return &answer{err: "edit_window_closed"}
			}
			return nil
		})
		clk.Advance(65 * time.Second)
		live.Close(func(c *Card) { c.Status = "failed"; c.Answer = "boom" })
		<-live.Done()
		msgs := f.Messages()
		want := thread
		if want == "" {
			want = live.TS
		}
		end := msgs[len(msgs)-1]
		if len(msgs) != 2 || end.ThreadTS != want || !strings.HasPrefix(end.Text, "❌ p failed in 1m 05s") ||
			!strings.Contains(end.Blocks, "edit_window_closed") || !strings.Contains(end.Blocks, "boom") {
			t.Fatalf("thread %q: %+v", thread, msgs)
		}
		if cs.RefusedTerminal.Load() != 1 || cs.FallbackPosts.Load() != 1 || cs.PermanentFailures.Load() != 1 || cs.TerminalRetries.Load() != 0 {
			t.Fatalf("refused %d, fallbacks %d, permanent %d, retries %d", cs.RefusedTerminal.Load(), cs.FallbackPosts.Load(), cs.PermanentFailures.Load(), cs.TerminalRetries.Load())
		}
	}
}

// A terminal frame refused for its size is painted within half the limits
// and sent again, once; refused again, it is permanent.
func TestTooBigRepaintedSmallerOnce(t *testing.T) {
	for _, times := range []int{1, 2} {
		clk := clock.NewFake(t0)
		f := newFake(t, clk)
		cs := cards(f, clk, BudgetConfig{})
		c := &Card{Run: "r1", Prog: "p", Started: t0}
		for i := 0; i < 300; i++ {
			c.Checklist = append(c.Checklist, Item{strings.Repeat("x", 150) + fmt.Sprint(i), "done"})
		}
		live, _ := cs.Open(context.Background(), "C1", "", c)
		var sizes []int
		f.setRefuse(func(cl call) *answer {
			if cl.Method != "chat.update" {
				return nil
			}
			sizes = append(sizes, len(cl.Blocks))
			if len(sizes) <= times {
				return &answer{err: "msg_blocks_too_long"}
			}
			return nil
		})
		live.Close(func(c *Card) { c.Status = "completed" })
		clk.Advance(time.Second) // the channel's gap before the re-send
		<-live.Done()
		switch times {
		case 1:
			if len(sizes) != 2 || sizes[1] >= sizes[0] || cs.FallbackPosts.Load() != 0 || !strings.HasPrefix(f.Messages()[0].Text, "✅") {
				t.Fatalf("sizes %v, %d fallbacks", sizes, cs.FallbackPosts.Load())
			}
		case 2:
			if len(sizes) != 2 || cs.FallbackPosts.Load() != 1 || cs.PermanentFailures.Load() != 1 {
				t.Fatalf("sizes %v, %d fallbacks", sizes, cs.FallbackPosts.Load())
			}
		}
	}
}

// A temporary error on a progress edit is retried with backoff, drawn from
// the budget again; the card goes on.
func TestTemporaryProgressRetried(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	live, _ := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	n := 0
	f.setRefuse(func(cl call) *answer {
		if cl.Method == "chat.update" && n < 2 {
			n++
			return &answer{status: 503}
		}
		return nil
	})
	live.Update(func(c *Card) { c.Acts = 7 })
	clk.Advance(RetryRefused + 10*time.Millisecond) // the first retry: 503 again
	if f.count("chat.update", "", false) != 2 || cs.Edits.Load() != 0 {
		t.Fatalf("calls %+v", f.Calls())
	}
	clk.Advance(2 * RetryRefused) // the backoff doubled
	if cs.Edits.Load() != 1 || live.Err() != nil || !strings.Contains(f.Messages()[0].Text, "7 acts") {
		t.Fatalf("%d edits, err %v, %q", cs.Edits.Load(), live.Err(), f.Messages()[0].Text)
	}
}

// Every frame has a block id of its own, the post's included.
func TestBlockIDPerFrame(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	live, _ := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	for i := 0; i < 4; i++ {
		clk.Advance(10 * time.Millisecond)
		live.Update(func(c *Card) { c.Acts++ })
	}
	live.Close(func(c *Card) { c.Status = "completed" })
	clk.Advance(time.Second)
	<-live.Done()
	seen := map[string]bool{}
	for _, cl := range f.Calls() {
		var blocks []struct {
			BlockID string `json:"block_id"`
		}
		if err := json.Unmarshal([]byte(cl.Blocks), &blocks); err != nil || len(blocks) != 1 {
			t.Fatalf("blocks %s: %v", cl.Blocks, err)
		}
		id := blocks[0].BlockID
		if id == "" || len(id) > 255 || seen[id] {
			t.Fatalf("block id %q again, or empty (%v)", id, seen)
		}
		seen[id] = true
	}
	if len(seen) != 6 {
		t.Fatalf("%d frames", len(seen))
	}
}

// With a painter per card (not Sync): a permanent error stops the card, and
// its end lands as a new message in the thread.
func TestPermanentAsync(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	cs.Sync = false
	live, _ := cs.Open(context.Background(), "C1", "100.000001", &Card{Run: "r1", Prog: "p", Started: t0})
	f.setRefuse(func(cl call) *answer {
		if cl.Method == "chat.update" {
			return &answer{err: "is_archived"}
		}
		return nil
	})
	live.Update(func(c *Card) { c.Acts++ })
	for i := 0; live.Err() == nil; i++ {
		if i > 5000 {
			t.Fatal("the card was never refused")
		}
		time.Sleep(time.Millisecond)
		clk.Advance(10 * time.Millisecond)
	}
	live.Close(func(c *Card) { c.Status = "completed" })
	for i := 0; ; i++ {
		select {
		case <-live.Done():
			if m := f.Messages(); len(m) != 2 || m[1].ThreadTS != "100.000001" || cs.FallbackPosts.Load() != 1 || f.count("chat.update", "", false) != 1 {
				t.Fatalf("%+v", m)
			}
			return
		case <-time.After(time.Millisecond):
			clk.Advance(100 * time.Millisecond)
		}
		if i > 5000 {
			t.Fatal("never done")
		}
	}
}

// CloseAt counts the card's duration to the run's end, not to the close
// (a card closed after the fact); a second close changes nothing.
func TestCloseAtTheRunsEnd(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	live, err := cs.Open(context.Background(), "C1", "", &Card{Run: "r1", Prog: "p", Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	live.CloseAt(t0.Add(3*time.Minute+4*time.Second), func(c *Card) { c.Status = "cancelled" })
	live.Close(func(c *Card) { c.Status = "completed" })
	<-live.Done()
	if n := f.count("chat.update", "", true); n != 1 {
		t.Fatalf("%d edits", n)
	}
	if m := f.Messages()[0]; !strings.HasPrefix(m.Text, "❌ p cancelled in 3m 04s") {
		t.Fatalf("the card ends on %q", m.Text)
	}
}
