// dispatch_test.go runs a prog from a mention, end to end through the fake
// Slack and the real slack-go client over Socket Mode: the card comes at
// once, ticks per act, waits for an approval answered in the thread, and
// closes honestly; no secret from an act's output is ever sent to Slack.

package dispatch

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/approval"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/slack/clock"
	"github.com/runehost/runehost/slack/fakeslack"
	"github.com/runehost/runehost/slack/status"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

const secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"

// leaky answers with text that holds a secret, as a careless tool would.
// It takes longer than a card's edit interval on the cards' clock, so that
// each act has an edit of its own however fast that clock runs against
// the real one (a sleep of real time spans fewer intervals when the clock's
// ticker is slow, on a loaded machine, and more when it is not).
type leaky struct{ clk clock.Clock }

func (l leaky) Do(ctx context.Context, op *host.Operation) (any, error) {
	done := make(chan struct{})
	stop := l.clk.AfterFunc(status.MinInterval+500*time.Millisecond, func() { close(done) })
	defer stop()
	select {
	case <-done:
	case <-ctx.Done(): // the test is stopping
	}
	return "found token " + secret + " in the config", nil
}

const agentProg = `emit("checklist", [{text: "look", state: "done"}, {text: "ask", state: "in_progress"}, {text: "finish", state: "open"}])
let a = act "test.leak" {n: 1}
let b = act "test.leak" {n: 2}
let c = act "test.leak" {n: 3}
let req = act "approval" {question: "Ship it?"}
let ans = await {key: req.key}
emit("checklist", [{text: "look", state: "done"}, {text: "ask", state: "done"}, {text: "finish", state: "open"}])
return "shipped: " + ans.text`

func setup(t *testing.T) (*fakeslack.Server, *Dispatcher, context.Context) {
	fake := fakeslack.NewStrict(fastClock(t))
	t.Cleanup(fake.Close)
	d, ctx, _ := start(t, fake, t.TempDir())
	return fake, d, ctx
}

// start runs a dispatcher on a store in dir against fake; stop ends it and
// closes its store, as a process that exits.
func start(t *testing.T, fake *fakeslack.Server, dir string) (*Dispatcher, context.Context, func()) {
	return startOn(t, fake, dir, fake.URL(), nil)
}

// startOn is start with the Web API at apiURL (fake, or something in front
// of it) and a log.
func startOn(t *testing.T, fake *fakeslack.Server, dir, apiURL string, log *slog.Logger) (*Dispatcher, context.Context, func()) {
	return startOnWith(t, fake, dir, apiURL, log, nil)
}

// startWith is start with the dispatcher's configuration changed by set.
func startWith(t *testing.T, fake *fakeslack.Server, dir string, set func(*Config)) (*Dispatcher, context.Context, func()) {
	return startOnWith(t, fake, dir, fake.URL(), nil, set)
}

func startOnWith(t *testing.T, fake *fakeslack.Server, dir, apiURL string, log *slog.Logger, set func(*Config)) (*Dispatcher, context.Context, func()) {
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := host.NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	e.Adapters["test.leak"] = leaky{fake.Clock}
	e.Adapters[approval.Tag] = approval.Adapter{}
	for _, g := range []string{"test.leak", "approval"} {
		if _, err := e.Grant("C1/*", g); err != nil {
			t.Fatal(err)
		}
	}
	progs := filepath.Join(dir, "progs")
	os.MkdirAll(progs, 0o755)
	os.WriteFile(filepath.Join(progs, "agent.rune"), []byte(agentProg), 0o644)
	// The production intervals, on the fake's virtual clock, which runs 50
	// times faster than the real one.
	cfg := Config{BotToken: "xoxb-test", AppToken: "xapp-test", APIURL: apiURL, ProgDir: progs, BaseURL: "https://runs.example.com",
		Heartbeat: time.Hour, Clock: fake.Clock, Log: log}
	if set != nil {
		set(&cfg)
	}
	d := New(cfg, e)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.RunSocketMode(ctx) }()
	if !fake.WaitConnected(5 * time.Second) {
		t.Fatal("no Socket Mode connection")
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		d.Wait()
		s.Close()
	}
	t.Cleanup(stop)
	return d, ctx, stop
}

