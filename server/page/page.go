// Package page holds the live run page at /r/TOKEN: the run's input, its
// timeline, its runtime objects, its waiting state and its answer, rendered
// by html/template and kept live by a small script over SSE. It knows only
// events.Event and Source; the server provides both (docs/page.md).
package page

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/events"
)

// Source is what the page reads: a run resolved from its link, and its events.
type Source interface {
	// Run returns what the page shows of the run a token names, or with
	// id of one of its descendants (the link shows them too); ok false for
	// a wrong, expired or revoked token, a run that does not exist, or an
	// id that is not the run's or a descendant's.
	Run(ctx context.Context, token, id string) (Run, bool)
	// Events returns the events of the run and its descendants so far, in
	// order, and the cursor the stream resumes after them (opaque to the page).
	Events(ctx context.Context, run string) (evs []events.Event, cursor string, err error)
}

// Run is what the page shows of a run besides its events. Every text is
// already redacted.
type Run struct {
	ID          string
	Prog        string
	Status      string // running, waiting, joining, completed, failed, cancelled, conflict
	Input       string
	Answer      string
	Error       string   // why it failed or stopped
	Waiting     string   // what it awaits, when waiting
	WaitCommand string   // the command that answers it: runehost send RUN TAG JSON
	Sleeps      int64    // unix ms: it sleeps at timers and goes on by itself then (nothing to answer)
	Children    []Child  // its descendants
	Trace       []string // the Rune backtrace of its error, innermost first
	Root        string   // the link's run, when the page shows a descendant of it
	Parent      string   // the run that spawned it, when the link shows that one too

	Steps, Tokens  uint64 // charged so far, its own
	Started, Ended int64  // unix ms; Ended once it ended
}

// Child is a descendant of the page's run, listed with a link to its page.
type Child struct {
	ID     string
	Status string
}

// Terminal reports whether a status is one no run leaves.
func Terminal(status string) bool {
	switch status {
	case "completed", "failed", "cancelled", "conflict", "superseded":
		return true
	}
	return false
}

// Paths of the page: the server routes GET on these to Handler, and
// implements EventsPath itself.
const (
	PagePath    = "/r/{token}"        // the page
	EventsPath  = "/r/{token}/events" // its SSE stream: the server's
	AssetPath   = "/page/"            // the script, the style sheet and the icon
	FaviconPath = "/favicon.ico"      // the icon, where browsers look for it
)

//go:embed assets
var assets embed.FS

var (
	tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"time":     clock,
		"iso":      events.ISO,
		"ok":       verdict,
		"label":    label,
		"pretty":   pretty,
		"rest":     rest,
		"lines":    lines,
		"summary":  summary,
		"stamp":    stamp,
		"terminal": Terminal,
	}).ParseFS(assets, "assets/*.html"))
	// version names the assets' contents, so that a new build's page never
	// runs an old cached script.
	version = func() string {
		h := sha256.New()
		fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := assets.ReadFile(p)
				h.Write(b)
			}
			return nil
		})
		return hex.EncodeToString(h.Sum(nil))[:12]
	}()
)

// notFoundBody is the one answer to a token that opens nothing.
const notFoundBody = "404 page not found\n"

// NotFound answers a wrong, expired or revoked token and a run that does
// not exist alike, byte for byte: the server's stream answers with it too.
func NotFound(w http.ResponseWriter) {
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	secure(h)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	w.Write([]byte(notFoundBody))
}

// csp lets the page load only its own script, style and stream: injected
// markup can neither run script nor fetch anything.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// secure sets the headers every answer of the page carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer") // the URL is the capability
	h.Set("X-Frame-Options", "DENY")
}

// Handler serves the page at PagePath and its assets under AssetPath.
func Handler(src Source) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PagePath, func(w http.ResponseWriter, r *http.Request) {
		servePage(w, r, src)
	})
	mux.HandleFunc("GET "+AssetPath+"{file}", serveAsset)
	mux.HandleFunc("GET "+FaviconPath, func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue("file", "favicon.svg") // what a browser asks for before it reads the page's icon link
		serveAsset(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { NotFound(w) })
	return mux
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	ct, ok := types[path.Ext(name)]
	b, err := assets.ReadFile("assets/" + name)
	if !ok || err != nil {
		NotFound(w)
		return
	}
	secure(w.Header())
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Write(b)
}

