// post_test.go: posts are queued per channel, retried after a rate limit or
// a temporary error and land; a post that cannot land within the bound, or
// is refused for good, gives a classified error; Reply is literal.

package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/slack/clock"
)

func TestRefusedPostRetriedAndLands(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	n := 0
	f.setRefuse(func(cl call) *answer {
		if cl.Method != "chat.postMessage" {
			return nil
		}
		n++
		switch n {
		case 1:
			return &answer{status: 429, retryAfter: "3", err: "ratelimited"}
		case 2:
			return &answer{err: "rate_limited"}
		case 3:
			return &answer{status: 503}
		case 4:
			return &answer{err: "internal_error"}
		}
		return nil
	})
	var live *Live
	var err error
	drive(t, clk, 100*time.Millisecond, time.Minute, func() {
		live, err = cs.Open(context.Background(), "C1", "100.000001", &Card{Prog: "p"})
	})
	if err != nil {
		t.Fatal(err)
	}
	calls := f.Calls()
	if len(calls) != 5 || live.TS != calls[4].TS || calls[4].ThreadTS != "100.000001" || cs.PostRetries.Load() != 4 || cs.Posts.Load() != 1 {
		t.Fatalf("%d calls, %d retries: %+v", len(calls), cs.PostRetries.Load(), calls)
	}
	// Retry-After 3 s, the default 2 s for rate_limited, 1 s then 2 s of backoff.
	if d := calls[4].At.Sub(calls[0].At); d < 8*time.Second {
		t.Fatalf("landed after %v", d)
	}
}

func TestPostBoundedAndClassified(t *testing.T) {
	for _, c := range []struct {
		name  string
		a     answer
		class Class
		code  string
		calls int // at most
	}{
		{"permanent at once", answer{err: "channel_not_found"}, Permanent, "channel_not_found", 1},
		{"not in the channel", answer{err: "not_in_channel"}, Permanent, "not_in_channel", 1},
		{"temporary past the bound", answer{status: 503}, Temporary, "http_503", 10},
		{"rate limited past the bound", answer{status: 429, retryAfter: "20", err: "ratelimited"}, RateLimit, "ratelimited", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			f := newFake(t, clk)
			cs := cards(f, clk, BudgetConfig{})
			f.setRefuse(func(cl call) *answer { return &c.a })
			var err error
			drive(t, clk, 100*time.Millisecond, time.Minute, func() {
				_, err = cs.Open(context.Background(), "C1", "", &Card{Prog: "p"})
			})
			var e *Error
			if !errors.As(err, &e) || e.Class != c.class || e.Code != c.code {
				t.Fatalf("%v", err)
			}
			if took := clk.Now().Sub(t0); took > DefaultPostTimeout {
				t.Fatalf("gave up after %v", took)
			}
			if n := len(f.Calls()); n > c.calls || n == 0 {
				t.Fatalf("%d calls", n)
			}
			if c.class != Permanent && !errors.Is(err, ErrPostTimeout) {
				t.Fatalf("%v is not a timeout", err)
			}
			if cs.FailedPosts.Load() != 1 {
				t.Fatalf("%d failed posts", cs.FailedPosts.Load())
			}
		})
	}
}

// Posts in one channel go a second apart, in order; another channel is not
// held up.
func TestPostsQueuedPerChannel(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	drive(t, clk, 100*time.Millisecond, time.Minute, func() {
		for _, ch := range []string{"C1", "C2", "C1", "C1"} {
			if _, err := cs.Open(context.Background(), ch, "", &Card{Prog: ch}); err != nil {
				t.Error(err)
			}
		}
	})
	var at []time.Duration
	for _, cl := range f.Calls() {
		at = append(at, cl.At.Sub(t0).Round(100*time.Millisecond))
	}
	if len(at) != 4 || at[0] != 0 || at[1] != 0 || at[2] < time.Second || at[3]-at[2] < time.Second || cs.PostsQueued.Load() != 2 {
		t.Fatalf("posts at %v, %d queued", at, cs.PostsQueued.Load())
	}
}

func TestOpenCanceled(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	f.setRefuse(func(cl call) *answer { return &answer{status: 503} })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cs.Open(ctx, "C1", "", &Card{Prog: "p"})
	var e *Error
	if !errors.As(err, &e) || e.Code != "canceled" || !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}

func TestReplyPlainAndLiteral(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFake(t, clk)
	cs := cards(f, clk, BudgetConfig{})
	if err := cs.Reply(context.Background(), "C1", "100.000001", "no card: <!channel> & co"); err != nil {
		t.Fatal(err)
	}
	m := f.Messages()[0]
	if m.ThreadTS != "100.000001" || m.Text != "no card: &lt;!channel&gt; &amp; co" || m.Blocks != "" {
		t.Fatalf("%+v", m)
	}
	f.setRefuse(func(cl call) *answer { return &answer{err: "is_archived"} })
	var err error
	drive(t, clk, 100*time.Millisecond, time.Minute, func() { err = cs.Reply(context.Background(), "C1", "", "x") })
	var e *Error
	if !errors.As(err, &e) || e.Class != Permanent || !strings.Contains(err.Error(), "is_archived") {
		t.Fatalf("%v", err)
	}
}
