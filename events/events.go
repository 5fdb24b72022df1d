// Package events holds the typed run-event stream: what a run says while it
// works, one event at a time, each with a per-run seq and a time, every free
// text stripped, redacted and capped before it is made (text.go). The same
// stream is printed on a terminal, kept with the run in the store, and read
// by live status cards and pages. docs/events.md describes every kind.
package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kinds of events.
const (
	KindInput        = "input"        // the run's input, as received
	KindRunMeta      = "run_meta"     // what the run is: prog, revision, invocation
	KindToolCall     = "tool_call"    // an act attempted
	KindToolResult   = "tool_result"  // its outcome
	KindRunNote      = "run_note"     // the host's notices: refusals, budget, stops, degraded subsystems
	KindEmit         = "emit"         // what the prog emitted (its checklist, its progress)
	KindAnswer       = "answer"       // the run's result
	KindSpanStart    = "span_start"   // timing, never content
	KindSpanEnd      = "span_end"     //
	KindMemoryQuery  = "memory_query" // runtime objects (docs/events.md)
	KindObservation  = "observation"  //
	KindVerification = "verification" //
	KindOutcome      = "outcome"      //
	KindAssistant    = "assistant"    // a model's reply text as it streams, before its act's result
)

// Notes: the kinds of run_note.
const (
	NoteRefused   = "refused"   // an act was denied, or refused by a cap
	NoteBudget    = "budget"    // a cap is near
	NoteWaiting   = "waiting"   // the run waits: for an event, an act of unknown outcome, its children
	NoteSleeping  = "sleeping"  // the run sleeps at a timer: "until" its deadline (RFC 3339); nothing to answer
	NoteStopped   = "stopped"   // the run ended without a result: failed or cancelled
	NotePaused    = "paused"    // the host cannot run it; an operator can
	NoteMigrated  = "migrated"  // an operator replaced its checkpoint
	NoteDegraded  = "degraded"  // a subsystem failed; the run went on
	NoteRequested = "requested" // a person was asked (an approval)
)

// Event is one run event: the envelope and exactly one body, the one its
// Kind names. It is a sum type: Check says whether it is well formed.
type Event struct {
	Seq  uint64 `cbor:"1,keyasint"`
	At   int64  `cbor:"2,keyasint"` // unix ms
	Kind string `cbor:"3,keyasint"`
	Run  string `cbor:"4,keyasint"` // the invocation

	Input        *Input              `cbor:"10,keyasint,omitempty"`
	RunMeta      *RunMeta            `cbor:"11,keyasint,omitempty"`
	ToolCall     *ToolCall           `cbor:"12,keyasint,omitempty"`
	ToolResult   *ToolResult         `cbor:"13,keyasint,omitempty"`
	RunNote      *RunNote            `cbor:"14,keyasint,omitempty"`
	Emit         *Emit               `cbor:"15,keyasint,omitempty"`
	Answer       *Answer             `cbor:"16,keyasint,omitempty"`
	SpanStart    *SpanStart          `cbor:"17,keyasint,omitempty"`
	SpanEnd      *SpanEnd            `cbor:"18,keyasint,omitempty"`
	MemoryQuery  *MemoryQuery        `cbor:"19,keyasint,omitempty"`
	Observation  *Observation        `cbor:"20,keyasint,omitempty"`
	Verification *VerificationResult `cbor:"21,keyasint,omitempty"`
	Outcome      *Outcome            `cbor:"22,keyasint,omitempty"`
	Assistant    *Assistant          `cbor:"23,keyasint,omitempty"`
}

// Input is the run's input, as received: redacted, never capped.
type Input struct {
	Text string `cbor:"1,keyasint" json:"text"`
}

// RunMeta says what the run is.
type RunMeta struct {
	Prog     string `cbor:"1,keyasint" json:"prog"`
	Revision uint64 `cbor:"2,keyasint" json:"revision"`
	Parent   string `cbor:"3,keyasint,omitempty" json:"parent,omitempty"`
	Limit    uint64 `cbor:"4,keyasint" json:"limit"`
	Program  string `cbor:"5,keyasint,omitempty" json:"program,omitempty"` // source hash
}