func servePage(w http.ResponseWriter, r *http.Request, src Source) {
	token := r.PathValue("token")
	run, ok := src.Run(r.Context(), token, r.URL.Query().Get("run"))
	if !ok {
		NotFound(w)
		return
	}
	evs, cursor, err := src.Events(r.Context(), run.ID)
	if err != nil {
		http.Error(w, "the run's events cannot be read now", http.StatusServiceUnavailable)
		return
	}
	v := build(run, evs)
	v.Token, v.Cursor, v.Version = token, cursor, version
	v.Now = time.Now().UnixMilli()
	v.Base = "/r/" + token
	v.Events = v.Base + "/events"
	if run.Root != "" {
		v.Events += "?run=" + url.QueryEscape(run.ID)
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, "page.html", v); err != nil {
		http.Error(w, "the page cannot be rendered", http.StatusInternalServerError)
		return
	}
	secure(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// view is what the template renders.
type view struct {
	Run      Run
	Base     string // the page of the link's run
	Events   string // this page's stream
	Now      int64  // unix ms, for how long a run that goes on has run
	Token    string
	Cursor   string
	Version  string
	Terminal bool
	Timeline []entry
	Objects  []events.Event
}

// entry is one line of the timeline: an event, and for a tool call its
// result when it came.
type entry struct {
	Ev     events.Event
	Result *events.Event
	Said   string // for a model's call: its text as it streamed
	Root   bool   // of the run itself, not a child
}

// build lays out the events as the script does: calls paired with their
// results by call id, the run's own input and answer in their places.
func build(run Run, evs []events.Event) view {
	v := view{Run: run, Terminal: Terminal(run.Status)}
	calls := map[string]int{} // call id: index in Timeline
	type runSeq struct {
		run string
		seq uint64
	}
	seen := map[runSeq]bool{}
	for _, e := range evs {
		if e.Check() != nil || seen[runSeq{e.Run, e.Seq}] {
			continue
		}
		seen[runSeq{e.Run, e.Seq}] = true
		root := e.Run == run.ID
		switch e.Kind {
		case events.KindInput:
			if root {
				if v.Run.Input == "" {
					v.Run.Input = e.Input.Text
				}
				continue
			}
		case events.KindRunMeta:
			if root {
				if v.Run.Prog == "" {
					v.Run.Prog = e.RunMeta.Prog
				}
				continue
			}
		case events.KindAnswer:
			if root {
				v.Run.Answer = e.Answer.Text
				continue
			}
		case events.KindToolResult:
			if i, ok := calls[e.ToolResult.CallID]; ok && v.Timeline[i].Result == nil {
				r := e
				v.Timeline[i].Result = &r
				v.Timeline[i].Said = "" // the result holds the whole reply
				continue
			}
		case events.KindAssistant:
			if i, ok := calls[e.Assistant.CallID]; ok && v.Timeline[i].Result == nil {
				v.Timeline[i].Said += e.Assistant.Text
			}
			continue // the result holds the whole reply
		case events.KindSpanStart, events.KindSpanEnd:
			continue
		case events.KindObservation:
			// An act's observation restates its call's result, shown
			// already; only one without a call on the page is listed.
			if _, ok := calls[strings.TrimPrefix(e.Observation.ObservationID, "obs:")]; !ok {
				v.Objects = append(v.Objects, e)
			}
			continue
		case events.KindOutcome:
			// An outcome that says only the status, the status says.
			if e.Outcome.VerificationID != "" || len(e.Outcome.Degraded) > 0 {
				v.Objects = append(v.Objects, e)
			}
			continue
		case events.KindMemoryQuery, events.KindVerification:
			v.Objects = append(v.Objects, e)
			continue
		}
		if e.Kind == events.KindToolCall {
			calls[e.ToolCall.CallID] = len(v.Timeline)
		}
		v.Timeline = append(v.Timeline, entry{Ev: e, Root: root})
	}
	return v
}

// clock is an event's time of day, UTC, as the script shows it.
func clock(ms int64) string { return events.ISO(ms)[11:19] }

// verdict is how a tool result went, as the script words it.
func verdict(r *events.ToolResult) string {
	switch {
	case r.ExitCode != nil:
		return "exit " + strconv.Itoa(*r.ExitCode)
	case r.OK:
		return "ok"
	}
	return "failed"
}

// label is the one line of a runtime object, as events.Text has it.
func label(e events.Event) string { return events.Text(&e) }

// pretty is an answer as a person reads it: JSON indented, other text as
// it is.
func pretty(text string) string {
	var buf bytes.Buffer
	if !json.Valid([]byte(text)) || json.Indent(&buf, []byte(text), "", "  ") != nil {
		return text
	}
	return buf.String()
}

// longAnswer is how many lines an answer shows before it folds.
const longAnswer = 24

// lines counts a text's lines.
func lines(text string) int { return strings.Count(strings.TrimRight(text, "\n"), "\n") + 1 }

// summary is the run's line of figures: steps, tokens and how long it ran
// (or has so far, when it goes on: the script keeps that one current).
func summary(r Run, now int64) string {
	parts := []string{count(r.Steps, "step")}
	if r.Tokens > 0 {
		parts = append(parts, count(r.Tokens, "token"))
	}
	if r.Started > 0 {
		if r.Ended > 0 {
			parts = append(parts, "took "+span(r.Ended-r.Started))
		} else {
			parts = append(parts, span(now-r.Started)+" so far")
		}
	}
	return strings.Join(parts, " · ")
}

// count is "1 step", "2,048 steps".
func count(n uint64, noun string) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n != 1 {
		noun += "s"
	}
	return s + " " + noun
}

// span is a duration as a person reads it: 350ms, 4.2s, 3m12s, 2h05m.
func span(ms int64) string {
	ms = max(ms, 0) // a clock set back
	switch d := time.Duration(ms) * time.Millisecond; {
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// stamp is a moment with its zone, UTC: 2026-12-07 16:24:03 UTC.
func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 MST") }

// rest is a call's description without the tool's name it repeats
// ("tool.run wc" under tool.run is "wc"; "model.chat" is "").
func rest(description, tool string) string {
	return strings.TrimSpace(strings.TrimPrefix(description, tool))
}
