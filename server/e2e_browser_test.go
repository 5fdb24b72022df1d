// e2e_browser_test.go opens the run page in headless Chromium against a real
// engine, its loop and the server: events appear while the run goes on, a
// hostile tool output is text, the answer comes at the end, a reload shows
// the same timeline, and the time to the first event is measured.

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/browser"
	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/store"
)

// e2eEvil is a reply that would run script if the page made it markup.
const e2eEvil = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`

// e2eEcho is the test.echo adapter: it replies with its args' text, the
// hostile text for "hostile", and holds the acts whose text is gated until
// the test opens their gate.
type e2eEcho struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

// hold makes the acts with text wait until open is called; each hold is a
// new gate.
func (a *e2eEcho) hold(text string) (open func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	if a.gates == nil {
		a.gates = map[string]chan struct{}{}
	}
	a.gates[text] = ch
	a.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (a *e2eEcho) Do(ctx context.Context, op *host.Operation) (any, error) {
	d, err := checkpoint.DecodeData(op.Args)
	if err != nil {
		return nil, err
	}
	text := ""
	if m, ok := d.(*checkpoint.Map); ok {
		v, _ := m.Get("text")
		text, _ = v.(string)
	}
	a.mu.Lock()
	ch := a.gates[text]
	a.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if text == "hostile" {
		return e2eEvil, nil
	}
	return "echo: " + text, nil
}

// e2eEnv is a real engine, its loop running, and the server over it.
type e2eEnv struct {
	s     *store.Store
	e     *host.Engine
	echo  *e2eEcho
	srv   *Server
	links *links.Links
	ts    *httptest.Server
}

func newE2E(tb testing.TB) *e2eEnv {
	tb.Helper()
	s, err := store.Open(store.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	clock := func() int64 { return time.Now().UnixMilli() }
	e := host.NewEngine(s, port.NewNative(), 1, clock)
	echo := &e2eEcho{}
	e.Adapters["test.echo"] = echo
	if _, err := e.Ward().Grant(host.AnyProg, "test.echo"); err != nil {
		tb.Fatal(err)
	}
	loop := &host.Loop{E: e, Workers: 2}
	lk := links.New(s, clock)
	srv := New(Config{Service: &Service{E: e, Loop: loop}, Links: lk, Token: "t0ken-e2e"})
	ts := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	tb.Cleanup(func() {
		srv.Stop()
		ts.CloseClientConnections()
		ts.Close()
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("loop: %v", err)
		}
		if err := e.Park(context.Background()); err != nil {
			tb.Errorf("park: %v", err)
		}
		s.Close()
	})
	return &e2eEnv{s: s, e: e, echo: echo, srv: srv, links: lk, ts: ts}
}

// run admits a prog through POST /v1/runs.
func (env *e2eEnv) run(tb testing.TB, prog, src string, input any) string {
	tb.Helper()
	in, _ := json.Marshal(input)
	body, _ := json.Marshal(api.RunRequest{Prog: prog, Source: src, Input: in, Limit: 1 << 30})
	resp, err := http.Post(env.ts.URL+"/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var rr api.RunResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != http.StatusCreated {
		tb.Fatalf("POST /v1/runs: %d %v", resp.StatusCode, err)
	}
	return rr.Invocation
}

// link makes a capability link to inv's page and returns its URL.
func (env *e2eEnv) link(tb testing.TB, inv string) string {
	tb.Helper()
	token, _, err := env.links.Create(inv, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	return env.ts.URL + "/r/" + token
}

// e2eProbe runs in every new document before its own scripts: it records
// when each item with a seq first appears (wall ms), and the first one's
// time since the navigation started (ms).
const e2eProbe = `(() => {
  window.__seen = {};
  window.__first = null;
  const look = () => {
    for (const e of document.querySelectorAll("[data-seq]")) {
      const k = e.dataset.run + "/" + e.dataset.seq;
      if (!(k in window.__seen)) window.__seen[k] = performance.timeOrigin + performance.now();
      if (window.__first === null) window.__first = performance.now();
    }
  };
  new MutationObserver(look).observe(document, {childList: true, subtree: true});
  document.addEventListener("DOMContentLoaded", look);
})();`

// e2eInstallProbe adds e2eProbe to the tab's new documents.
func e2eInstallProbe(tb testing.TB, ctx context.Context) {
	tb.Helper()
	add := func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: e2eProbe})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, add); err != nil {
		tb.Fatalf("installing the probe: %v", err)
	}
}

func e2eDo(tb testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

func e2eEval[T any](tb testing.TB, ctx context.Context, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.Fatalf("%s: %v", expr, err)
	}
	return v
}

func e2eUntil(tb testing.TB, ctx context.Context, expr string) {
	tb.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
		tb.Fatalf("waiting for %s: %v", expr, err)
	}
}

// e2eProg acts, computes, acts (the hostile reply), computes and answers.
const e2eProg = `
let a = act "test.echo" {text: "first"}
var s = 0
var i = 0
while i < input.n { s = (s * 31 + i) % 1000003; i += 1 }
let b = act "test.echo" {text: "hostile"}
var j = 0
while j < input.n { s = (s + j) % 1000003; j += 1 }
return {answer: "done: " + str(s), first: a, second: b}
`

// e2eSum is e2eProg's arithmetic, for its expected answer.
func e2eSum(n int64) int64 {
	s := int64(0)
	for i := int64(0); i < n; i++ {
		s = (s*31 + i) % 1000003
	}
	for j := int64(0); j < n; j++ {
		s = (s + j) % 1000003
	}
	return s
}

// e2eTimeline is the page's items in order: run/seq and their text.
const e2eTimeline = `[...document.querySelectorAll("#timeline > li")].map(li => li.dataset.run + "/" + li.dataset.seq + " " + li.textContent.replace(/\d\d:\d\d:\d\d/, "T"))`

func TestBrowserE2ELiveRun(t *testing.T) {
	ctx := browser.New(t, 0)
	env := newE2E(t)
	// Both acts wait for the test: the first until the page is open, the
	// second until the page has shown the first's result.
	openFirst := env.echo.hold("first")
	openSecond := env.echo.hold("hostile")
	defer openFirst()
	defer openSecond()
	const n = 800_000 // some hundred ms on the native runtime
	inv := env.run(t, "e2e", e2eProg, map[string]any{"n": n})
	url := env.link(t, inv)

	e2eInstallProbe(t, ctx)
	start := time.Now()
	e2eDo(t, ctx, "open the page", chromedp.Navigate(url))
	e2eUntil(t, ctx, `window.__first !== null`)
	first := e2eEval[float64](t, ctx, `window.__first`)
	t.Logf("time to first event: %.1f ms in the page (navigation start to the first [data-seq]), %v wall", first, time.Since(start).Round(time.Millisecond))
	e2eUntil(t, ctx, `!document.getElementById("live").hidden`)
	if got := e2eEval[string](t, ctx, `document.getElementById("status").textContent`); got != "running" {
		t.Fatalf("status %q while the first act is held", got)
	}
	e2eDo(t, ctx, "the first call shows, pending", chromedp.WaitVisible(`#timeline li.call .result.pending`))
	browser.Screenshot(t, ctx, "e2e-first-call")

	released := time.Now()
	openFirst()
	e2eDo(t, ctx, "the first result appears", chromedp.WaitVisible(`#timeline li.call:nth-of-type(1) .result.ok`))
	k := e2eEval[string](t, ctx, `(e => e.dataset.run + "/" + e.dataset.seq)(document.querySelector("#timeline li.call .result.ok"))`)
	shownAt := e2eEval[float64](t, ctx, `window.__seen[`+jsString(k)+`]`)
	t.Logf("adapter reply to the DOM: %.1f ms (the act's outcome stored, published, streamed, shown)", shownAt-float64(released.UnixNano())/1e6)
	if got := e2eEval[string](t, ctx, `document.querySelector("#timeline li.call .output").textContent`); got != "echo: first" {
		t.Fatalf("first output %q", got)
	}
	// The run is held in its second act: it has not ended, and the page
	// shows its first result already.
	if st, err := env.e.State(inv); err != nil || st.Status != host.Running {
		t.Fatalf("the run is %v (%v) before its second act is answered", st, err)
	}
	if got := e2eEval[string](t, ctx, `document.getElementById("status").textContent`); got != "running" {
		t.Fatalf("status %q before the end", got)
	}
	e2eDo(t, ctx, "the second call shows", chromedp.WaitVisible(`#timeline li.call:nth-of-type(2) .result.pending`))
	browser.Screenshot(t, ctx, "e2e-first-result")

	openSecond()
	e2eUntil(t, ctx, `document.getElementById("status").textContent === "completed"`)
	e2eDo(t, ctx, "the answer appears", chromedp.WaitVisible(`#answer`))
	wantAnswer := fmt.Sprintf("done: %d", e2eSum(n))
	liveAnswer := e2eEval[string](t, ctx, `document.getElementById("answer").textContent`)
	if liveAnswer != wantAnswer { // the answer event's text, and the final state's, agree
		t.Errorf("answer %q, want %q", liveAnswer, wantAnswer)
	}
	out := e2eEval[string](t, ctx, `document.querySelector("#timeline li.call:nth-of-type(2) .output").textContent`)
	if out != e2eEvil || !strings.Contains(out, "<script>") {
		t.Fatalf("hostile output shown as %q", out)
	}
	e2eNothingRan(t, ctx)
	e2eDo(t, ctx, "open the hostile output", chromedp.Click(`#timeline li.call:nth-of-type(2) summary`))
	browser.Screenshot(t, ctx, "e2e-completed")
	live := e2eEval[[]string](t, ctx, e2eTimeline)
	liveObjects := e2eEval[int](t, ctx, `document.querySelectorAll("#objects > li").length`)

	// Every event of the run's log is on the page once.
	evs, err := env.e.Events(inv, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, ev := range evs {
		if ev.Kind == events.KindToolCall {
			calls++
		}
	}
	if calls != 2 || len(live) != 2 {
		t.Fatalf("%d calls logged, %d timeline items shown: %q", calls, len(live), live)
	}

	// A reload renders the finished run from the store: the same timeline,
	// the same answer, nothing run.
	e2eDo(t, ctx, "reload", chromedp.Reload())
	e2eUntil(t, ctx, `document.readyState === "complete"`)
	again := e2eEval[[]string](t, ctx, e2eTimeline)
	if strings.Join(again, "\n") != strings.Join(live, "\n") {
		t.Errorf("the timeline after a reload:\n%s\nbefore it:\n%s", strings.Join(again, "\n"), strings.Join(live, "\n"))
	}
	if got := e2eEval[int](t, ctx, `document.querySelectorAll("#objects > li").length`); got != liveObjects {
		t.Errorf("%d runtime objects after a reload, %d before", got, liveObjects)
	}
	if got := e2eEval[string](t, ctx, `document.getElementById("answer").textContent`); got != wantAnswer {
		t.Errorf("answer after a reload %q, want %q", got, wantAnswer)
	}
	if got := e2eEval[string](t, ctx, `document.getElementById("status").textContent`); got != "completed" {
		t.Errorf("status after a reload %q", got)
	}
	if got := e2eEval[string](t, ctx, `document.querySelector("#timeline li.call:nth-of-type(2) .output").textContent`); got != e2eEvil {
		t.Errorf("hostile output after a reload %q", got)
	}
	e2eNothingRan(t, ctx)
	if !e2eEval[bool](t, ctx, `document.querySelector("#timeline li.call:nth-of-type(2) details").open`) {
		t.Error("the output opened before the reload is closed after it")
	}
	browser.Screenshot(t, ctx, "e2e-reloaded")
}

