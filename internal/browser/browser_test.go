// browser_test.go checks the harness: how it finds Chromium, and that the
// browser it starts loads a page.

package browser

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestBrowserFind(t *testing.T) {
	t.Setenv(EnvPath, "/nonexistent/chromium")
	if p, why := Find(); p != "" || !strings.Contains(why, EnvPath) {
		t.Fatalf("Find with a wrong %s: %q, %q", EnvPath, p, why)
	}
}

func TestBrowserStarts(t *testing.T) {
	ctx := New(t, 0)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<!doctype html><title>t</title><p id="p">hello</p>`))
	}))
	defer ts.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#p"))
	if err != nil || text != "hello" {
		t.Fatalf("text %q, %v", text, err)
	}
	if p := Screenshot(t, ctx, "hello"); !strings.HasSuffix(p, "hello.png") {
		t.Fatalf("screenshot at %q", p)
	}
}
