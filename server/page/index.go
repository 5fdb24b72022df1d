// index.go holds the operators' plain index of runs; the server puts its
// token authentication in front of it.

package page

import (
	"bytes"
	"context"
	"net/http"
)

// IndexSource lists runs for the index.
type IndexSource interface {
	// Runs returns the runs to list, newest first.
	Runs(ctx context.Context) ([]IndexRun, error)
}

// IndexRun is one row of the index.
type IndexRun struct {
	ID      string
	Prog    string
	Status  string
	Parent  string // "" for a root run
	Updated int64  // unix ms
	Links   int    // its live page links
	Page    string // a URL of its page, when the server has one to give; else ""
}

// Index serves the plain index of runs, at whatever path it is mounted.
func Index(src IndexSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs, err := src.Runs(r.Context())
		if err != nil {
			http.Error(w, "the runs cannot be read now", http.StatusServiceUnavailable)
			return
		}
		var buf bytes.Buffer
		if err := tmpl.ExecuteTemplate(&buf, "index.html", struct {
			Runs    []IndexRun
			Version string
		}{runs, version}); err != nil {
			http.Error(w, "the index cannot be rendered", http.StatusInternalServerError)
			return
		}
		secure(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(buf.Bytes())
	})
}