// fastClock is a virtual clock that runs 50 times faster than the real one
// until the test ends: cards, their budget and the fake Slack keep
// Slack's production intervals, and a test waits a fiftieth of them.
func fastClock(t *testing.T) *clock.Fake {
	clk := clock.NewFake(time.Now())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				clk.Advance(100 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return clk
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func card(fake *fakeslack.Server) *fakeslack.Message {
	ms := fake.Messages()
	if len(ms) == 0 {
		return nil
	}
	return &ms[0]
}

func TestMentionToClose(t *testing.T) {
	fake, d, _ := setup(t)
	start := time.Now()
	thread := fake.Mention("C1", "U1", "agent please ship")
	waitFor(t, "the card", 2*time.Second, func() bool { return card(fake) != nil })
	if time.Since(start) > 2*time.Second {
		t.Fatal("the card came late")
	}
	if c := card(fake); c.ThreadTS != thread || c.Channel != "C1" {
		t.Fatalf("card %+v", c)
	}
	waitFor(t, "the approval wait", 5*time.Second, func() bool { return strings.Contains(card(fake).Text, "waiting for an event [approval:4]") })
	edits := card(fake).Edits
	if edits < 4 { // a start, and a tick per act at least
		t.Fatalf("%d edits before the approval", edits)
	}
	fake.Reply("C1", thread, "U2", "yes")
	waitFor(t, "the close", 5*time.Second, func() bool { return strings.HasPrefix(card(fake).Text, "⚠️ agent completed") })
	c := card(fake)
	if !strings.Contains(c.Blocks, "shipped: yes") || !strings.Contains(c.Blocks, "https://runs.example.com/runs/r1") {
		t.Fatalf("the close: %s\n%s", c.Text, c.Blocks)
	}
	d.Wait()
	for _, r := range fake.Requests() {
		body, _ := url.QueryUnescape(r.Body)
		if strings.Contains(body, secret[:12]) {
			t.Fatalf("a secret was sent to Slack in %s: %s", r.Method, body)
		}
	}
}

// A prog that does not exist is answered by a plain reply in the thread,
// with no card.
func TestUnknownProg(t *testing.T) {
	fake, d, _ := setup(t)
	thread := fake.Mention("C1", "U1", "nosuch {}")
	waitFor(t, "the reply", 2*time.Second, func() bool { return card(fake) != nil })
	d.Wait()
	if ms := fake.Messages(); len(ms) != 1 || ms[0].Blocks != "" || ms[0].ThreadTS != thread || !strings.Contains(ms[0].Text, "no prog “nosuch” here") {
		t.Fatalf("%+v", ms)
	}
}

// A prog that imports modules runs with them (its own, beside it, and the
// standard library's); one whose import is missing is answered with the
// compile error, and no card.
func TestProgWithModules(t *testing.T) {
	fake, d, _ := setup(t)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "greet.rune"), []byte("let hello = \"hi from a module\"\n"), 0o644)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "mods.rune"), []byte(`import "greet.rune" as greet
import "std/json.rune" as json
return {answer: greet.hello + ", " + json.at({a: {b: "and std"}}, "a.b", "?")}
`), 0o644)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "broken.rune"), []byte("import \"gone.rune\" as gone\nreturn 1\n"), 0o644)
	fake.Mention("C1", "U1", "mods")
	waitFor(t, "the close", 5*time.Second, func() bool { c := card(fake); return c != nil && strings.Contains(c.Text, "mods completed") })
	if c := card(fake); !strings.Contains(c.Blocks, "hi from a module, and std") {
		t.Fatalf("the close: %s\n%s", c.Text, c.Blocks)
	}
	thread := fake.Mention("C1", "U1", "broken")
	waitFor(t, "the reply", 3*time.Second, func() bool {
		for _, m := range fake.Messages() {
			if m.ThreadTS == thread && m.Blocks == "" {
				return true
			}
		}
		return false
	})
	d.Wait()
	for _, m := range fake.Messages() {
		if m.ThreadTS == thread && !strings.Contains(m.Text, "cannot be compiled") || m.ThreadTS == thread && !strings.Contains(m.Text, "gone.rune") {
			t.Fatalf("the reply to a prog with a missing module: %+v", m)
		}
	}
}

