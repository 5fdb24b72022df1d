// pages_browser_test.go opens, in Chromium, the pages of a run that failed
// and of one that sleeps, and screenshots them: the error and its
// backtrace first; a timer shown sleeping until its deadline, with nothing
// to answer.

package server

import (
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