// e2eNothingRan checks that no event text became markup or ran.
func e2eNothingRan(t *testing.T, ctx context.Context) {
	t.Helper()
	if got := e2eEval[string](t, ctx, `typeof window.pwned`); got != "undefined" {
		t.Fatalf("window.pwned is %s: the output ran", got)
	}
	if n := e2eEval[int](t, ctx, `document.querySelectorAll("#run img, #run script").length`); n != 0 {
		t.Fatalf("%d elements made of event text", n)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// BenchmarkPageFirstEvent is the time from a navigation's start to the
// first event on the page, for a run admitted just before: the page opened
// on a run whose first act is under way.
func BenchmarkPageFirstEvent(b *testing.B) {
	ctx := browser.New(b, 10*time.Minute)
	env := newE2E(b)
	e2eInstallProbe(b, ctx)
	var total float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		inv := env.run(b, fmt.Sprintf("bench%d", i), `let a = act "test.echo" {text: "hi"}; return a`, nil)
		url := env.link(b, inv)
		b.StartTimer()
		e2eDo(b, ctx, "open the page", chromedp.Navigate(url))
		e2eUntil(b, ctx, `window.__first !== null`)
		total += e2eEval[float64](b, ctx, `window.__first`)
	}
	b.ReportMetric(total/float64(b.N), "ms-to-first-event")
}
