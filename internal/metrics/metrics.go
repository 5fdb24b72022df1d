// Package metrics holds the host's Prometheus metrics on a registry of its
// own: slices, steps, acts by family and phase and their latency, counted
// from the run events; invocations, store bytes, sandbox pool and Slack
// edits read from functions at scrape time; and API requests by route.
// docs/observability.md lists them.
package metrics

import (
	"container/list"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runehost/runehost/events"
)

// Phases of an act (the phase label of runehost_acts_total).
const (
	PhaseAttempted = "attempted" // its tool_call: the attempt is recorded
	PhaseSucceeded = "succeeded" // a tool_result with ok
	PhaseFailed    = "failed"    // a tool_result not ok: the act raised an error, or its tool exited non-zero
	PhaseDenied    = "denied"    // a tool_result of kind denied (the ward) or limit (a cap)
	PhaseUnknown   = "unknown"   // its outcome is unknown: the run waits for it to be resolved
)

// Families are the act families counted by name; any other tag counts as
// "other", so that a prog's made-up tags cannot grow the label set.
var Families = []string{"fs", "http", "model", "tool", "approval", "spawn"}

// Family is an act tag's family: its prefix before the dot (fs.read: fs),
// or "other" when that is not one of Families.
func Family(tag string) string {
	f, _, _ := strings.Cut(tag, ".")
	for _, k := range Families {
		if f == k {
			return f
		}
	}
	return "other"
}

// MaxOpenCalls bounds the acts whose result is awaited for their latency;
// beyond it the oldest is forgotten (its latency is not observed).
const MaxOpenCalls = 10000

// waitingFor opens the summary of the note of a run waiting on an act of
// unknown outcome (host: "waiting for the outcome of act TAG").
const waitingFor = "waiting for the outcome of act "

// Metrics is the host's metrics. Its methods are safe for concurrent use;
// Slice, Event and Middleware of a nil *Metrics do nothing, so a host
// without metrics calls them all the same.
type Metrics struct {
	reg      *prometheus.Registry
	slices   prometheus.Counter
	steps    prometheus.Counter
	acts     *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	requests *prometheus.CounterVec

	mu    sync.Mutex
	calls map[string]*list.Element // call id: its *call in order
	order *list.List               // of *call, oldest first

	fmu         sync.Mutex
	invocations func() (map[string]int, error)
	storeBytes  func() (lsm, vlog int64)
	pool        func() (busy, size int)
	slack       func() (edits, dropped, refused int64)
	storeReqs   func() (reads, scans, commits uint64)
}

// call is an act awaiting its result.
type call struct {
	id, family string
	at         int64 // unix ms
}

// New returns the metrics on a registry of their own, with the Go runtime's
// and the process's collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		slices: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runehost_slices_total", Help: "Slices run: one run of a prog's machine between checkpoints.",
		}),
		steps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runehost_steps_total", Help: "Steps the slices ran.",
		}),
		acts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runehost_acts_total", Help: "Acts by family (the tag's prefix: fs, http, model, tool, approval, spawn, other) and phase (attempted, succeeded, failed, denied, unknown).",
		}, []string{"family", "phase"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "runehost_act_duration_seconds", Help: "Time from an act's attempt to its recorded outcome, by family.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"family"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runehost_api_requests_total", Help: "HTTP API requests by route pattern and status code.",
		}, []string{"route", "code"}),
		calls: map[string]*list.Element{},
		order: list.New(),
	}
	m.reg.MustRegister(m.slices, m.steps, m.acts, m.latency, m.requests, funcs{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, f := range append(Families, "other") {
		for _, p := range []string{PhaseAttempted, PhaseSucceeded, PhaseFailed, PhaseDenied, PhaseUnknown} {
			m.acts.WithLabelValues(f, p) // zero, so that rates have a start
		}
	}
	return m
}

// Registry is the metrics' registry, for collectors of the caller's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format. A failing
// function (SetInvocations) leaves its metric out and the rest are served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: m.reg})
}

// Slice counts one slice that ran steps steps.
func (m *Metrics) Slice(steps uint64) {
	if m == nil {
		return
	}
	m.slices.Inc()
	m.steps.Add(float64(steps))
}

// Event counts the acts of a stored run event: a tool_call is an attempt, a
// tool_result its outcome (succeeded, failed or denied) and its latency from
// the call's At, and a run waiting on an act of unknown outcome an unknown.
func (m *Metrics) Event(ev events.Event) {
	if m == nil {
		return
	}
	switch {
	case ev.ToolCall != nil:
		f := Family(ev.ToolCall.Tool)
		m.acts.WithLabelValues(f, PhaseAttempted).Inc()
		m.open(&call{id: ev.ToolCall.CallID, family: f, at: ev.At})
	case ev.ToolResult != nil:
		r := ev.ToolResult
		f := Family(r.Tool)
		m.acts.WithLabelValues(f, phase(r)).Inc()
		if c := m.close(r.CallID); c != nil && ev.At >= c.at {
			m.latency.WithLabelValues(c.family).Observe(float64(ev.At-c.at) / 1000)
		}
	case ev.RunNote != nil && ev.RunNote.Note == events.NoteWaiting && strings.HasPrefix(ev.RunNote.Summary, waitingFor):
		m.acts.WithLabelValues(Family(strings.TrimPrefix(ev.RunNote.Summary, waitingFor)), PhaseUnknown).Inc()
	}
}

