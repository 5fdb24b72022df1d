// metrics_test.go scrapes the handler and checks each family.

package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runehost/runehost/events"
)

// scrape serves /metrics once and parses it.
func scrape(t *testing.T, m *Metrics) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	text := rec.Body.String()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return fams, text
}

// value is the value of the sample of family name with labels, or -1.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, mt := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range mt.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.Counter.GetValue()
		case mt.Gauge != nil:
			return mt.Gauge.GetValue()
		case mt.Histogram != nil:
			return float64(mt.Histogram.GetSampleCount())
		}
	}
	return -1
}

func ev(run string, seq uint64, at int64, e events.Event) events.Event {
	e.Run, e.Seq, e.At = run, seq, at
	switch {
	case e.ToolCall != nil:
		e.Kind = events.KindToolCall
	case e.ToolResult != nil:
		e.Kind = events.KindToolResult
	case e.RunNote != nil:
		e.Kind = events.KindRunNote
	}
	return e
}

func TestFamily(t *testing.T) {
	for tag, want := range map[string]string{
		"fs.read": "fs", "http.get": "http", "model.chat": "model", "tool.run": "tool",
		"approval": "approval", "spawn": "spawn", "made.up": "other", "": "other", "fs": "fs",
	} {
		if got := Family(tag); got != want {
			t.Errorf("Family(%q) = %q, want %q", tag, got, want)
		}
	}
}

func TestActs(t *testing.T) {
	m := New()
	code := 1
	seq := []events.Event{
		ev("r1", 1, 1000, events.Event{ToolCall: &events.ToolCall{CallID: "r1#1", Tool: "fs.read"}}),
		ev("r1", 2, 1250, events.Event{ToolResult: &events.ToolResult{CallID: "r1#1", Tool: "fs.read", OK: true}}),
		ev("r1", 3, 2000, events.Event{ToolCall: &events.ToolCall{CallID: "r1#2", Tool: "tool.run"}}),
		ev("r1", 4, 5000, events.Event{ToolResult: &events.ToolResult{CallID: "r1#2", Tool: "tool.run", ExitCode: &code, Summary: "exit 1: boom"}}),
		ev("r1", 5, 6000, events.Event{ToolCall: &events.ToolCall{CallID: "r1#3", Tool: "http.get"}}),
		ev("r1", 6, 6000, events.Event{ToolResult: &events.ToolResult{CallID: "r1#3", Tool: "http.get", Summary: "error denied: no grant"}}),
		ev("r1", 7, 6000, events.Event{RunNote: &events.RunNote{Note: events.NoteRefused, Summary: "http.get denied: no grant"}}),
		ev("r1", 8, 7000, events.Event{ToolCall: &events.ToolCall{CallID: "r1#4", Tool: "model.chat"}}),
		ev("r1", 9, 7000, events.Event{ToolResult: &events.ToolResult{CallID: "r1#4", Tool: "model.chat", Summary: "error limit: over the cap"}}),
		ev("r1", 10, 8000, events.Event{ToolCall: &events.ToolCall{CallID: "r1#5", Tool: "fs.write"}}),
		ev("r1", 11, 8000, events.Event{RunNote: &events.RunNote{Note: events.NoteWaiting, Summary: "waiting for the outcome of act fs.write"}}),
		ev("r1", 12, 9000, events.Event{ToolCall: &events.ToolCall{CallID: "r1#6", Tool: "evil.tag.with.any.text"}}),
	}
	for _, e := range seq {
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		m.Event(e)
	}
	fams, _ := scrape(t, m)
	for _, w := range []struct {
		family, phase string
		n             float64
	}{
		{"fs", "attempted", 2}, {"fs", "succeeded", 1}, {"fs", "unknown", 1}, {"tool", "failed", 1},
		{"http", "denied", 1}, {"model", "denied", 1}, {"other", "attempted", 1}, {"approval", "attempted", 0},
	} {
		if got := value(fams, "runehost_acts_total", "family", w.family, "phase", w.phase); got != w.n {
			t.Errorf("acts{%s,%s} = %v, want %v", w.family, w.phase, got, w.n)
		}
	}
	// Latency from the events' times: fs 0.25 s, tool 3 s.
	h := fams["runehost_act_duration_seconds"]
	if h == nil {
		t.Fatal("no runehost_act_duration_seconds")
	}
	sums := map[string]float64{}
	for _, mt := range h.Metric {
		sums[mt.Label[0].GetValue()] = mt.Histogram.GetSampleSum()
	}
	if sums["fs"] != 0.25 || sums["tool"] != 3 || sums["http"] != 0 {
		t.Errorf("latency sums %v", sums)
	}
	if n := m.OpenCalls(); n != 2 {
		t.Errorf("%d open calls, want 2 (r1#5 unknown, r1#6)", n)
	}
}

