// ended_test.go: a run started from Slack that ends by another way than
// the dispatcher's own drive (an await's timeout woken by the host's loop,
// an event sent by the CLI or the API, a cancel, any of them while no
// dispatcher runs) still has its card closed, once, with its final status
// and answer, and the card's clock stops.

package dispatch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/server"
	"github.com/runehost/runehost/slack/fakeslack"
	"github.com/runehost/runehost/store"
)

// approveProg asks for an approval and awaits it (with a timeout when
// timeout is not ""): the documented approval pattern.
func approveProg(timeout string) string {
	sel := "{key: req.key}"
	if timeout != "" {
		sel = "{key: req.key, timeout: " + timeout + "}"
	}
	return `let req = act "approval" {question: "Ship it?"}
let ans = await ` + sel + `
return "shipped: " + ans.text`
}

// served is a dispatcher inside a serve: the host's loop drives what
// becomes runnable, and the API's service takes sends and cancels.
type served struct {
	fake *fakeslack.Server
	d    *Dispatcher
	svc  *server.Service
	dir  string
	stop func()
}

// serve starts a dispatcher on dir with its heartbeat every heartbeat
// (real time) and, like runehost serve, a host.Loop beside it.
func serve(t *testing.T, fake *fakeslack.Server, dir string, heartbeat time.Duration) *served {
	t.Helper()
	d, _, stop := startWith(t, fake, dir, func(c *Config) { c.Heartbeat = heartbeat })
	loop := &host.Loop{E: d.e, Poll: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop.Run(ctx) }()
	var once sync.Once
	halt := func() { once.Do(func() { cancel(); <-done; d.e.Park(context.Background()) }) }
	t.Cleanup(halt) // before the dispatcher's stop, which closes the store
	return &served{fake: fake, d: d, svc: &server.Service{E: d.e, Loop: loop}, dir: dir, stop: func() { halt(); stop() }}
}

// prog writes a prog in the dispatcher's prog directory.
func (s *served) prog(t *testing.T, name, src string) {
	if err := os.WriteFile(filepath.Join(s.dir, "progs", name+".rune"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// awaiting mentions prog and returns its thread, its run and the key it
// awaits, once the run waits and (shown) its card says so.
func (s *served) awaiting(t *testing.T, prog string, shown bool) (thread, inv, key string) {
	t.Helper()
	thread = s.fake.Mention("C1", "U1", prog)
	var st *host.RunState
	waitFor(t, "the wait", 10*time.Second, func() bool {
		invs, err := s.d.e.List()
		if err != nil || len(invs) == 0 || invs[0].Parent != "" {
			return false
		}
		inv = invs[0].ID // the root: its children sort after it
		st, err = s.d.e.State(inv)
		return err == nil && st.Status != host.Running
	})
	if st.Status != host.Waiting && st.Status != host.Joining {
		t.Fatalf("%s: %+v", inv, st)
	}
	key = strings.Trim(strings.TrimPrefix(st.Waiting, "an event "), "[]")
	if shown {
		waitFor(t, "the card's wait", 10*time.Second, func() bool {
			c := card(s.fake)
			return c != nil && strings.Contains(c.Text, "waiting for "+st.Waiting)
		})
	}
	return thread, inv, key
}

// settled waits for the card to show the end, its title opening with
// title and its blocks holding answer, and checks that it stays so: the
// dispatcher no longer keeps the run live (the heartbeat repaints only
// those it keeps) and no edit follows.
func settled(t *testing.T, fake *fakeslack.Server, d *Dispatcher, title, answer string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c := card(fake)
		if c != nil && strings.HasPrefix(c.Text, title) {
			break
		}
		if time.Now().After(deadline) {
			if c == nil {
				t.Fatalf("no card")
			}
			t.Fatalf("the card never ended as %q: it says %q after %d edits", title, c.Text, c.Edits)
		}
	}
	if c := card(fake); !strings.Contains(c.Blocks, answer) {
		t.Fatalf("the end without %q: %s\n%s", answer, c.Text, c.Blocks)
	}
	waitFor(t, "the run forgotten", 2*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.runs) == 0
	})
	before := *card(fake)
	time.Sleep(time.Second) // 50 s of the cards' clock: many heartbeats
	if after := card(fake); after.Edits != before.Edits || after.Text != before.Text {
		t.Fatalf("the card went on after its end: %d edits more, %q then %q", after.Edits-before.Edits, before.Text, after.Text)
	}
	if n := len(fake.Messages()); n != 1 {
		t.Fatalf("%d messages: the end was posted apart", n)
	}
}

// The approval pattern with a timeout, under runehost serve: nobody
// answers, the loop wakes the await at its deadline and the run fails with
// the timeout; the card says so. (The heartbeat, which would wake the
// await itself, is kept out of the way: it is the loop's wake that was
// never seen.)
func TestEndedByTimeoutUnderTheLoop(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	t.Cleanup(fake.Close)
	s := serve(t, fake, t.TempDir(), time.Hour)
	s.prog(t, "approve", approveProg("1000"))
	s.awaiting(t, "approve", false) // the card may not show the wait before the timeout
	settled(t, fake, s.d, "❌ approve failed", "timeout")
}

