// Package otlp turns runs' event streams (events.Event) into OpenTelemetry
// spans exported over OTLP/HTTP: a span per invocation, one per span_start/
// span_end and one per act. It knows only the events, nothing of the host.
// docs/observability.md describes the mapping and its bounds.
package otlp

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/runehost/runehost/events"
)

// Attribute keys of the exported spans.
const (
	AttrInvocation  = "runehost.invocation"
	AttrProg        = "runehost.prog"
	AttrRevision    = "runehost.revision"
	AttrParent      = "runehost.parent"      // the parent invocation of a child run
	AttrResumed     = "runehost.resumed"     // the run's span began mid-run (the host restarted)
	AttrOutcome     = "runehost.outcome"     // completed, failed, superseded, cancelled
	AttrSpanID      = "runehost.span_id"     // the event stream's span id
	AttrTool        = "runehost.act.tool"    // the act's tag: fs.read, tool.run...
	AttrCallID      = "runehost.act.call_id" // r1#3
	AttrDescription = "runehost.act.description"
	AttrGrant       = "runehost.act.grant"
	AttrOK          = "runehost.act.ok"
	AttrExitCode    = "runehost.act.exit_code"
	AttrUnended     = "runehost.unended" // why the exporter ended a span itself: shutdown, dropped
)

// DefaultMaxSpans bounds the spans (runs' and their children's) kept open.
const DefaultMaxSpans = 10000

// endedRuns is how many ended runs are remembered, so that a late event of
// one (a note after its outcome) does not open a new run span.
const endedRuns = 4096

// maxSpawns bounds the progs of children a run's spawn acts named, kept
// until each child's first event names its run span.
const maxSpawns = 256

// Option configures an Exporter.
type Option func(*config)

type config struct {
	maxSpans int
	exporter sdktrace.SpanExporter
	version  string
}

// WithMaxSpans bounds the open spans kept; beyond it the oldest is ended,
// marked dropped and counted (Dropped).
func WithMaxSpans(n int) Option { return func(c *config) { c.maxSpans = n } }

// WithSpanExporter exports to exp instead of OTLP/HTTP, whatever the
// environment says (tests, or another transport).
func WithSpanExporter(exp sdktrace.SpanExporter) Option {
	return func(c *config) { c.exporter = exp }
}

// WithServiceVersion sets the resource's service.version.
func WithServiceVersion(v string) Option { return func(c *config) { c.version = v } }

// Enabled reports whether the environment asks for trace export: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none
// turns it off.
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// protocol is the OTLP protocol the environment asks for traces.
func protocol() string {
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" {
		return p
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}

// Exporter maps events to spans. Its methods are safe for concurrent use,
// and a nil or disabled Exporter does nothing.
type Exporter struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	max    int

	mu      sync.Mutex
	runs    map[string]*run
	lru     *list.List // the open spans of runs (*span), oldest first
	roots   *list.List // the runs' own spans, oldest first
	ended   map[string]bool
	endedQ  []string // ended's ids, oldest first
	dropped uint64
	closed  bool
}

// run is an invocation's open spans.
type run struct {
	id     string
	root   *span
	prog   string
	last   int64            // the newest event's At
	spans  map[string]*span // by the stream's span id; acts as "act:CALLID"
	spawns map[string]string
	failed string // the stopped note's summary, for the root's status
}

// span is one open span, or an act's result waiting for its span_end.
type span struct {
	r       *run
	key     string
	s       trace.Span // nil: a result seen before its span (pending)
	ctx     context.Context
	byCall  bool // opened by a tool_call, not a span_start: its result ends it
	pending []attribute.KeyValue
	failMsg string
	failed  bool
	el      *list.Element
}

