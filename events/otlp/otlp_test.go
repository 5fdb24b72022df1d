// otlp_test.go holds the exporter against an in-process OTLP/HTTP collector.

package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runehost/runehost/events"
)

// collector is an OTLP/HTTP trace receiver: POST /v1/traces.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []string // service.name of each resource seen
	posts int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "not here", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.posts++
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				c.res = append(c.res, kv.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// byName returns the one span named name.
func (c *collector) byName(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	var found *tracepb.Span
	for _, s := range c.spans {
		if s.Name == name {
			if found != nil {
				t.Fatalf("two spans named %q", name)
			}
			found = s
		}
	}
	if found == nil {
		var names []string
		for _, s := range c.spans {
			names = append(names, s.Name)
		}
		t.Fatalf("no span %q among %q", name, names)
	}
	return found
}

func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			v := kv.Value
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue(), true
			default:
				return v.String(), true
			}
		}
	}
	return "", false
}

// stream numbers events of runs in order, each run's seq from 1.
type stream struct {
	seq map[string]uint64
	out []events.Event
}

func (st *stream) add(run string, at int64, ev events.Event) {
	if st.seq == nil {
		st.seq = map[string]uint64{}
	}
	st.seq[run]++
	ev.Run, ev.Seq, ev.At = run, st.seq[run], at
	if ev.Kind == "" {
		switch {
		case ev.Input != nil:
			ev.Kind = events.KindInput
		case ev.RunMeta != nil:
			ev.Kind = events.KindRunMeta
		case ev.SpanStart != nil:
			ev.Kind = events.KindSpanStart
		case ev.SpanEnd != nil:
			ev.Kind = events.KindSpanEnd
		case ev.ToolCall != nil:
			ev.Kind = events.KindToolCall
		case ev.ToolResult != nil:
			ev.Kind = events.KindToolResult
		case ev.RunNote != nil:
			ev.Kind = events.KindRunNote
		case ev.Answer != nil:
			ev.Kind = events.KindAnswer
		case ev.Outcome != nil:
			ev.Kind = events.KindOutcome
		}
	}
	st.out = append(st.out, ev)
}

// act adds an act as the host logs it: span_start and tool_call at start,
// tool_result and span_end at end.
func (st *stream) act(run string, n int, tool, desc string, start, end int64, ok bool, exit *int, summary string) {
	id := run + "#" + itoa(n)
	st.add(run, start, events.Event{SpanStart: &events.SpanStart{SpanID: "act:" + id, Name: tool}})
	st.add(run, start, events.Event{ToolCall: &events.ToolCall{CallID: id, Tool: tool, Description: desc, Grant: tool + ":*"}})
	st.add(run, end, events.Event{ToolResult: &events.ToolResult{CallID: id, Tool: tool, OK: ok, ExitCode: exit, Summary: summary}})
	status := "ok"
	if !ok {
		status = "error"
	}
	st.add(run, end, events.Event{SpanEnd: &events.SpanEnd{SpanID: "act:" + id, Name: tool, StartedAt: start, DurationMs: end - start, Status: status}})
}

func itoa(n int) string { return string(rune('0' + n)) }

const t0 = int64(1_780_000_000_000) // unix ms

func nanos(ms int64) uint64 { return uint64(ms) * 1e6 }