// phase is an outcome's phase. The host writes an act's error as "error
// KIND: MSG"; a tool that exited non-zero opens with "exit N:".
func phase(r *events.ToolResult) string {
	switch {
	case r.OK:
		return PhaseSucceeded
	case strings.HasPrefix(r.Summary, "error denied:"), strings.HasPrefix(r.Summary, "error limit:"):
		return PhaseDenied
	}
	return PhaseFailed
}

func (m *Metrics) open(c *call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.calls[c.id]; ok {
		m.order.Remove(el)
	}
	m.calls[c.id] = m.order.PushBack(c)
	for m.order.Len() > MaxOpenCalls {
		old := m.order.Remove(m.order.Front()).(*call)
		delete(m.calls, old.id)
	}
}

func (m *Metrics) close(id string) *call {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.calls[id]
	if !ok {
		return nil
	}
	delete(m.calls, id)
	return m.order.Remove(el).(*call)
}

// OpenCalls is how many acts await their result (bounded by MaxOpenCalls).
func (m *Metrics) OpenCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

// SetInvocations sets the function that counts invocations by status,
// read at each scrape (runehost_invocations{status}).
func (m *Metrics) SetInvocations(f func() (map[string]int, error)) {
	m.fmu.Lock()
	m.invocations = f
	m.fmu.Unlock()
}

// SetStoreBytes sets the function that sizes the store: its LSM tree and
// its value log (runehost_store_bytes{kind}).
func (m *Metrics) SetStoreBytes(f func() (lsm, vlog int64)) {
	m.fmu.Lock()
	m.storeBytes = f
	m.fmu.Unlock()
}

// SetPool sets the function that says how many sandboxes of the pool are
// busy, and its size (runehost_sandbox_pool{state}).
func (m *Metrics) SetPool(f func() (busy, size int)) {
	m.fmu.Lock()
	m.pool = f
	m.fmu.Unlock()
}

// SetSlack sets the function that counts Slack edits made, progress edits
// dropped and terminal edits refused (runehost_slack_edits_total,
// runehost_slack_refusals_total{kind}). Its values only grow.
func (m *Metrics) SetSlack(f func() (edits, dropped, refused int64)) {
	m.fmu.Lock()
	m.slack = f
	m.fmu.Unlock()
}

// SetStoreRequests sets the function that counts the requests the store
// made to its servers (runehost_store_requests_total{kind}: read, scan,
// commit; a store on JetStream). Its values only grow.
func (m *Metrics) SetStoreRequests(f func() (reads, scans, commits uint64)) {
	m.fmu.Lock()
	m.storeReqs = f
	m.fmu.Unlock()
}

// Middleware counts the requests h serves as route (the route's pattern,
// never the raw path: the label set stays bounded) and their status code.
func (m *Metrics) Middleware(route string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &recorder{ResponseWriter: w}
		defer func() {
			code := rw.code
			if code == 0 {
				code = http.StatusOK
			}
			m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
		}()
		h.ServeHTTP(rw, r)
	})
}

// recorder notes a response's status code. It flushes (server-sent events)
// and unwraps, for http.ResponseController.
type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush flushes the underlying writer when it can.
func (r *recorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// funcs collects the metrics read from the Set functions at scrape time.
type funcs struct{ m *Metrics }

var (
	descInvocations = prometheus.NewDesc("runehost_invocations", "Invocations by status.", []string{"status"}, nil)
	descStore       = prometheus.NewDesc("runehost_store_bytes", "Bytes of the store: its LSM tree (lsm) and value log (vlog).", []string{"kind"}, nil)
	descPool        = prometheus.NewDesc("runehost_sandbox_pool", "Sandboxes of the pool, busy or idle.", []string{"state"}, nil)
	descEdits       = prometheus.NewDesc("runehost_slack_edits_total", "Slack message edits made.", nil, nil)
	descRefusals    = prometheus.NewDesc("runehost_slack_refusals_total", "Slack edits not made: progress dropped (dropped_progress) or a terminal edit refused (refused_terminal).", []string{"kind"}, nil)
	descRequests    = prometheus.NewDesc("runehost_store_requests_total", "Requests the store made to its servers (JetStream): reads, scans (a consumer each) and commits.", []string{"kind"}, nil)
)

func (f funcs) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInvocations, descStore, descPool, descEdits, descRefusals, descRequests} {
		ch <- d
	}
}

func (f funcs) Collect(ch chan<- prometheus.Metric) {
	m := f.m
	m.fmu.Lock()
	inv, st, pool, slack, req := m.invocations, m.storeBytes, m.pool, m.slack, m.storeReqs
	m.fmu.Unlock()
	if inv != nil {
		counts, err := inv()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descInvocations, err)
		}
		for status, n := range counts {
			ch <- prometheus.MustNewConstMetric(descInvocations, prometheus.GaugeValue, float64(n), status)
		}
	}
	if st != nil {
		lsm, vlog := st()
		ch <- prometheus.MustNewConstMetric(descStore, prometheus.GaugeValue, float64(lsm), "lsm")
		ch <- prometheus.MustNewConstMetric(descStore, prometheus.GaugeValue, float64(vlog), "vlog")
	}
	if pool != nil {
		busy, size := pool()
		ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(busy), "busy")
		ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(max(size-busy, 0)), "idle")
	}
	if slack != nil {
		edits, dropped, refused := slack()
		ch <- prometheus.MustNewConstMetric(descEdits, prometheus.CounterValue, float64(edits))
		ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.CounterValue, float64(dropped), "dropped_progress")
		ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.CounterValue, float64(refused), "refused_terminal")
	}
	if req != nil {
		reads, scans, commits := req()
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(reads), "read")
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(scans), "scan")
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(commits), "commit")
	}
}