// An act refused by the ward makes the close ⚠️ even when the prog completes.
func TestRefusedActWarns(t *testing.T) {
	fake, d, _ := setup(t)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "sneaky.rune"), []byte(`try { act "fs.read" {path: "/etc/passwd"} } catch e { }
return "done"`), 0o644)
	fake.Mention("C1", "U1", "sneaky")
	waitFor(t, "the close", 3*time.Second, func() bool { c := card(fake); return c != nil && strings.HasPrefix(c.Text, "⚠️ sneaky completed") })
}

// A run waiting in a thread survives the process: after a restart the
// thread's reply still reaches it, and the same card is closed.
func TestRestartKeepsWaitingRun(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	defer fake.Close()
	dir := t.TempDir()
	_, _, stop := start(t, fake, dir)
	thread := fake.Mention("C1", "U1", "agent go")
	waitFor(t, "the approval wait", 5*time.Second, func() bool { c := card(fake); return c != nil && strings.Contains(c.Text, "waiting for an event") })
	stop()
	start(t, fake, dir)
	fake.Reply("C1", thread, "U2", "yes after a restart")
	waitFor(t, "the close", 5*time.Second, func() bool { return strings.HasPrefix(card(fake).Text, "⚠️ agent completed") })
	if n := len(fake.Messages()); n != 1 || !strings.Contains(card(fake).Blocks, "shipped: yes after a restart") {
		t.Fatalf("%d messages; %s", n, card(fake).Blocks)
	}
}

// An error the run fails with reaches the card redacted.
func TestFailureRedactedOnCard(t *testing.T) {
	fake, d, _ := setup(t)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "oops.rune"), []byte(`throw error("deploy", "failed with token `+secret+` and DB_PASSWORD=hunter2hunter2")`), 0o644)
	fake.Mention("C1", "U1", "oops")
	waitFor(t, "the close", 3*time.Second, func() bool { c := card(fake); return c != nil && strings.HasPrefix(c.Text, "❌ oops failed") })
	for _, r := range fake.Requests() {
		body, _ := url.QueryUnescape(r.Body)
		if strings.Contains(body, secret[:12]) || strings.Contains(body, "hunter2") {
			t.Fatalf("a secret was sent in %s: %s", r.Method, body)
		}
	}
}

// A reply that mentions the bot comes twice from Slack; it answers once.
func TestReplyMentioningAnswersOnce(t *testing.T) {
	fake, d, _ := setup(t)
	os.WriteFile(filepath.Join(d.cfg.ProgDir, "twice.rune"), []byte(`let a = await {key: "first"}
let b = await {key: "second"}
return [a.text, b.text]`), 0o644)
	thread := fake.Mention("C1", "U1", "twice")
	waitFor(t, "the wait", 3*time.Second, func() bool { c := card(fake); return c != nil && strings.Contains(c.Text, "[first]") })
	fake.ReplyMentioning("C1", thread, "U2", "yes")
	waitFor(t, "the second wait", 3*time.Second, func() bool { return strings.Contains(card(fake).Text, "[second]") })
	time.Sleep(200 * time.Millisecond)
	if c := card(fake); !strings.Contains(c.Text, "[second]") {
		t.Fatalf("one reply answered both awaits: %s", c.Text)
	}
}

// A mention inside an existing thread runs in that thread: replies there
// reach it.
func TestMentionInsideAThread(t *testing.T) {
	fake, _, _ := setup(t)
	parent := "1699999999.000001"
	fake.MentionInThread("C1", parent, "U1", "agent")
	waitFor(t, "the wait", 5*time.Second, func() bool { c := card(fake); return c != nil && strings.Contains(c.Text, "waiting for") })
	if c := card(fake); c.ThreadTS != parent {
		t.Fatalf("card in thread %q, want %q", c.ThreadTS, parent)
	}
	fake.Reply("C1", parent, "U2", "ok")
	waitFor(t, "the close", 5*time.Second, func() bool { return strings.HasPrefix(card(fake).Text, "⚠️ agent completed") })
}

// A mention inside a thread with no run yet, whose message twin arrives
// first, still starts its run.
func TestMentionTwinFirst(t *testing.T) {
	fake, _, _ := setup(t)
	fake.ReplyMentioning("C1", "1699999999.000009", "U1", "agent")
	waitFor(t, "a card", 3*time.Second, func() bool { return card(fake) != nil })
}