// ToolCall is an act attempted. CallID pairs it with its result.
type ToolCall struct {
	CallID      string `cbor:"1,keyasint" json:"callId"`
	Tool        string `cbor:"2,keyasint" json:"tool"`
	Description string `cbor:"3,keyasint" json:"description"` // one line naming the target
	Grant       string `cbor:"4,keyasint,omitempty" json:"grant,omitempty"`
}

// ToolResult is an act's outcome. OK is false when the act raised an error
// or its tool exited non-zero.
type ToolResult struct {
	CallID   string `cbor:"1,keyasint" json:"callId"`
	Tool     string `cbor:"2,keyasint" json:"tool"`
	OK       bool   `cbor:"3,keyasint" json:"ok"`
	Summary  string `cbor:"4,keyasint" json:"summary"`          // one line, SummaryCap
	Output   string `cbor:"5,keyasint,omitempty" json:"output"` // OutputCap
	ExitCode *int   `cbor:"6,keyasint,omitempty" json:"exitCode,omitempty"`
}

// Assistant is text a model produced for an act still running: the text
// since the previous one, coalesced to a few events a second. The act's
// result holds the whole reply; these are a view of it as it came.
type Assistant struct {
	CallID string `cbor:"1,keyasint" json:"callId"`
	Text   string `cbor:"2,keyasint" json:"text"` // redacted, AssistantCap
}

// RunNote is one of the host's notices.
type RunNote struct {
	Note    string `cbor:"1,keyasint" json:"note"`
	Summary string `cbor:"2,keyasint" json:"summary"`
}

// Emit is what the prog emitted.
type Emit struct {
	Name string `cbor:"1,keyasint" json:"name"`
	Data string `cbor:"2,keyasint,omitempty" json:"data,omitempty"` // JSON, redacted
}

// Answer is the run's result: redacted, never capped.
type Answer struct {
	Text string `cbor:"1,keyasint" json:"text"`
}

// SpanStart opens a span of time.
type SpanStart struct {
	SpanID string `cbor:"1,keyasint" json:"spanId"`
	Parent string `cbor:"2,keyasint,omitempty" json:"parentSpanId,omitempty"`
	Name   string `cbor:"3,keyasint" json:"name"`
}

// SpanEnd closes one.
type SpanEnd struct {
	SpanID     string `cbor:"1,keyasint" json:"spanId"`
	Parent     string `cbor:"2,keyasint,omitempty" json:"parentSpanId,omitempty"`
	Name       string `cbor:"3,keyasint" json:"name"`
	StartedAt  int64  `cbor:"4,keyasint" json:"startedAt"`
	DurationMs int64  `cbor:"5,keyasint" json:"durationMs"`
	Status     string `cbor:"6,keyasint" json:"status"` // ok or error
	Error      string `cbor:"7,keyasint,omitempty" json:"error,omitempty"`
}

// check reports what is wrong with an event, or "".
func (e *Event) check() string {
	bodies := map[string]bool{
		KindInput: e.Input != nil, KindRunMeta: e.RunMeta != nil, KindToolCall: e.ToolCall != nil,
		KindToolResult: e.ToolResult != nil, KindRunNote: e.RunNote != nil, KindEmit: e.Emit != nil,
		KindAnswer: e.Answer != nil, KindSpanStart: e.SpanStart != nil, KindSpanEnd: e.SpanEnd != nil,
		KindMemoryQuery: e.MemoryQuery != nil, KindObservation: e.Observation != nil,
		KindVerification: e.Verification != nil, KindOutcome: e.Outcome != nil,
		KindAssistant: e.Assistant != nil,
	}
	set, ok := bodies[e.Kind]
	if !ok {
		return fmt.Sprintf("unknown kind %q", e.Kind)
	}
	if !set {
		return "no " + e.Kind + " body"
	}
	n := 0
	for _, b := range bodies {
		if b {
			n++
		}
	}
	if n != 1 {
		return fmt.Sprintf("%d bodies", n)
	}
	if e.Run == "" || e.Seq == 0 {
		return "no run or seq"
	}
	return ""
}