// New returns an Exporter. Unless the environment asks for export
// (Enabled) or WithSpanExporter is given, it is a disabled Exporter that
// does nothing. OTLP/HTTP with protobuf is the only protocol: it is
// configured by otlptracehttp from the standard OTEL_EXPORTER_OTLP_* variables.
func New(ctx context.Context, opts ...Option) (*Exporter, error) {
	c := config{maxSpans: DefaultMaxSpans}
	for _, o := range opts {
		o(&c)
	}
	if c.maxSpans < 1 {
		c.maxSpans = 1
	}
	if c.exporter == nil {
		if !Enabled() {
			return &Exporter{}, nil
		}
		if p := protocol(); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("otlp: protocol %q: only http/protobuf is supported", p)
		}
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otlp: %w", err)
		}
		c.exporter = exp
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "runehost")}
	if c.version != "" {
		attrs = append(attrs, attribute.String("service.version", c.version))
	}
	// The service name is ours unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES say otherwise (FromEnv is merged last).
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Environment())
	if err != nil {
		res = resource.NewSchemaless(attrs...)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(c.exporter),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &Exporter{
		tp: tp, tracer: tp.Tracer("github.com/runehost/runehost/events/otlp"), max: c.maxSpans,
		runs: map[string]*run{}, lru: list.New(), roots: list.New(), ended: map[string]bool{},
	}, nil
}

// Enabled reports whether this Exporter exports.
func (x *Exporter) Enabled() bool { return x != nil && x.tp != nil }

