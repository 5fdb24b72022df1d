// walk_test.go runs the README's service walk as a user would: a run, then
// runehost serve without --listen, then runehost link; the link's page
// loads in Chromium. A serve that serves no pages makes link refuse with
// the command that makes a link work.

package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runehost/runehost/internal/browser"
)

func TestReadmeServiceWalk(t *testing.T) {
	ctx := browser.New(t, 0) // skips without Chromium (fails under CI)
	dir := filepath.Join(t.TempDir(), "store")
	var env []string
	// The default address when it is free; another when something else
	// (a parallel test's serve) holds it, as a user with a busy port sets.
	if l, err := net.Listen("tcp", defaultListen); err == nil {
		l.Close()
	} else {
		env = append(env, "RUNEHOST_LISTEN=127.0.0.1:0")
	}
	run := start(t, dir, env, "run", "../../testdata/progs/hello.rune", "--input", `{"name":"Ada"}`)
	if code := run.wait(t, time.Minute); code != exitOK {
		t.Fatalf("run: exit %d:\n%s", code, run.stderr())
	}
	srv := start(t, dir, env, "serve")
	srv.await(t, `"msg":"serving"`)
	code, out, errs := processEnv(t, dir, append(env, "RUNEHOST_BASE_URL="), "link", "r1")
	url := strings.TrimSpace(out)
	if code != exitOK || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/r/") {
		t.Fatalf("link: exit %d, %q, %s\nserve:\n%s", code, out, errs, srv.stderr())
	}
	var status string
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(`#answer`),
	); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
	if err != nil || status != "completed" {
		t.Fatalf("the page's status %q (%v)", status, err)
	}
	browser.Screenshot(t, ctx, "readme-walk")
}

func TestLinkRefusesWithoutPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	run := start(t, dir, nil, "run", writeProg(t, "return 1\n"))
	if code := run.wait(t, time.Minute); code != exitOK {
		t.Fatalf("run: exit %d:\n%s", code, run.stderr())
	}
	srv := start(t, dir, nil, "serve", "--listen", "off")
	srv.await(t, `"msg":"serving"`)
	code, out, errs := processEnv(t, dir, []string{"RUNEHOST_BASE_URL="}, "link", "r1")
	if code != exitUsage || out != "" || !strings.Contains(errs, "link: runehost serve serves no run pages (it listens on no TCP address), so a link would not open: restart it with runehost serve --listen 127.0.0.1:7233, or give --base-url where its pages are reached") {
		t.Fatalf("link: exit %d, %q, %s", code, out, errs)
	}
	if code, _, errs := processEnv(t, dir, []string{"RUNEHOST_BASE_URL="}, "link", "--list", "r1"); code != exitOK || strings.Contains(errs, "live") {
		t.Fatalf("a link was left: %s", errs)
	}
}