func TestExportToCollector(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	if !Enabled() {
		t.Fatal("Enabled() is false with an endpoint set")
	}
	x, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !x.Enabled() {
		t.Fatal("the exporter is disabled")
	}

	code := 2
	var st stream
	st.add("r1", t0, events.Event{Input: &events.Input{Text: "go"}})
	st.add("r1", t0, events.Event{RunMeta: &events.RunMeta{Prog: "agent", Revision: 3, Limit: 1000}})
	st.act("r1", 1, "fs.read", "fs.read data/a.txt", t0+10, t0+15, true, nil, "3 lines")
	st.act("r1", 2, "tool.run", "tool.run wc", t0+20, t0+45, false, &code, "exit 2: no such file")
	st.act("r1", 3, "spawn", "spawn worker", t0+50, t0+51, true, nil, "")
	// The child runs while its parent waits for it.
	st.add("r1.3", t0+60, events.Event{Kind: events.KindSpanStart, SpanStart: &events.SpanStart{SpanID: "act:r1.3#1", Name: "http.get"}})
	st.add("r1.3", t0+60, events.Event{ToolCall: &events.ToolCall{CallID: "r1.3#1", Tool: "http.get", Description: "http.get https://example.com"}})
	st.add("r1.3", t0+70, events.Event{ToolResult: &events.ToolResult{CallID: "r1.3#1", Tool: "http.get", OK: false, Summary: "error denied: no grant"}})
	st.add("r1.3", t0+70, events.Event{SpanEnd: &events.SpanEnd{SpanID: "act:r1.3#1", Name: "http.get", StartedAt: t0 + 60, DurationMs: 10, Status: "error"}})
	st.add("r1.3", t0+70, events.Event{RunNote: &events.RunNote{Note: events.NoteRefused, Summary: "http.get denied: no grant"}})
	st.add("r1.3", t0+80, events.Event{RunNote: &events.RunNote{Note: events.NoteStopped, Summary: "failed: value: boom"}})
	st.add("r1.3", t0+80, events.Event{Outcome: &events.Outcome{OutcomeID: "out:r1.3", Status: events.OutcomeFailed}})
	st.add("r1.3", t0+90, events.Event{RunNote: &events.RunNote{Note: events.NoteDegraded, Summary: "late"}}) // after its end: ignored
	st.add("r1", t0+100, events.Event{Answer: &events.Answer{Text: "done"}})
	st.add("r1", t0+100, events.Event{Outcome: &events.Outcome{OutcomeID: "out:r1", Status: events.OutcomeCompleted}})
	// r2 is cut short: the host stops mid-act.
	st.add("r2", t0+200, events.Event{RunMeta: &events.RunMeta{Prog: "other"}})
	st.add("r2", t0+210, events.Event{SpanStart: &events.SpanStart{SpanID: "act:r2#1", Name: "model.chat"}})
	st.add("r2", t0+210, events.Event{ToolCall: &events.ToolCall{CallID: "r2#1", Tool: "model.chat", Description: "model.chat"}})
	for _, ev := range st.out {
		if err := ev.Check(); err != nil {
			t.Fatal(err)
		}
		x.Event(ev)
	}
	if err := x.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != 8 {
		t.Errorf("%d spans, want 8 (3 runs, 5 acts)", len(col.spans))
	}
	for _, name := range col.res {
		if name != "runehost" {
			t.Errorf("service.name %q", name)
		}
	}
	root := col.byName(t, "run agent")
	child := col.byName(t, "run worker")
	read := col.byName(t, "act fs.read")
	run := col.byName(t, "act tool.run")
	spawn := col.byName(t, "act spawn")
	get := col.byName(t, "act http.get")
	r2 := col.byName(t, "run other")
	chat := col.byName(t, "act model.chat")

	// Parentage and traces: a run tree shares a trace.
	if len(root.ParentSpanId) != 0 {
		t.Errorf("the root run has a parent")
	}
	for _, s := range []*tracepb.Span{read, run, spawn, child} {
		if !bytes.Equal(s.ParentSpanId, root.SpanId) {
			t.Errorf("%s: parent %x, want the run's %x", s.Name, s.ParentSpanId, root.SpanId)
		}
	}
	if !bytes.Equal(get.ParentSpanId, child.SpanId) {
		t.Errorf("the child's act hangs from %x, not the child run %x", get.ParentSpanId, child.SpanId)
	}
	for _, s := range []*tracepb.Span{child, read, run, spawn, get} {
		if !bytes.Equal(s.TraceId, root.TraceId) {
			t.Errorf("%s: trace %s, want %s", s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(root.TraceId))
		}
	}
	if bytes.Equal(r2.TraceId, root.TraceId) || !bytes.Equal(chat.TraceId, r2.TraceId) {
		t.Errorf("r2's trace: %x (its act %x), r1's %x", r2.TraceId, chat.TraceId, root.TraceId)
	}

	// Times come from the events.
	times := []struct {
		s          *tracepb.Span
		start, end int64
	}{{root, t0, t0 + 100}, {read, t0 + 10, t0 + 15}, {run, t0 + 20, t0 + 45}, {child, t0 + 60, t0 + 80}, {get, t0 + 60, t0 + 70}, {chat, t0 + 210, t0 + 210}}
	for _, w := range times {
		if w.s.StartTimeUnixNano != nanos(w.start) || w.s.EndTimeUnixNano != nanos(w.end) {
			t.Errorf("%s: %d..%d, want %d..%d", w.s.Name, w.s.StartTimeUnixNano, w.s.EndTimeUnixNano, nanos(w.start), nanos(w.end))
		}
	}

	// Statuses and attributes.
	if root.Status.GetCode() != tracepb.Status_STATUS_CODE_OK || read.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("statuses: run %v, fs.read %v", root.Status, read.Status)
	}
	if run.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || run.Status.Message != "exit 2: no such file" {
		t.Errorf("tool.run status %v", run.Status)
	}
	if child.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || child.Status.Message != "failed: value: boom" {
		t.Errorf("child status %v", child.Status)
	}
	want := map[*tracepb.Span]map[string]string{
		root:  {AttrInvocation: "r1", AttrProg: "agent", AttrOutcome: "completed"},
		child: {AttrInvocation: "r1.3", AttrParent: "r1", AttrProg: "worker", AttrOutcome: "failed"},
		read:  {AttrTool: "fs.read", AttrCallID: "r1#1", AttrDescription: "fs.read data/a.txt", AttrGrant: "fs.read:*", AttrSpanID: "act:r1#1"},
		run:   {AttrExitCode: "int_value:2", AttrOK: "bool_value:false"},
		chat:  {AttrUnended: "shutdown"},
	}
	for s, kvs := range want {
		for k, v := range kvs {
			if got, _ := attr(s, k); got != v {
				t.Errorf("%s: %s = %q, want %q", s.Name, k, got, v)
			}
		}
	}
	if _, ok := attr(r2, AttrUnended); !ok {
		t.Errorf("r2's run span is not marked unended")
	}
}

