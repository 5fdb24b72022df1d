// Package browser starts headless Chromium for tests, driven with chromedp:
// it finds Debian's chromium, skips a test when there is none (and fails it
// instead under CI, which must always run it), and saves screenshots
// beside the test's output.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// EnvPath names the environment variable that gives Chromium's path.
const EnvPath = "RUNEHOST_CHROMIUM"

// Timeout bounds a whole browser test unless New is given another.
const Timeout = 90 * time.Second

// names are Chromium's commands, Debian's first.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of a Chromium, or "" and why there is none.
func Find() (path, why string) {
	if p := os.Getenv(EnvPath); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Sprintf("%s=%s: %v", EnvPath, p, err)
		}
		return p, ""
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, ""
		}
	}
	return "", "no chromium on PATH (apt-get install chromium, or set " + EnvPath + ")"
}

// Skip returns Chromium's path, or skips t saying why there is none. Under
// CI (CI=true) a missing browser fails the test: CI always runs it.
func Skip(t testing.TB) string {
	t.Helper()
	p, why := Find()
	if p != "" {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("browser test: %s; CI must run it (.ci/run installs chromium)", why)
	}
	t.Skipf("browser test skipped: %s", why)
	return ""
}

// New starts a headless Chromium for t (or skips t, as Skip does) and
// returns the context of its first tab, bounded by timeout (0: Timeout).
// The browser's console and uncaught exceptions go to t's log; everything
// stops when t ends. chromedp.NewContext(ctx) opens another tab of the
// same browser.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	path := Skip(t)
	if timeout <= 0 {
		timeout = Timeout
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1000, 800),
	)
	ctx, cancelTime := context.WithTimeout(context.Background(), timeout)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	var mu sync.Mutex
	done := false
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf(format, args...)
		}
	}
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelTime()
	})
	t.Cleanup(func() { // runs first: nothing logs after t ends
		mu.Lock()
		done = true
		mu.Unlock()
	})
	// Start the browser now, so that a failure to start is reported as such.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	err := chromedp.Listen(tab, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			s := ""
			for _, a := range ev.Args {
				if len(a.Value) > 0 {
					s += " " + string(a.Value)
				} else {
					s += " " + a.Description
				}
			}
			logf("browser console.%s:%s", ev.Type, s)
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			s := d.Text
			if d.Exception != nil {
				s += " " + d.Exception.Description
			}
			logf("browser exception at %s:%d: %s", d.URL, d.LineNumber+1, s)
		}
	})
	if err != nil {
		t.Fatalf("listening to %s: %v", path, err)
	}
	return tab
}

// Screenshot saves a full-page screenshot of ctx's tab as NAME.png in t's
// artifact directory (kept with go test -artifacts) and logs its path.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	t.Logf("screenshot: %s", p)
	return p
}
