// pages_browser_test.go opens, in Chromium, the pages of runs as they end
// or wait, and screenshots them: the error and its backtrace first; a
// timer shown sleeping until its deadline, with nothing to answer; an
// event to answer with its command; a completed run's figures and folded
// answer; a fan-out's children as links to their own pages.

package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/runehost/runehost/internal/browser"
)

func TestBrowserPagesOfEndings(t *testing.T) {
	ctx := browser.New(t, 0)
	env := newE2E(t)
	failed := env.run(t, "fails", "fn div(a, b) {\n  return a / b\n}\nreturn div(1, 0)\n", nil)
	sleeps := env.run(t, "sleeps", "try { await {key: \"tick.sleep\", timeout: 600000} } catch e {}\nreturn 1\n", nil) // std/retry's sleep, inline

	e2eDo(t, ctx, "open the failed run's page", chromedp.Navigate(env.link(t, failed)))
	e2eUntil(t, ctx, `document.getElementById("status").textContent === "failed" && document.querySelectorAll("#trace li").length > 0`)
	if got := e2eEval[string](t, ctx, `document.getElementById("error").textContent`); got != "2:12: zero_division: division by zero" {
		t.Errorf("the error reads %q", got)
	}
	if got := e2eEval[string](t, ctx, `[...document.querySelectorAll("#trace li")].map(li => li.textContent).join(" | ")`); got != "at div at 2:12 | at main at 4:11" {
		t.Errorf("the backtrace reads %q", got)
	}
	if !e2eEval[bool](t, ctx, `document.querySelector("main > section:not([hidden])").id === "error-box"`) {
		t.Errorf("the error is not the first thing shown")
	}
	browser.Screenshot(t, ctx, "page-failed")

	e2eDo(t, ctx, "open the sleeping run's page", chromedp.Navigate(env.link(t, sleeps)))
	e2eUntil(t, ctx, `document.getElementById("status").textContent === "waiting" && !document.getElementById("waiting-box").hidden`)
	e2eUntil(t, ctx, `document.getElementById("waiting-title").textContent === "Sleeping"`)
	if !e2eEval[bool](t, ctx, `document.getElementById("wait-answer").hidden`) {
		t.Errorf("a sleeping run's page offers something to answer")
	}
	if got := e2eEval[string](t, ctx, `document.getElementById("waiting").textContent`); got == "" || got == "an event [std/retry.sleep]" {
		t.Errorf("the sleep reads %q", got)
	}
	browser.Screenshot(t, ctx, "page-sleeping")
}

// fanOut spawns three children of itself and gathers their statuses.
const fanOut = `if get(input, "n", 0) > 0 {
  return "child " + str(input.n)
}
var kids = []
for n in range(1, 4) {
  let c = act "spawn" {steps: 100000, input: {n: n}}
  append(kids, c.id)
}
var out = []
for id in kids {
  let r = await {key: id}
  append(out, r.status)
}
return out
`

func TestBrowserPagesOfRuns(t *testing.T) {
	ctx := browser.New(t, 0)
	env := newE2E(t)
	done := env.run(t, "counts", "return range(0, 40)\n", nil)
	waits := env.run(t, "asks", "let ok = await {key: \"approve\"}\nreturn ok\n", nil)
	fans := env.run(t, "fans", fanOut, map[string]any{})

	e2eDo(t, ctx, "open the completed run's page", chromedp.Navigate(env.link(t, done)))
	e2eUntil(t, ctx, `document.getElementById("status").textContent === "completed" && !document.getElementById("answer-box").hidden`)
	if got := e2eEval[string](t, ctx, `document.getElementById("figures").textContent`); !strings.HasPrefix(got, "1") || !strings.Contains(got, " steps · took ") {
		t.Errorf("the figures read %q", got)
	}
	if got := e2eEval[string](t, ctx, `document.getElementById("started").textContent`); !strings.HasSuffix(got, " UTC") {
		t.Errorf("the start reads %q: no zone", got)
	}
	if got := e2eEval[string](t, ctx, `document.getElementById("answer-lines").textContent + " " + getComputedStyle(document.getElementById("answer-lines")).display`); got != "42 lines list-item" && got != "42 lines block" {
		t.Errorf("a long answer's fold reads %q", got)
	}
	if !e2eEval[bool](t, ctx, `document.getElementById("objects-box").hidden && document.getElementById("children-box").hidden`) {
		t.Errorf("empty panes show")
	}
	browser.Screenshot(t, ctx, "page-completed")

	e2eDo(t, ctx, "open the waiting run's page", chromedp.Navigate(env.link(t, waits)))
	e2eUntil(t, ctx, `document.getElementById("status").textContent === "waiting" && !document.getElementById("waiting-box").hidden`)
	if got := e2eEval[string](t, ctx, `document.getElementById("wait-command").textContent`); got != "runehost send "+waits+" approve JSON" {
		t.Errorf("the command reads %q", got)
	}
	browser.Screenshot(t, ctx, "page-waiting")

	e2eDo(t, ctx, "open the fan-out's page", chromedp.Navigate(env.link(t, fans)))
	e2eUntil(t, ctx, `document.getElementById("status").textContent === "completed" && document.querySelectorAll("#children li").length === 3`)
	e2eUntil(t, ctx, `[...document.querySelectorAll("#children .status")].every(s => s.textContent === "completed")`)
	if got := e2eEval[string](t, ctx, `[...document.querySelectorAll("#children a")].map(a => a.textContent).join(" ")`); got != fans+".1 "+fans+".2 "+fans+".3" {
		t.Errorf("the children read %q", got)
	}
	browser.Screenshot(t, ctx, "page-fanout")
	child := e2eEval[string](t, ctx, `document.querySelector("#children li:nth-child(2) a").href`)
	e2eDo(t, ctx, "follow the link to the second child", chromedp.Navigate(child))
	e2eUntil(t, ctx, `document.getElementById("run-id").textContent === "`+fans+`.2" && document.getElementById("status").textContent === "completed"`)
	if got := e2eEval[string](t, ctx, `document.getElementById("answer").textContent + " | " + document.getElementById("up").textContent`); got != "child 2 | spawned by "+fans {
		t.Errorf("the child's page reads %q", got)
	}
	browser.Screenshot(t, ctx, "page-child")
	e2eDo(t, ctx, "go back up", chromedp.Navigate(e2eEval[string](t, ctx, `document.querySelector("#up a").href`)))
	e2eUntil(t, ctx, `document.getElementById("run-id").textContent === "`+fans+`"`)
}
