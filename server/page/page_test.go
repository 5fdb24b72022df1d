// page_test.go renders the page over a fake Source: layout, escaping, the
// sameness of every 404, the assets and the index.

package page

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

// evil is a tool output that would run script if it were markup.
const evil = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`

// fake is a Source over runs and events the test changes as it goes, and
// the SSE stream the server would serve (serveEvents).
type fake struct {
	mu      sync.Mutex
	run     Run
	tokens  map[string]bool // tokens that open run
	evs     []events.Event
	state   string // the latest state message, sent after the events before it
	states  int    // how many state messages were posted
	final   bool   // the state is terminal: the stream ends after it
	streams int    // streams opened
	changed chan struct{}
}

func newFake(run Run, token string) *fake {
	return &fake{run: run, tokens: map[string]bool{token: true}, changed: make(chan struct{})}
}

func (f *fake) Run(_ context.Context, token, id string) (Run, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.run, f.tokens[token] && (id == "" || id == f.run.ID)
}

// Events returns the events so far; the fake's cursor is how many there are.
func (f *fake) Events(_ context.Context, run string) ([]events.Event, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.Event(nil), f.evs...), strconv.Itoa(len(f.evs)), nil
}

// add appends events, numbering them from the run's last seq.
func (f *fake) add(evs ...events.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range evs {
		if e.Run == "" {
			e.Run = f.run.ID
		}
		e.Seq = uint64(len(f.evs) + 1)
		e.At = 1_800_000_000_000 + int64(e.Seq)*1000
		f.evs = append(f.evs, e)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// end sets the run's final status and the state message that says so.
func (f *fake) end(status, answer string) {
	f.mu.Lock()
	f.run.Status, f.run.Answer = status, answer
	f.state, f.final = fmt.Sprintf(`{"status":%q,"answer":%q}`, status, answer), true
	f.states++
	f.mu.Unlock()
	f.add()
}

// wait sets the run waiting, and the state message that says so.
func (f *fake) wait(what, command string) {
	f.mu.Lock()
	f.run.Status, f.run.Waiting, f.run.WaitCommand = "waiting", what, command
	f.state = fmt.Sprintf(`{"status":"waiting","waiting":%q,"command":%q}`, what, command)
	f.states++
	f.mu.Unlock()
	f.add()
}

// opened is how many streams were opened.
func (f *fake) opened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams
}

// serveEvents is the stream as docs/page.md has it: events after the cursor
// (Last-Event-ID, else ?cursor), each with its cursor as id, then a state
// message; after a terminal one the stream ends.
func (f *fake) serveEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.Run(r.Context(), r.PathValue("token"), r.URL.Query().Get("run")); !ok {
		NotFound(w)
		return
	}
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("cursor")
	}
	next, _ := strconv.Atoi(from)
	f.mu.Lock()
	f.streams++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fl := w.(http.Flusher)
	// A browser that reconnected after the end would do so at once.
	fmt.Fprint(w, "retry: 100\n\n")
	fl.Flush()
	sent := 0
	for {
		f.mu.Lock()
		evs, state, states, final, changed := f.evs[min(next, len(f.evs)):], f.state, f.states, f.final, f.changed
		f.mu.Unlock()
		for _, e := range evs {
			b, _ := e.MarshalJSON()
			next++
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", next, b)
		}
		if states > sent {
			sent = states
			fmt.Fprintf(w, "event: state\ndata: %s\n\n", state)
			if final {
				fl.Flush()
				return
			}
		}
		fl.Flush()
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// server is the page and the fake's stream, as the server routes them.
func (f *fake) server(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	h := Handler(f)
	mux.Handle("GET "+PagePath, h)
	mux.Handle("GET "+AssetPath, h)
	mux.Handle("GET "+FaviconPath, h)
	mux.HandleFunc("GET "+EventsPath, f.serveEvents)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func toolCall(id, tool, desc string) events.Event {
	return events.Event{Kind: events.KindToolCall, ToolCall: &events.ToolCall{CallID: id, Tool: tool, Description: desc}}
}

func toolResult(id, tool string, ok bool, summary, output string, exit *int) events.Event {
	return events.Event{Kind: events.KindToolResult, ToolResult: &events.ToolResult{CallID: id, Tool: tool, OK: ok, Summary: summary, Output: output, ExitCode: exit}}
}

func answer(text string) events.Event {
	return events.Event{Kind: events.KindAnswer, Answer: &events.Answer{Text: text}}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}

func TestPageRenders(t *testing.T) {
	f := newFake(Run{ID: "r1", Status: "running"}, "tok")
	zero := 0
	f.add(
		events.Event{Kind: events.KindInput, Input: &events.Input{Text: `{"task":"<b>bold</b>"}`}},
		events.Event{Kind: events.KindRunMeta, RunMeta: &events.RunMeta{Prog: "agent"}},
		toolCall("r1#1", "tool.run", "tool.run cat"),
		events.Event{Kind: events.KindSpanStart, SpanStart: &events.SpanStart{SpanID: "s1", Name: "tool.run"}},
		toolResult("r1#1", "tool.run", true, "evil", evil, &zero),
		events.Event{Kind: events.KindRunNote, RunNote: &events.RunNote{Note: events.NoteRefused, Summary: "fs.read denied"}},
		events.Event{Kind: events.KindEmit, Emit: &events.Emit{Name: "progress", Data: `{"done":1}`}},
		events.Event{Run: "r2", Kind: events.KindAnswer, Answer: &events.Answer{Text: "child done"}},
		answer("four words"),
		events.Event{Kind: events.KindOutcome, Outcome: &events.Outcome{OutcomeID: "out:r1", Status: "completed", VerificationID: "ver:r1"}},
		// Said already, by the call's result and by the status: not listed.
		events.Event{Kind: events.KindObservation, Observation: &events.Observation{ObservationID: "obs:r1#1", Kind: "tool_result", Summary: "tool.run: evil"}},
		events.Event{Run: "r2", Kind: events.KindOutcome, Outcome: &events.Outcome{OutcomeID: "out:r2", Status: "completed"}},
	)
	res, body := get(t, f.server(t).URL+"/r/tok")
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP %q", csp)
	}
	for _, bad := range []string{"<script>window", "<img src=x", "<b>bold"} {
		if strings.Contains(body, bad) {
			t.Errorf("markup %q in the page", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror=&#34;window.pwned=2&#34;&gt;",
		`<pre id="input">{&#34;task&#34;:&#34;&lt;b&gt;bold&lt;/b&gt;&#34;}</pre>`,
		`<span id="prog">agent</span>`,
		`<pre id="answer">four words</pre>`,
		`data-cursor="12"`,
		`<li class="ev call" data-run="r1" data-seq="3" data-call="r1#1">`,
		`<div class="result ok" data-run="r1" data-seq="5"><span class="verdict">exit 0</span>`,
		`<span class="kind">refused</span> <span class="text">fs.read denied</span>`,
		`<span class="who">r2</span> <span class="kind">answer</span>`,
		`<li class="obj outcome" data-run="r1" data-seq="10"><span class="kind">outcome</span> <span class="text">out:r1 completed, verified by ver:r1</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "obs:r1#1") || strings.Contains(body, "out:r2") {
		t.Errorf("an object said already is listed")
	}
	if strings.Count(body, "<script") != 1 || strings.Contains(body, "data-seq=\"4\"") {
		t.Errorf("scripts or spans in the page:\n%s", body)
	}
	if t.Failed() {
		t.Log(body)
	}
}

// TestPageNotFoundSame: a wrong, expired or revoked link and a link to a
// run that does not exist answer the same bytes and headers.
func TestPageNotFoundSame(t *testing.T) {
	s, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UnixMilli()
	l := links.New(s, func() int64 { return now })
	src := &linkSource{l: l, runs: map[string]bool{"r1": true}}
	ts := httptest.NewServer(Handler(src))
	defer ts.Close()

	live, _, _ := l.Create("r1", 0)
	expired, _, _ := l.Create("r1", time.Minute)
	revoked, rl, _ := l.Create("r1", 0)
	l.Revoke("r1", rl.ID)
	gone, _, _ := l.Create("r9", 0)
	now += 2 * time.Minute.Milliseconds()

	if res, _ := get(t, ts.URL+"/r/"+live); res.StatusCode != 200 {
		t.Fatalf("live link: %d", res.StatusCode)
	}
	var first string
	for name, tok := range map[string]string{"wrong": live[:len(live)-2] + "AA", "expired": expired, "revoked": revoked, "no such run": gone, "garbage": "%3Cx%3E"} {
		res, body := get(t, ts.URL+"/r/"+tok)
		res.Header.Del("Date")
		var h strings.Builder
		res.Header.Write(&h)
		got := fmt.Sprintf("%d\n%s\n%s", res.StatusCode, h.String(), body)
		if res.StatusCode != 404 {
			t.Errorf("%s: %d", name, res.StatusCode)
		}
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("%s answers differently:\n%s\nvs\n%s", name, got, first)
		}
	}
}

// linkSource resolves tokens through links, as the server does.
type linkSource struct {
	l    *links.Links
	runs map[string]bool
}

func (s *linkSource) Run(_ context.Context, token, id string) (Run, bool) {
	run, err := s.l.Resolve(token)
	if err != nil || !s.runs[run] || id != "" && id != run {
		return Run{}, false
	}
	return Run{ID: run, Status: "completed"}, true
}

func (s *linkSource) Events(context.Context, string) ([]events.Event, string, error) {
	return nil, "", nil
}

func TestPageAssets(t *testing.T) {
	ts := newFake(Run{ID: "r1"}, "tok").server(t)
	res, body := get(t, ts.URL+"/page/app.js")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(body, "EventSource") {
		t.Fatalf("app.js: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if strings.Contains(body, "innerHTML") || strings.Contains(body, "insertAdjacentHTML") || strings.Contains(body, "document.write") {
		t.Fatal("app.js writes markup")
	}
	for _, p := range []string{"/page/page.html", "/page/nope.js", "/page/"} {
		if res, _ := get(t, ts.URL+p); res.StatusCode != 404 {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
}

type runsSource []IndexRun

func (r runsSource) Runs(context.Context) ([]IndexRun, error) { return r, nil }

func TestPageIndex(t *testing.T) {
	ts := httptest.NewServer(Index(runsSource{
		{ID: "r2", Prog: "<i>x</i>", Status: "waiting", Parent: "r1", Updated: 1_800_000_000_000},
		{ID: "r1", Prog: "agent", Status: "completed", Page: "/r/abc", Links: 1},
	}))
	defer ts.Close()
	res, body := get(t, ts.URL)
	for _, want := range []string{`<tr data-run="r2">`, `&lt;i&gt;x&lt;/i&gt;`, `<a href="/r/abc">r1</a>`, `status-waiting`, `2027-01-15T08:00:00.000Z`} {
		if !strings.Contains(body, want) {
			t.Errorf("index lacks %s", want)
		}
	}
	if res.Header.Get("Content-Security-Policy") == "" || t.Failed() {
		t.Errorf("CSP %q\n%s", res.Header.Get("Content-Security-Policy"), body)
	}
}

// A run that sleeps at a timer is shown sleeping until its deadline, with
// nothing to answer; one that waits for an event shows the command.
func TestPageSleeping(t *testing.T) {
	f := newFake(Run{ID: "r1", Status: "waiting", Waiting: "an event [std/retry.sleep]", WaitCommand: "runehost resume r1", Sleeps: 1_800_000_060_000}, "tok")
	_, body := get(t, f.server(t).URL+"/r/tok")
	for _, want := range []string{`<h2 id="waiting-title">Sleeping</h2>`, `<time id="sleeps" datetime="2027-01-15T08:01:00.000Z">`, `<p id="wait-answer" hidden>`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "std/retry.sleep") {
		t.Errorf("a timer's key shown as something to answer:\n%s", body)
	}
	f = newFake(Run{ID: "r1", Status: "waiting", Waiting: "an event [approve]", WaitCommand: "runehost send r1 approve JSON"}, "tok")
	_, body = get(t, f.server(t).URL+"/r/tok")
	for _, want := range []string{`<h2 id="waiting-title">Waiting</h2>`, `<p id="wait-answer">Answer it with: <code id="wait-command">runehost send r1 approve JSON</code>`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// A failed run shows its error and backtrace first; an answer in JSON is
// indented; a call's line names its tool once; the icon is served.
func TestPageReadsWell(t *testing.T) {
	f := newFake(Run{ID: "r1", Status: "failed", Error: "5:16: zero_division: division by zero", Trace: []string{"div at 5:16", "main at 9:3"}, Answer: `{"a":1,"b":[2,3]}`}, "tok")
	f.add(toolCall("r1#1", "model.chat", "model.chat"), toolCall("r1#2", "tool.run", "tool.run wc"))
	srv := f.server(t)
	_, body := get(t, srv.URL+"/r/tok")
	for _, want := range []string{
		"<ol id=\"trace\"><li>at div at 5:16</li><li>at main at 9:3</li></ol>",
		"<pre id=\"answer\">{\n  &#34;a&#34;: 1,\n  &#34;b&#34;: [\n    2,\n    3\n  ]\n}</pre>",
		`<span class="tool">model.chat</span> <span class="text"></span>`,
		`<span class="tool">tool.run</span> <span class="text">wc</span>`,
		`<link rel="icon" type="image/svg+xml" href="/page/favicon.svg?v=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if e, a := strings.Index(body, `id="error-box"`), strings.Index(body, `id="answer-box"`); e < 0 || e > a || e > strings.Index(body, `id="waiting-box"`) {
		t.Errorf("the error is not first")
	}
	res, icon := get(t, srv.URL+"/favicon.ico")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(icon, "<svg") {
		t.Errorf("favicon: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// The page opens with what a person asks first: how it went, what it
// cost, how long it took and when it began (with the zone); a long answer
// folds under a count of its lines; children are links to their pages.
func TestPageSummary(t *testing.T) {
	started := int64(1796143921215) // 2026-12-01 16:52:01.215 UTC
	long := "[" + strings.Repeat("1,", 40) + "1]"
	f := newFake(Run{ID: "r1", Status: "completed", Answer: long, Steps: 2048, Tokens: 1, Started: started, Ended: started + 192_500,
		Children: []Child{{"r1.1", "completed"}, {"r1.2", "failed"}}}, "tok")
	srv := f.server(t)
	_, body := get(t, srv.URL+"/r/tok")
	for _, want := range []string{
		`<span id="figures">2,048 steps · 1 token · took 3m12s</span> · started <time id="started" datetime="2026-12-01T16:52:01.215Z">2026-12-01 16:52:01 UTC</time>`,
		`<details id="answer-fold" open><summary id="answer-lines">43 lines</summary>`,
		`<li data-child="r1.1"><a href="/r/tok?run=r1.1">r1.1</a> <span class="status status-completed">completed</span></li>`,
		`<li data-child="r1.2"><a href="/r/tok?run=r1.2">r1.2</a> <span class="status status-failed">failed</span></li>`,
		`<h2>Timeline <span class="zone">UTC</span></h2>`,
		`<section id="objects-box" hidden>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s\n%s", want, body)
		}
	}
	// A short answer shows no fold.
	f.run.Answer, f.run.Children = `{"a":1}`, nil
	_, body = get(t, srv.URL+"/r/tok")
	if !strings.Contains(body, `<details id="answer-fold" open class="short">`) || !strings.Contains(body, `<section id="children-box" hidden>`) {
		t.Errorf("a short answer folds, or an empty children pane shows:\n%s", body)
	}
	// A run that goes on says for how long so far.
	f.run.Ended, f.run.Status = 0, "running"
	_, body = get(t, srv.URL+"/r/tok")
	if !strings.Contains(body, `2,048 steps · 1 token · `) || !strings.Contains(body, ` so far</span>`) {
		t.Errorf("a running run's figures: %s", body)
	}
	// Another run's id on the link's page is the same not-found.
	if res, _ := get(t, srv.URL+"/r/tok?run=r2"); res.StatusCode != http.StatusNotFound {
		t.Errorf("?run=r2 on r1's link: %d", res.StatusCode)
	}
}

func TestSpan(t *testing.T) {
	for ms, want := range map[int64]string{-5: "0ms", 350: "350ms", 4200: "4.2s", 192_500: "3m12s", 7_530_000: "2h05m"} {
		if got := span(ms); got != want {
			t.Errorf("span(%d) = %q, want %q", ms, got, want)
		}
	}
	for n, want := range map[uint64]string{0: "0 steps", 1: "1 step", 999: "999 steps", 1000: "1,000 steps", 1234567: "1,234,567 steps"} {
		if got := count(n, "step"); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