func TestNoEnvNoExport(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if Enabled() {
		t.Fatal("Enabled() with no endpoint")
	}
	x, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if x.Enabled() {
		t.Fatal("exporting with no endpoint")
	}
	var st stream
	st.add("r1", t0, events.Event{RunMeta: &events.RunMeta{Prog: "agent"}})
	st.act("r1", 1, "fs.read", "fs.read a", t0, t0+1, true, nil, "")
	for _, ev := range st.out {
		x.Event(ev)
	}
	if x.Open() != 0 || x.Dropped() != 0 {
		t.Errorf("a disabled exporter keeps spans")
	}
	if err := x.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var nilX *Exporter
	nilX.Event(st.out[0])
	if err := nilX.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestGRPCRefused(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	if _, err := New(context.Background()); err == nil {
		t.Fatal("grpc accepted")
	}
}

// keep is an in-memory exporter that keeps its spans past Shutdown.
type keep struct{ *tracetest.InMemoryExporter }

func (keep) Shutdown(context.Context) error { return nil }

// A run opening spans forever keeps at most the cap open; the rest are
// ended, marked dropped and counted.
func TestOpenSpansCapped(t *testing.T) {
	mem := keep{tracetest.NewInMemoryExporter()}
	x, err := New(context.Background(), WithSpanExporter(mem), WithMaxSpans(50))
	if err != nil {
		t.Fatal(err)
	}
	var st stream
	st.add("r1", t0, events.Event{RunMeta: &events.RunMeta{Prog: "hostile"}})
	for i := range 1000 {
		st.add("r1", t0+int64(i), events.Event{SpanStart: &events.SpanStart{SpanID: "s" + string(rune('a'+i%26)) + itoa(i%10) + hex.EncodeToString([]byte{byte(i >> 8), byte(i)}), Name: "loop"}})
	}
	for _, ev := range st.out {
		x.Event(ev)
	}
	if n := x.Open(); n > 50 {
		t.Errorf("%d spans open, cap 50", n)
	}
	if d := x.Dropped(); d < 950 {
		t.Errorf("dropped %d, want at least 950", d)
	}
	// The run keeps its span: a late act still exports under it.
	var more stream
	more.seq = map[string]uint64{"r1": st.seq["r1"]}
	more.act("r1", 1, "fs.read", "fs.read a", t0+2000, t0+2001, true, nil, "")
	more.add("r1", t0+2002, events.Event{Outcome: &events.Outcome{Status: events.OutcomeCompleted}})
	for _, ev := range more.out {
		x.Event(ev)
	}
	if x.Open() != 0 {
		t.Errorf("%d spans open after the run ended", x.Open())
	}
	if err := x.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, s := range mem.GetSpans() {
		for _, kv := range s.Attributes {
			if string(kv.Key) == AttrUnended && kv.Value.AsString() == "dropped" {
				dropped++
			}
		}
	}
	if dropped < 950 {
		t.Errorf("%d spans marked dropped", dropped)
	}
}
