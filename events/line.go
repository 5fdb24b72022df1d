// line.go holds the one-line form of an event, for terminals: a glyph, the
// seq and a summary, coloured only when asked (on a terminal).

package events

import (
	"fmt"
	"strings"
)

// Glyphs of the kinds.
var glyphs = map[string]string{
	KindInput: "▶", KindRunMeta: "ℹ", KindToolCall: "→", KindRunNote: "•", KindEmit: "◆",
	KindAnswer: "★", KindSpanStart: "⌜", KindSpanEnd: "⌟", KindMemoryQuery: "≡", KindObservation: "○",
	KindVerification: "✔", KindOutcome: "■", KindAssistant: "✎",
}

// Glyph is an event's glyph: a tool result's says whether it succeeded.
func Glyph(e *Event) string {
	switch {
	case e.ToolResult != nil && !e.ToolResult.OK, e.Verification != nil && !e.Verification.Passed:
		return "✗"
	case e.ToolResult != nil:
		return "✓"
	case e.RunNote != nil && e.RunNote.Note == NoteRefused:
		return "⊘"
	}
	return glyphs[e.Kind]
}

// Text is an event's one-line summary.
func Text(e *Event) string {
	switch e.Kind {
	case KindInput:
		return "input " + oneLine(e.Input.Text)
	case KindRunMeta:
		m := e.RunMeta
		s := fmt.Sprintf("%s rev %d, %d steps", m.Prog, m.Revision, m.Limit)
		if m.Parent != "" {
			s += ", child of " + m.Parent
		}
		return s
	case KindToolCall:
		return e.ToolCall.Description
	case KindToolResult:
		r := e.ToolResult
		return r.Tool + ": " + r.Summary
	case KindRunNote:
		return e.RunNote.Note + ": " + e.RunNote.Summary
	case KindEmit:
		return strings.TrimSpace(e.Emit.Name + " " + oneLine(e.Emit.Data))
	case KindAnswer:
		return "answer " + oneLine(e.Answer.Text)
	case KindAssistant:
		return "model " + oneLine(e.Assistant.Text)
	case KindSpanStart:
		return "span " + e.SpanStart.Name
	case KindSpanEnd:
		return fmt.Sprintf("span %s %s in %d ms", e.SpanEnd.Name, e.SpanEnd.Status, e.SpanEnd.DurationMs)
	case KindMemoryQuery:
		q := e.MemoryQuery
		return fmt.Sprintf("%s: %d blocks admitted (%d tokens), %d dropped", q.QueryID, len(q.Admitted), q.MemoryTokens, len(q.Dropped))
	case KindObservation:
		return e.Observation.ObservationID + " " + e.Observation.Summary
	case KindVerification:
		v := e.Verification
		return fmt.Sprintf("%s %s passed=%v %s", v.VerificationID, v.Method, v.Passed, v.Evidence)
	case KindOutcome:
		o := e.Outcome
		s := o.OutcomeID + " " + o.Status
		if o.VerificationID != "" {
			s += ", verified by " + o.VerificationID
		}
		if len(o.Degraded) > 0 {
			s += ", degraded: " + strings.Join(o.Degraded, ", ")
		}
		return s
	}
	return e.Kind
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return Cap(s, SummaryCap)
}

// Quiet reports whether a terminal leaves the event out by default: spans
// are timing, and the run's objects repeat what its lines said.
func Quiet(e *Event) bool {
	switch e.Kind {
	case KindSpanStart, KindSpanEnd, KindObservation, KindMemoryQuery:
		return true
	}
	return false
}

// Line is an event as a terminal line: glyph, seq, summary. With color, the
// glyph is coloured by how it went.
func Line(e *Event, color bool) string {
	g := Glyph(e)
	if color {
		code := "36" // cyan
		switch g {
		case "✓", "★", "✔":
			code = "32"
		case "✗", "⊘":
			code = "31"
		case "•":
			code = "33"
		}
		g = "\x1b[" + code + "m" + g + "\x1b[0m"
	}
	return fmt.Sprintf("%s %4d %s", g, e.Seq, Text(e))
}

// Section is one section of the work pane.
type Section struct {
	Title string
	Lines []string
}

// WorkPane gathers a run's objects into the sections of the work pane,
// newest first: Outcomes, Verification, Observations, Memory queries, Tool
// calls; each line a glyph, the object's stable id and one-line summary.
func WorkPane(evs []Event) []Section {
	secs := []Section{{Title: "Outcomes"}, {Title: "Verification"}, {Title: "Observations"}, {Title: "Memory queries"}, {Title: "Tool calls"}}
	for i := len(evs) - 1; i >= 0; i-- {
		e := &evs[i]
		var k int
		var line string
		switch {
		case e.Outcome != nil:
			k, line = 0, Text(e)
		case e.Verification != nil:
			k, line = 1, Text(e)
		case e.Observation != nil:
			o := e.Observation
			k, line = 2, o.ObservationID+" "+o.Kind+": "+o.Summary
		case e.MemoryQuery != nil:
			k, line = 3, Text(e)
		case e.ToolCall != nil:
			k, line = 4, e.ToolCall.CallID+" "+e.ToolCall.Description
		default:
			continue
		}
		secs[k].Lines = append(secs[k].Lines, Glyph(e)+" "+line)
	}
	return secs
}
