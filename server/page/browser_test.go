// browser_test.go opens the page in headless Chromium against a fake
// stream: events appear as they are sent, the answer shows at the end,
// hostile output is text that runs nothing, and a reload keeps its place.

package page

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/internal/browser"
)

// do runs actions, failing t with what it was doing.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript expression to be true.
func until(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr)); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

const token = "tok_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"

func TestBrowserPageLive(t *testing.T) {
	ctx := browser.New(t, 0)
	f := newFake(Run{ID: "r1", Status: "running"}, token)
	f.add(
		events.Event{Kind: events.KindInput, Input: &events.Input{Text: `{"task":"count"}`}},
		events.Event{Kind: events.KindRunMeta, RunMeta: &events.RunMeta{Prog: "agent"}},
	)
	ts := f.server(t)
	do(t, ctx, "open the page", chromedp.Navigate(ts.URL+"/r/"+token))
	until(t, ctx, `!document.getElementById("live").hidden`)
	if got := eval[string](t, ctx, `document.getElementById("input").textContent + " " + document.getElementById("prog").textContent`); got != `{"task":"count"} agent` {
		t.Fatalf("input and prog: %q", got)
	}

	f.add(toolCall("r1#1", "tool.run", "tool.run cat"))
	do(t, ctx, "the call appears", chromedp.WaitVisible(`#timeline li[data-call="r1#1"] .result.pending`))

	zero := 0
	f.add(toolResult("r1#1", "tool.run", true, "hostile", evil, &zero))
	do(t, ctx, "its result appears", chromedp.WaitVisible(`#timeline li[data-call="r1#1"] .result.ok[data-seq="4"]`))
	if got := eval[string](t, ctx, `document.querySelector('#timeline li[data-call="r1#1"] .output').textContent`); got != evil {
		t.Fatalf("output shown as %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#timeline li[data-call="r1#1"] .verdict').textContent`); got != "exit 0" {
		t.Fatalf("verdict %q", got)
	}

	f.add(
		events.Event{Kind: events.KindRunNote, RunNote: &events.RunNote{Note: events.NoteRefused, Summary: "fs.read denied"}},
		events.Event{Kind: events.KindEmit, Emit: &events.Emit{Name: "progress", Data: `{"step":"<b>2</b>"}`}},
	)
	do(t, ctx, "the note and the emit appear", chromedp.WaitVisible(`#timeline li.note-refused[data-seq="5"]`), chromedp.WaitVisible(`#timeline li.emit[data-seq="6"]`))

	f.add(answer("4 words"),
		events.Event{Kind: events.KindVerification, Verification: &events.VerificationResult{VerificationID: "ver:r1", Method: "exit_code", Passed: true}},
		events.Event{Kind: events.KindOutcome, Outcome: &events.Outcome{OutcomeID: "out:r1", Status: "completed", VerificationID: "ver:r1"}},
	)
	f.end("completed", "4 words")
	until(t, ctx, `document.getElementById("status").textContent === "completed"`)
	do(t, ctx, "the answer and the objects appear", chromedp.WaitVisible(`#answer`), chromedp.WaitVisible(`#objects li.outcome[data-seq="9"]`))
	if got := eval[string](t, ctx, `document.getElementById("answer").textContent`); got != "4 words" {
		t.Fatalf("answer %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#objects li.outcome .text").textContent`); got != "out:r1 completed, verified by ver:r1" {
		t.Fatalf("outcome %q", got)
	}

	// Nothing ran, nothing became markup.
	if got := eval[string](t, ctx, `typeof window.pwned`); got != "undefined" {
		t.Fatalf("window.pwned is %s: the output ran", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#run img, #run script, #run b").length`); n != 0 {
		t.Fatalf("%d elements made of event text", n)
	}
	// The stream ended and the page did not reconnect (retry is 100 ms).
	time.Sleep(400 * time.Millisecond)
	if n := f.opened(); n != 1 {
		t.Fatalf("%d streams opened: the page reconnected after the end", n)
	}
	do(t, ctx, "open the output", chromedp.Click(`#timeline li[data-call="r1#1"] summary`))
	browser.Screenshot(t, ctx, "page-live")

	// On a phone: one column, nothing wider than the screen.
	do(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %d px wide on a 390 px screen", w)
	}
	browser.Screenshot(t, ctx, "page-phone")
}

func TestBrowserPageReload(t *testing.T) {
	ctx := browser.New(t, 0)
	f := newFake(Run{ID: "r1", Prog: "agent", Status: "running", Input: "go"}, token)
	f.add(toolCall("r1#1", "tool.run", "tool.run wc"))
	ts := f.server(t)
	do(t, ctx, "open the page", chromedp.Navigate(ts.URL+"/r/"+token))
	until(t, ctx, `!document.getElementById("live").hidden`)
	exit := 1
	f.add(toolResult("r1#1", "tool.run", false, "exit 1: no such file", "exit 1: no such file\nmore", &exit))
	do(t, ctx, "the result appears", chromedp.WaitVisible(`#timeline li[data-call="r1#1"] .result.fail[data-seq="2"]`))
	do(t, ctx, "open its output", chromedp.Click(`#timeline li[data-call="r1#1"] summary`))
	f.add(toolCall("r1#2", "tool.run", "tool.run cat"), events.Event{Run: "r2", Kind: events.KindEmit, Emit: &events.Emit{Name: "child"}})
	f.wait("an event [approve]", "runehost send r1 approve JSON")
	do(t, ctx, "the waiting state shows", chromedp.WaitVisible(`#waiting-box`), chromedp.WaitVisible(`#timeline li.emit[data-seq="4"]`))

	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, `!document.getElementById("live").hidden`)
	if got := eval[string](t, ctx, `document.getElementById("wait-command").textContent`); got != "runehost send r1 approve JSON" {
		t.Fatalf("wait command %q", got)
	}
	if !eval[bool](t, ctx, `document.querySelector('#timeline li[data-call="r1#1"] details').open`) {
		t.Fatal("the output opened before the reload is closed after it")
	}
	f.add(toolResult("r1#2", "tool.run", true, "fine", "", nil), answer("approved"))
	f.end("completed", "approved")
	do(t, ctx, "the rest appears", chromedp.WaitVisible(`#timeline li[data-call="r1#2"] .result.ok[data-seq="5"]`), chromedp.WaitVisible(`#answer`))
	if got := eval[bool](t, ctx, `document.getElementById("waiting-box").hidden`); !got {
		t.Fatal("still shown waiting after the end")
	}
	// Every event once: the calls with their results, the child's emit.
	seqs := eval[[]string](t, ctx, `[...document.querySelectorAll("#run [data-seq]")].map(e => e.dataset.run + "/" + e.dataset.seq).sort()`)
	want := []string{"r1/1", "r1/2", "r1/3", "r1/5", "r2/4"}
	if len(seqs) != len(want) {
		t.Fatalf("shown %v, want %v", seqs, want)
	}
	for i := range want {
		if seqs[i] != want[i] {
			t.Fatalf("shown %v, want %v", seqs, want)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline > li").length`); n != 3 {
		t.Fatalf("%d timeline items, want 3", n)
	}
	browser.Screenshot(t, ctx, "page-reloaded")
}

// A model's text shows under its call as it streams, also after a reload
// (the server renders it), and gives way to the call's result.
func TestBrowserPageStreams(t *testing.T) {
	ctx := browser.New(t, 0)
	f := newFake(Run{ID: "r1", Prog: "agent", Status: "running", Input: "go"}, token)
	f.add(toolCall("r1#1", "model.chat", "model.chat default"))
	ts := f.server(t)
	do(t, ctx, "open the page", chromedp.Navigate(ts.URL+"/r/"+token))
	until(t, ctx, `!document.getElementById("live").hidden`)
	said := func(text string) events.Event {
		return events.Event{Kind: events.KindAssistant, Assistant: &events.Assistant{CallID: "r1#1", Text: text}}
	}
	f.add(said("Four words: "), said("<b>the</b> quick "))
	until(t, ctx, `(document.querySelector('#timeline li[data-call="r1#1"] pre.said') || {}).textContent === "Four words: <b>the</b> quick "`)
	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, `!document.getElementById("live").hidden`)
	f.add(said("brown fox."))
	until(t, ctx, `(document.querySelector('#timeline li[data-call="r1#1"] pre.said') || {}).textContent === "Four words: <b>the</b> quick brown fox."`)
	if n := eval[int](t, ctx, `document.querySelectorAll("#run b, #timeline pre.said").length`); n != 1 {
		t.Fatalf("%d said blocks or elements made of its text, want the one block", n)
	}
	f.add(toolResult("r1#1", "model.chat", true, "Four words: the quick brown fox.", "Four words: the quick brown fox.", nil))
	do(t, ctx, "the result replaces the streamed text", chromedp.WaitVisible(`#timeline li[data-call="r1#1"] .result.ok`))
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline pre.said").length`); n != 0 {
		t.Fatalf("the streamed text is still shown beside the result")
	}
	f.end("completed", "Four words: the quick brown fox.")
	until(t, ctx, `document.getElementById("status").textContent === "completed"`)
	browser.Screenshot(t, ctx, "page-streamed")
}