// Dropped is how many open spans were ended early by the cap.
func (x *Exporter) Dropped() uint64 {
	if !x.Enabled() {
		return 0
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.dropped
}

// Open is how many spans are open now (runs' and their children's).
func (x *Exporter) Open() int {
	if !x.Enabled() {
		return 0
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lru.Len() + x.roots.Len()
}

// Shutdown ends every span still open (marked unended=shutdown, at its
// run's newest event), flushes what is batched and stops the exporter.
func (x *Exporter) Shutdown(ctx context.Context) error {
	if !x.Enabled() {
		return nil
	}
	x.mu.Lock()
	if !x.closed {
		x.closed = true
		for _, l := range []*list.List{x.lru, x.roots} {
			for el := l.Front(); el != nil; el = el.Next() {
				sp := el.Value.(*span)
				if sp.s != nil {
					sp.s.SetAttributes(attribute.String(AttrUnended, "shutdown"))
					sp.s.End(trace.WithTimestamp(ms(sp.r.last)))
				}
			}
			l.Init()
		}
		x.runs = map[string]*run{}
	}
	x.mu.Unlock()
	return errors.Join(x.tp.ForceFlush(ctx), x.tp.Shutdown(ctx))
}

func ms(at int64) time.Time { return time.UnixMilli(at) }

// Event maps one stored event of a run. Events of a run come in its seq order.
func (x *Exporter) Event(ev events.Event) {
	if !x.Enabled() || ev.Run == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed || x.ended[ev.Run] {
		return
	}
	r := x.runs[ev.Run]
	if r == nil {
		if ev.Kind == events.KindOutcome || ev.Kind == events.KindVerification {
			return // the end of a run begun before this process: nothing to show
		}
		r = x.open(ev)
	}
	if ev.At > r.last {
		r.last = ev.At
	}
	switch {
	case ev.RunMeta != nil:
		m := ev.RunMeta
		r.prog = m.Prog
		r.root.s.SetName("run " + m.Prog)
		r.root.s.SetAttributes(attribute.String(AttrProg, m.Prog), attribute.Int64(AttrRevision, int64(m.Revision)))
	case ev.SpanStart != nil:
		x.spanStart(r, ev)
	case ev.SpanEnd != nil:
		x.spanEnd(r, ev)
	case ev.ToolCall != nil:
		x.toolCall(r, ev)
	case ev.ToolResult != nil:
		x.toolResult(r, ev)
	case ev.RunNote != nil && ev.RunNote.Note == events.NoteStopped:
		r.failed = ev.RunNote.Summary
	case ev.Outcome != nil:
		x.finish(r, ev)
	}
}

// open starts the span of a run first seen at ev, under its parent run's
// span when that is open (a child's id is PARENT.N).
func (x *Exporter) open(ev events.Event) *run {
	r := &run{id: ev.Run, spans: map[string]*span{}, last: ev.At}
	parent := ""
	if ev.RunMeta != nil {
		parent = ev.RunMeta.Parent
	}
	if i := strings.LastIndexByte(ev.Run, '.'); parent == "" && i > 0 {
		parent = ev.Run[:i]
	}
	ctx := context.Background()
	attrs := []attribute.KeyValue{attribute.String(AttrInvocation, ev.Run)}
	if parent != "" {
		attrs = append(attrs, attribute.String(AttrParent, parent))
		if p := x.runs[parent]; p != nil {
			ctx = p.root.ctx
			r.prog = p.prog
			if prog, ok := p.spawns[ev.Run]; ok {
				r.prog = prog
				delete(p.spawns, ev.Run)
			}
		}
	}
	if ev.RunMeta == nil {
		attrs = append(attrs, attribute.Bool(AttrResumed, parent == "" || ctx == context.Background()))
	}
	name := "run"
	if r.prog != "" {
		name = "run " + r.prog
		attrs = append(attrs, attribute.String(AttrProg, r.prog))
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(ms(ev.At)), trace.WithAttributes(attrs...)}
	if ctx == context.Background() {
		opts = append(opts, trace.WithNewRoot())
	}
	sctx, s := x.tracer.Start(ctx, name, opts...)
	r.root = &span{r: r, s: s, ctx: sctx}
	x.keep(r.root)
	x.runs[ev.Run] = r
	return r
}

// keep counts a span against the cap. Beyond it the oldest act or span is
// ended and forgotten, and only when there is none the oldest run: a run
// opening spans forever loses its old spans, not its own.
func (x *Exporter) keep(sp *span) {
	if sp == sp.r.root {
		sp.el = x.roots.PushBack(sp)
	} else {
		sp.el = x.lru.PushBack(sp)
	}
	for x.lru.Len()+x.roots.Len() > x.max {
		l := x.lru
		if l.Len() == 0 {
			l = x.roots
		}
		old := l.Front().Value.(*span)
		x.dropped++
		if old.s != nil {
			old.s.SetAttributes(attribute.String(AttrUnended, "dropped"))
			old.s.End(trace.WithTimestamp(ms(old.r.last)))
		}
		x.forget(old)
		if old == old.r.root {
			x.drop(old.r)
		}
	}
}

// forget removes a span from its run and from the cap's order.
func (x *Exporter) forget(sp *span) {
	if sp.el != nil {
		if sp == sp.r.root {
			x.roots.Remove(sp.el)
		} else {
			x.lru.Remove(sp.el)
		}
		sp.el = nil
	}
	if sp.key != "" && sp.r.spans[sp.key] == sp {
		delete(sp.r.spans, sp.key)
	}
}

// drop forgets a run whose span was ended by the cap: its open children are
// ended with it.
func (x *Exporter) drop(r *run) {
	for _, sp := range r.spans {
		if sp.s != nil {
			sp.s.SetAttributes(attribute.String(AttrUnended, "dropped"))
			sp.s.End(trace.WithTimestamp(ms(r.last)))
		}
		x.forget(sp)
	}
	delete(x.runs, r.id)
}

// parentCtx is the context of the span a child span hangs from: the open
// span named by parent, else the run's.
func (r *run) parentCtx(parent string) context.Context {
	if sp := r.spans[parent]; parent != "" && sp != nil && sp.s != nil {
		return sp.ctx
	}
	return r.root.ctx
}

// start opens a child span of r under key.
func (x *Exporter) start(r *run, key, parent, name string, at int64, attrs ...attribute.KeyValue) *span {
	if old := r.spans[key]; old != nil {
		// A span id used twice: the first is ended where the second begins.
		if old.s != nil {
			old.s.End(trace.WithTimestamp(ms(at)))
		}
		x.forget(old)
	}
	ctx, s := x.tracer.Start(r.parentCtx(parent), name, trace.WithTimestamp(ms(at)), trace.WithAttributes(attrs...))
	sp := &span{r: r, key: key, s: s, ctx: ctx}
	r.spans[key] = sp
	x.keep(sp)
	return sp
}

// spanName names a stream span: an act's (the host names it act:CALLID) as
// "act TOOL", others by their own name.
func spanName(id, name string) string {
	if strings.HasPrefix(id, "act:") {
		return "act " + name
	}
	return name
}

func (x *Exporter) spanStart(r *run, ev events.Event) {
	s := ev.SpanStart
	x.start(r, s.SpanID, s.Parent, spanName(s.SpanID, s.Name), ev.At, attribute.String(AttrSpanID, s.SpanID))
}

func (x *Exporter) spanEnd(r *run, ev events.Event) {
	e := ev.SpanEnd
	start := e.StartedAt
	if start == 0 {
		start = ev.At
	}
	sp := r.spans[e.SpanID]
	if sp == nil || sp.s == nil {
		// Its start was before this process (or dropped): the span_end
		// says when it began.
		pending := sp
		sp = x.start(r, e.SpanID, e.Parent, spanName(e.SpanID, e.Name), start, attribute.String(AttrSpanID, e.SpanID))
		if pending != nil {
			sp.s.SetAttributes(pending.pending...)
			sp.failed, sp.failMsg = pending.failed, pending.failMsg
		}
	}
	switch {
	case e.Status == "error":
		msg := e.Error
		if msg == "" {
			msg = sp.failMsg
		}
		sp.s.SetStatus(codes.Error, msg)
	case sp.failed:
		sp.s.SetStatus(codes.Error, sp.failMsg)
	}
	sp.s.End(trace.WithTimestamp(ms(start + max(e.DurationMs, 0))))
	x.forget(sp)
}

func actKey(callID string) string { return "act:" + callID }

func (x *Exporter) toolCall(r *run, ev events.Event) {
	c := ev.ToolCall
	attrs := []attribute.KeyValue{
		attribute.String(AttrTool, c.Tool), attribute.String(AttrCallID, c.CallID),
		attribute.String(AttrDescription, c.Description),
	}
	if c.Grant != "" {
		attrs = append(attrs, attribute.String(AttrGrant, c.Grant))
	}
	if c.Tool == "spawn" && len(r.spawns) < maxSpawns {
		// The child is RUN.N for call RUN#N; its prog is the one named, or ours.
		if _, n, ok := strings.Cut(c.CallID, "#"); ok {
			prog := strings.TrimSpace(strings.TrimPrefix(c.Description, c.Tool))
			if prog == "" {
				prog = r.prog
			}
			if r.spawns == nil {
				r.spawns = map[string]string{}
			}
			r.spawns[r.id+"."+n] = prog
		}
	}
	if sp := r.spans[actKey(c.CallID)]; sp != nil && sp.s != nil {
		sp.s.SetName("act " + c.Tool)
		sp.s.SetAttributes(attrs...)
		return
	}
	sp := x.start(r, actKey(c.CallID), "", "act "+c.Tool, ev.At, attrs...)
	sp.byCall = true
}

func (x *Exporter) toolResult(r *run, ev events.Event) {
	res := ev.ToolResult
	attrs := []attribute.KeyValue{attribute.Bool(AttrOK, res.OK)}
	if res.ExitCode != nil {
		attrs = append(attrs, attribute.Int(AttrExitCode, *res.ExitCode))
	}
	key := actKey(res.CallID)
	sp := r.spans[key]
	if sp == nil {
		// Its call was before this process: kept for the span_end that
		// follows it, which says when the act began.
		sp = &span{r: r, key: key}
		r.spans[key] = sp
		x.keep(sp)
	}
	if sp.s == nil {
		sp.pending = append(sp.pending, attrs...)
		sp.failed, sp.failMsg = !res.OK, res.Summary
		return
	}
	sp.s.SetAttributes(attrs...)
	if !res.OK {
		sp.failed, sp.failMsg = true, res.Summary
		sp.s.SetStatus(codes.Error, res.Summary)
	}
	if sp.byCall {
		sp.s.End(trace.WithTimestamp(ms(ev.At)))
		x.forget(sp)
	}
}

// finish ends a run's span at its outcome and forgets the run.
func (x *Exporter) finish(r *run, ev events.Event) {
	o := ev.Outcome
	root := r.root.s
	root.SetAttributes(attribute.String(AttrOutcome, o.Status))
	switch o.Status {
	case events.OutcomeCompleted, events.OutcomeSuperseded:
		root.SetStatus(codes.Ok, "")
	default:
		msg := r.failed
		if msg == "" {
			msg = o.Status
		}
		root.SetStatus(codes.Error, msg)
	}
	for _, sp := range r.spans {
		if sp.s != nil {
			sp.s.SetAttributes(attribute.String(AttrUnended, "run ended"))
			sp.s.End(trace.WithTimestamp(ms(ev.At)))
		}
		x.forget(sp)
	}
	root.End(trace.WithTimestamp(ms(ev.At)))
	x.forget(r.root)
	delete(x.runs, r.id)
	x.ended[r.id] = true
	x.endedQ = append(x.endedQ, r.id)
	if len(x.endedQ) > endedRuns {
		delete(x.ended, x.endedQ[0])
		x.endedQ = x.endedQ[1:]
	}
}