// An event sent from outside Slack, through the API (the loop drives the
// run on) or by the engine's Send (the caller drives it, as the CLI does):
// the card closes with the answer, and its clock stops ticking.
func TestEndedBySendFromOutside(t *testing.T) {
	for _, via := range []string{"api", "engine"} {
		t.Run(via, func(t *testing.T) {
			fake := fakeslack.NewStrict(fastClock(t))
			t.Cleanup(fake.Close)
			s := serve(t, fake, t.TempDir(), 20*time.Millisecond)
			s.prog(t, "approve", approveProg(""))
			_, inv, key := s.awaiting(t, "approve", true)
			payload := `{"text": "yes from the CLI"}`
			var err error
			if via == "api" {
				_, err = s.svc.Send(inv, api.Send{Tag: key, Payload: json.RawMessage(payload)})
			} else {
				_, err = s.d.e.Send(context.Background(), inv, key, data(t, payload))
			}
			if err != nil {
				t.Fatal(err)
			}
			settled(t, fake, s.d, "✅ approve completed", "shipped: yes from the CLI")
		})
	}
}

// A cancel from outside (runehost cancel, through the API).
func TestEndedByCancelFromOutside(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	t.Cleanup(fake.Close)
	s := serve(t, fake, t.TempDir(), 20*time.Millisecond)
	s.prog(t, "approve", approveProg(""))
	_, inv, _ := s.awaiting(t, "approve", true)
	if err := s.svc.Cancel(inv); err != nil {
		t.Fatal(err)
	}
	settled(t, fake, s.d, "❌ approve cancelled", "run "+inv)
}

// A reply in the thread while the loop runs beside the dispatcher: the
// card closes once, as before.
func TestEndedByReplyUnderTheLoop(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	t.Cleanup(fake.Close)
	s := serve(t, fake, t.TempDir(), 20*time.Millisecond)
	s.prog(t, "approve", approveProg("60000"))
	thread, _, _ := s.awaiting(t, "approve", true)
	fake.Reply("C1", thread, "U2", "yes in the thread")
	settled(t, fake, s.d, "✅ approve completed", "shipped: yes in the thread")
}

// A run that ends while no dispatcher runs (runehost send or cancel on
// the store, serve stopped): the next dispatcher finds it ended and closes
// its card; the one after leaves the card alone.
func TestEndedWhileNoDispatcherRuns(t *testing.T) {
	for _, how := range []string{"send", "cancel"} {
		t.Run(how, func(t *testing.T) {
			fake := fakeslack.NewStrict(fastClock(t))
			t.Cleanup(fake.Close)
			dir := t.TempDir()
			s := serve(t, fake, dir, 20*time.Millisecond)
			s.prog(t, "approve", approveProg(""))
			_, inv, key := s.awaiting(t, "approve", true)
			s.stop()
			// The CLI, on the store itself.
			st, err := store.Open(store.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			e, _, err := host.Open(st, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
			if err != nil {
				t.Fatal(err)
			}
			title, answer := "❌ approve cancelled", "run "+inv
			if how == "send" {
				title, answer = "✅ approve completed", "shipped: yes while serve was down"
				if out, err := e.Send(context.Background(), inv, key, data(t, `{"text": "yes while serve was down"}`)); err != nil || out.Status != host.Completed {
					t.Fatalf("send: %+v %v", out, err)
				}
			} else if err := e.Cancel(inv); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if c := card(fake); !strings.Contains(c.Text, "waiting for an event") {
				t.Fatalf("the card changed with no dispatcher: %s", c.Text)
			}
			s = serve(t, fake, dir, 20*time.Millisecond)
			settled(t, fake, s.d, title, answer)
			edits := card(fake).Edits
			s.stop()
			s = serve(t, fake, dir, 20*time.Millisecond)
			time.Sleep(500 * time.Millisecond)
			if c := card(fake); c.Edits != edits || !strings.HasPrefix(c.Text, title) {
				t.Fatalf("a later start edited the closed card again: %d edits more: %s", c.Edits-edits, c.Text)
			}
		})
	}
}

// data is a JSON text as a data value's encoding.
func data(t *testing.T, js string) []byte {
	t.Helper()
	v, err := checkpoint.DataFromJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	b, err := checkpoint.EncodeData(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A root that returned while its child runs is joining; under the loop,
// the child's end (here its await's timeout) completes the root: the card
// shows it.
func TestEndedByTheLastChildUnderTheLoop(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	t.Cleanup(fake.Close)
	s := serve(t, fake, t.TempDir(), time.Hour)
	s.prog(t, "parent", `if input == "child" {
  let x = await {key: "never", timeout: 1000}
  return "child done"
}
let c = act "spawn" {steps: 1000000, input: "child"}
return "parent done"`)
	s.awaiting(t, "parent", false) // joining its child
	settled(t, fake, s.d, "✅ parent completed", "parent done")
}
