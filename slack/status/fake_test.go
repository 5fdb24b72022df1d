// fake_test.go: a small Slack of this package's own for its tests (the
// shared slack/fakeslack is rewritten apart): chat.postMessage and
// chat.update on the fake clock, an optional chat.update limit a minute with
// Retry-After, and a refuse hook that answers any call with the error a test
// needs, as Slack would send it.

package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/slack/clock"
)

type call struct {
	Method, Channel, TS, ThreadTS, Text, Blocks string
	At                                          time.Time
	Status                                      int    // what the fake answered: 200, 429, 503...
	Err                                         string // Slack's error, "" when ok
}

// answer is how the fake answers a call: an HTTP status (0: 200), a
// Retry-After header ("" none), Slack's error string ("": the call is done).
type answer struct {
	status     int
	retryAfter string
	err        string
}

type fakeMsg struct {
	Channel, TS, ThreadTS, Text, Blocks string
}

type fake struct {
	srv *httptest.Server
	clk clock.Clock
	// perMinute limits chat.update for the whole app (0: none), with
	// Retry-After, as Slack's Tier 3.
	perMinute int
	// refuse, when not nil, may answer a call instead of the fake.
	refuse func(c call) *answer

	mu      sync.Mutex
	seq     int
	calls   []call
	msgs    map[string]*fakeMsg // channel/ts
	order   []string
	updates []time.Time
}

func newFake(t *testing.T, clk clock.Clock) *fake {
	f := &fake{clk: clk, msgs: map[string]*fakeMsg{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) api() *slack.Client { return slack.New("xoxb-t", slack.OptionAPIURL(f.srv.URL+"/")) }

func (f *fake) setRefuse(r func(c call) *answer) {
	f.mu.Lock()
	f.refuse = r
	f.mu.Unlock()
}

func (f *fake) handle(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	c := call{Method: strings.TrimPrefix(r.URL.Path, "/"), Channel: r.PostForm.Get("channel"), TS: r.PostForm.Get("ts"),
		ThreadTS: r.PostForm.Get("thread_ts"), Text: r.PostForm.Get("text"), Blocks: r.PostForm.Get("blocks"), At: f.clk.Now(), Status: 200}
	f.mu.Lock()
	defer f.mu.Unlock()
	var a *answer
	if f.refuse != nil {
		a = f.refuse(c)
	}
	if a == nil && c.Method == "chat.update" && f.perMinute > 0 {
		kept := f.updates[:0]
		for _, t := range f.updates {
			if c.At.Sub(t) < time.Minute {
				kept = append(kept, t)
			}
		}
		f.updates = kept
		if len(kept) >= f.perMinute {
			wait := int(kept[0].Add(time.Minute).Sub(c.At).Seconds() + 0.999)
			a = &answer{status: 429, retryAfter: fmt.Sprint(max(wait, 1)), err: "ratelimited"}
		}
	}
	if a == nil {
		switch c.Method {
		case "chat.postMessage":
			f.seq++
			c.TS = fmt.Sprintf("1700000000.%06d", f.seq)
			f.msgs[c.Channel+"/"+c.TS] = &fakeMsg{Channel: c.Channel, TS: c.TS, ThreadTS: c.ThreadTS, Text: c.Text, Blocks: c.Blocks}
			f.order = append(f.order, c.Channel+"/"+c.TS)
		case "chat.update":
			m := f.msgs[c.Channel+"/"+c.TS]
			if m == nil {
				a = &answer{err: "message_not_found"}
				break
			}
			m.Text, m.Blocks = c.Text, c.Blocks
			f.updates = append(f.updates, c.At)
		default:
			a = &answer{err: "unknown_method"}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if a != nil {
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		c.Err = a.err
		if a.status != 0 {
			c.Status = a.status
			w.WriteHeader(a.status)
		}
		f.calls = append(f.calls, c)
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": a.err})
		return
	}
	f.calls = append(f.calls, c)
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": c.Channel, "ts": c.TS, "text": c.Text})
}

func (f *fake) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// Messages are the messages in the order they were posted.
func (f *fake) Messages() []fakeMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeMsg
	for _, k := range f.order {
		out = append(out, *f.msgs[k])
	}
	return out
}

// count counts the calls of method (to ts, when not "") that f answered so.
func (f *fake) count(method, ts string, ok bool) int {
	n := 0
	for _, c := range f.Calls() {
		if c.Method == method && (ts == "" || c.TS == ts) && (c.Status == 200 && c.Err == "") == ok {
			n++
		}
	}
	return n
}

// drive runs fn on a goroutine, advancing clk by step whenever a timer is
// pending, until fn returns; it fails t after limit of virtual time.
func drive(t *testing.T, clk *clock.Fake, step, limit time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	start := clk.Now()
	for {
		select {
		case <-done:
			return
		default:
		}
		if clk.Now().Sub(start) > limit {
			t.Fatalf("still waiting after %v of virtual time", limit)
		}
		if clk.Pending() == 0 {
			runtime.Gosched()
			time.Sleep(20 * time.Microsecond)
			continue
		}
		clk.Advance(step)
	}
}