func TestOpenCallsBounded(t *testing.T) {
	m := New()
	for i := range MaxOpenCalls + 500 {
		m.Event(ev("r1", uint64(i+1), 1, events.Event{ToolCall: &events.ToolCall{CallID: "r1#" + itoa(i), Tool: "fs.read"}}))
	}
	if n := m.OpenCalls(); n != MaxOpenCalls {
		t.Errorf("%d open calls, cap %d", n, MaxOpenCalls)
	}
	// The oldest was forgotten; the newest still pairs.
	m.Event(ev("r1", 1, 2, events.Event{ToolResult: &events.ToolResult{CallID: "r1#0", Tool: "fs.read", OK: true}}))
	m.Event(ev("r1", 1, 1001, events.Event{ToolResult: &events.ToolResult{CallID: "r1#" + itoa(MaxOpenCalls+499), Tool: "fs.read", OK: true}}))
	if n := testutil.CollectAndCount(m.latency); n != 1 {
		t.Errorf("%d latency series", n)
	}
	fams, _ := scrape(t, m)
	if got := value(fams, "runehost_act_duration_seconds", "family", "fs"); got != 1 {
		t.Errorf("%v latency samples, want 1", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestSlicesAndFuncs(t *testing.T) {
	m := New()
	m.Slice(100)
	m.Slice(23)
	if got := testutil.ToFloat64(m.slices); got != 2 {
		t.Errorf("slices %v", got)
	}
	if got := testutil.ToFloat64(m.steps); got != 123 {
		t.Errorf("steps %v", got)
	}
	m.SetInvocations(func() (map[string]int, error) {
		return map[string]int{"running": 2, "waiting": 1, "completed": 7}, nil
	})
	m.SetStoreBytes(func() (int64, int64) { return 4096, 1 << 20 })
	m.SetPool(func() (int, int) { return 3, 8 })
	m.SetSlack(func() (int64, int64, int64) { return 40, 5, 1 })
	m.SetStoreRequests(func() (uint64, uint64, uint64) { return 300, 4, 110 })
	fams, text := scrape(t, m)
	for _, w := range []struct {
		name   string
		labels []string
		v      float64
	}{
		{"runehost_slices_total", nil, 2},
		{"runehost_steps_total", nil, 123},
		{"runehost_invocations", []string{"status", "running"}, 2},
		{"runehost_invocations", []string{"status", "completed"}, 7},
		{"runehost_store_bytes", []string{"kind", "lsm"}, 4096},
		{"runehost_store_bytes", []string{"kind", "vlog"}, 1 << 20},
		{"runehost_sandbox_pool", []string{"state", "busy"}, 3},
		{"runehost_sandbox_pool", []string{"state", "idle"}, 5},
		{"runehost_slack_edits_total", nil, 40},
		{"runehost_slack_refusals_total", []string{"kind", "dropped_progress"}, 5},
		{"runehost_slack_refusals_total", []string{"kind", "refused_terminal"}, 1},
		{"runehost_store_requests_total", []string{"kind", "read"}, 300},
		{"runehost_store_requests_total", []string{"kind", "scan"}, 4},
		{"runehost_store_requests_total", []string{"kind", "commit"}, 110},
	} {
		if got := value(fams, w.name, w.labels...); got != w.v {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.v)
		}
	}
	if fams["runehost_slack_edits_total"].GetType() != dto.MetricType_COUNTER || fams["runehost_invocations"].GetType() != dto.MetricType_GAUGE {
		t.Errorf("types: edits %v, invocations %v", fams["runehost_slack_edits_total"].GetType(), fams["runehost_invocations"].GetType())
	}
	if !strings.Contains(text, "go_goroutines") {
		t.Errorf("no Go runtime metrics")
	}

	// A failing function leaves its metric out; the rest are served.
	m.SetInvocations(func() (map[string]int, error) { return nil, errors.New("store closed") })
	fams, _ = scrape(t, m)
	if fams["runehost_invocations"] != nil || value(fams, "runehost_slices_total") != 2 {
		t.Errorf("a failing invocations function: %v", fams["runehost_invocations"])
	}
}

func TestMiddleware(t *testing.T) {
	m := New()
	mux := http.NewServeMux()
	mux.Handle("GET /v1/runs/{id}", m.Middleware("GET /v1/runs/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "nope" {
			http.Error(w, "no such run", http.StatusNotFound)
			return
		}
		io.WriteString(w, "ok")
	})))
	mux.Handle("GET /v1/runs/{id}/events", m.Middleware("GET /v1/runs/{id}/events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the middleware: %v", err)
		}
		io.WriteString(w, "data: x\n\n")
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, p := range []string{"/v1/runs/r1", "/v1/runs/r2", "/v1/runs/nope", "/v1/runs/r1/events"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	fams, _ := scrape(t, m)
	for _, w := range []struct {
		route, code string
		n           float64
	}{{"GET /v1/runs/{id}", "200", 2}, {"GET /v1/runs/{id}", "404", 1}, {"GET /v1/runs/{id}/events", "200", 1}} {
		if got := value(fams, "runehost_api_requests_total", "route", w.route, "code", w.code); got != w.n {
			t.Errorf("requests{%s,%s} = %v, want %v", w.route, w.code, got, w.n)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 3 {
		t.Errorf("%d request series, want 3 (raw paths are not labels)", n)
	}
}

func TestNil(t *testing.T) {
	var m *Metrics
	m.Slice(1)
	m.Event(ev("r1", 1, 1, events.Event{ToolCall: &events.ToolCall{CallID: "r1#1", Tool: "fs.read"}}))
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := m.Middleware("x", h); got == nil {
		t.Fatal("nil middleware")
	}
}