// Check reports whether an event is well formed: a known kind with exactly
// its own body, a run and a seq. Events read back from the store are
// checked before they are shown.
func (e *Event) Check() error {
	if msg := e.check(); msg != "" {
		return fmt.Errorf("event %s#%d: %s", e.Run, e.Seq, msg)
	}
	return nil
}

// Content reports whether the event says something about the work, as
// opposed to the run's own bookkeeping (notes, spans, the final objects).
// Content published after a run finished is dropped.
func (e *Event) Content() bool {
	switch e.Kind {
	case KindRunNote, KindSpanStart, KindSpanEnd, KindVerification, KindOutcome:
		return false
	}
	return true
}

// body returns the body its Kind names.
func (e *Event) body() any {
	switch e.Kind {
	case KindInput:
		return e.Input
	case KindRunMeta:
		return e.RunMeta
	case KindToolCall:
		return e.ToolCall
	case KindToolResult:
		return e.ToolResult
	case KindRunNote:
		return e.RunNote
	case KindEmit:
		return e.Emit
	case KindAnswer:
		return e.Answer
	case KindSpanStart:
		return e.SpanStart
	case KindSpanEnd:
		return e.SpanEnd
	case KindMemoryQuery:
		return e.MemoryQuery
	case KindObservation:
		return e.Observation
	case KindVerification:
		return e.Verification
	case KindOutcome:
		return e.Outcome
	case KindAssistant:
		return e.Assistant
	}
	return nil
}

// MarshalJSON writes the flat JSON form: the envelope's seq, at (ISO UTC),
// run and type, then the body's fields.
func (e Event) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.body())
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(struct {
		Seq  uint64 `json:"seq"`
		At   string `json:"at"`
		Run  string `json:"run"`
		Type string `json:"type"`
	}{e.Seq, ISO(e.At), e.Run, e.Kind})
	if len(b) <= 2 {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), b[1:]...), nil
}

// UnmarshalJSON reads the flat JSON form back.
func (e *Event) UnmarshalJSON(b []byte) error {
	var head struct {
		Seq  uint64 `json:"seq"`
		At   string `json:"at"`
		Run  string `json:"run"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, head.At)
	if err != nil {
		return fmt.Errorf("event at: %w", err)
	}
	*e = Event{Seq: head.Seq, At: at.UnixMilli(), Run: head.Run, Kind: head.Type}
	var body any
	switch head.Type {
	case KindInput:
		e.Input = &Input{}
		body = e.Input
	case KindRunMeta:
		e.RunMeta = &RunMeta{}
		body = e.RunMeta
	case KindToolCall:
		e.ToolCall = &ToolCall{}
		body = e.ToolCall
	case KindToolResult:
		e.ToolResult = &ToolResult{}
		body = e.ToolResult
	case KindRunNote:
		e.RunNote = &RunNote{}
		body = e.RunNote
	case KindEmit:
		e.Emit = &Emit{}
		body = e.Emit
	case KindAnswer:
		e.Answer = &Answer{}
		body = e.Answer
	case KindSpanStart:
		e.SpanStart = &SpanStart{}
		body = e.SpanStart
	case KindSpanEnd:
		e.SpanEnd = &SpanEnd{}
		body = e.SpanEnd
	case KindMemoryQuery:
		e.MemoryQuery = &MemoryQuery{}
		body = e.MemoryQuery
	case KindObservation:
		e.Observation = &Observation{}
		body = e.Observation
	case KindVerification:
		e.Verification = &VerificationResult{}
		body = e.Verification
	case KindOutcome:
		e.Outcome = &Outcome{}
		body = e.Outcome
	case KindAssistant:
		e.Assistant = &Assistant{}
		body = e.Assistant
	default:
		return fmt.Errorf("event: unknown type %q", head.Type)
	}
	return json.Unmarshal(b, body)
}

// ISO writes unix ms as an ISO 8601 UTC time with milliseconds.
func ISO(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
