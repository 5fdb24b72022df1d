// events_test.go: the JSON form round-trips every kind; Check refuses
// malformed events; text is stripped, redacted, then capped; summaries and
// the exit prefix follow their contracts; the backlog says when it dropped.

package events

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/runehost/runehost/events/redact"
)

func intp(n int) *int { return &n }

func samples() []Event {
	at := int64(1_764_000_000_123)
	ev := func(seq uint64, kind string) Event { return Event{Seq: seq, At: at, Run: "r1", Kind: kind} }
	var out []Event
	e := ev(1, KindInput)
	e.Input = &Input{Text: `{"task":"x"}`}
	out = append(out, e)
	e = ev(2, KindRunMeta)
	e.RunMeta = &RunMeta{Prog: "agent", Revision: 3, Limit: 1000, Program: "ab12"}
	out = append(out, e)
	e = ev(3, KindToolCall)
	e.ToolCall = &ToolCall{CallID: "r1#1", Tool: "fs.read", Description: "fs.read data/a.txt", Grant: "fs.read:/d"}
	out = append(out, e)
	e = ev(4, KindToolResult)
	e.ToolResult = &ToolResult{CallID: "r1#1", Tool: "tool.run", OK: false, Summary: "exit 2: boom", Output: "exit 2: boom", ExitCode: intp(2)}
	out = append(out, e)
	e = ev(5, KindRunNote)
	e.RunNote = &RunNote{Note: NoteRefused, Summary: "fs.write denied"}
	out = append(out, e)
	e = ev(6, KindEmit)
	e.Emit = &Emit{Name: "checklist", Data: `[{"item":"a","state":"done"}]`}
	out = append(out, e)
	e = ev(7, KindAnswer)
	e.Answer = &Answer{Text: "42"}
	out = append(out, e)
	e = ev(8, KindSpanStart)
	e.SpanStart = &SpanStart{SpanID: "act:r1#1", Name: "fs.read"}
	out = append(out, e)
	e = ev(9, KindSpanEnd)
	e.SpanEnd = &SpanEnd{SpanID: "act:r1#1", Name: "fs.read", StartedAt: at - 5, DurationMs: 5, Status: "ok"}
	out = append(out, e)
	e = ev(10, KindMemoryQuery)
	e.MemoryQuery = &MemoryQuery{QueryID: "mq:r1#2", Admitted: []Block{{"system", 12}, {"user", 40}}, Dropped: []Block{{"user", 900}}, MemoryTokens: 52}
	out = append(out, e)
	e = ev(11, KindObservation)
	e.Observation = &Observation{ObservationID: "obs:r1#1", Kind: ObsToolResult, Summary: "read 5 bytes", Detail: "alpha"}
	out = append(out, e)
	e = ev(12, KindVerification)
	e.Verification = &VerificationResult{VerificationID: "ver:r1", Method: MethodExitCode, Passed: true, Evidence: "wc r1#3 exited 0"}
	out = append(out, e)
	e = ev(13, KindOutcome)
	e.Outcome = &Outcome{OutcomeID: "out:r1", Status: OutcomeCompleted, VerificationID: "ver:r1"}
	out = append(out, e)
	e = ev(14, KindAssistant)
	e.Assistant = &Assistant{CallID: "r1#2", Text: "Let me count "}
	out = append(out, e)
	return out
}

func TestJSONRoundTrip(t *testing.T) {
	for _, e := range samples() {
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"type":"`+e.Kind+`"`) || !strings.Contains(string(b), `"at":"2025-`) {
			t.Errorf("%s: %s", e.Kind, b)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("round trip of %s:\n%+v\n%+v", b, e, back)
		}
	}
}

func TestCheck(t *testing.T) {
	e := samples()[0]
	e.Answer = &Answer{Text: "two bodies"}
	if e.Check() == nil {
		t.Error("two bodies accepted")
	}
	e = samples()[1]
	e.Kind = "telepathy"
	if e.Check() == nil {
		t.Error("unknown kind accepted")
	}
	e = samples()[2]
	e.ToolCall = nil
	if e.Check() == nil {
		t.Error("no body accepted")
	}
}

func TestCleanRedactsBeforeCapping(t *testing.T) {
	secret := "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	for cut := 1; cut < 60; cut++ {
		text := strings.Repeat("x", 20) + " token " + secret + " tail"
		got := Clean(nil, text, 20+cut)
		if strings.Contains(got, "ghp_16C7") || strings.Contains(got, secret[:6]) {
			t.Fatalf("cap %d leaked a fragment: %q", 20+cut, got)
		}
	}
	if got := StripControl("a\x1b[31mred\x1b[0m\x00\x07b\r\n\tc"); got != "aredb\n\tc" {
		t.Errorf("strip: %q", got)
	}
	if got := Cap("héllo wörld", 5); got != "héllo…[6 more chars]" {
		t.Errorf("cap: %q", got)
	}
}

func TestSummary(t *testing.T) {
	if got := Summary(nil, "\n\n  first line  \nsecond\nthird\n"); got != "first line (+2 lines, 30 bytes)" {
		t.Errorf("got %q", got)
	}
	if got := Summary(nil, "only\n"); got != "only" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("y", 500)
	if got := Summary(nil, long); got != strings.Repeat("y", 200)+"…[300 more chars]" {
		t.Errorf("got %q", got)
	}
	if got := Summary(redact.New("sentinel-123456"), "key is sentinel-123456\n"); strings.Contains(got, "sentinel") {
		t.Errorf("got %q", got)
	}
}

// Each kind has its terminal line; a model's streamed text is one line.
func TestLines(t *testing.T) {
	for _, e := range samples() {
		if l := Line(&e, false); Glyph(&e) == "" || strings.HasSuffix(l, " "+e.Kind) || strings.Contains(l, "\n") {
			t.Errorf("%s: line %q", e.Kind, l)
		}
	}
	e := Event{Seq: 3, Kind: KindAssistant, Assistant: &Assistant{Text: "Let me\ncount "}}
	if got := Line(&e, false); got != "✎    3 model Let me count" {
		t.Errorf("got %q", got)
	}
}

func TestParseExitPrefix(t *testing.T) {
	for text, want := range map[string][3]any{
		"exit 2: no such file":          {2, true, true},
		"exit 0: fine":                  {0, true, false},
		"exit ENOENT: gone":             {0, false, true},
		"all good, then exit 1: quoted": {0, true, false},
		"":                              {0, true, false},
	} {
		code, has, failed := ParseExitPrefix(text)
		if code != want[0] || has != want[1] || failed != want[2] {
			t.Errorf("%q: %d %v %v", text, code, has, failed)
		}
	}
}

func TestBacklog(t *testing.T) {
	b := &Backlog{Max: 8}
	for i := uint64(1); i <= 8; i++ {
		b.Add(Event{Seq: i})
	}
	if evs, tr := b.Since(3); len(evs) != 5 || tr || b.Truncated() {
		t.Fatalf("full: %d %v", len(evs), tr)
	}
	b.Add(Event{Seq: 9}) // drops 1 and 2
	if evs, tr := b.Since(0); len(evs) != 7 || !tr || evs[0].Seq != 3 {
		t.Fatalf("after a drop: %d %v", len(evs), tr)
	}
	if _, tr := b.Since(2); tr {
		t.Fatal("nothing after 2 was dropped")
	}
}

// The rules of the runtime objects, one test each.
func TestVerifyOnlyFromEvidence(t *testing.T) {
	if v := Verify("r1", true, []ToolResult{{Tool: "fs.read", OK: true}}, nil); v != nil {
		t.Fatalf("no tool exit code, yet a verification: %+v", v)
	}
}

func TestVerifyExitCode(t *testing.T) {
	v := Verify("r1", true, []ToolResult{{Tool: "wc", CallID: "r1#2", OK: true, ExitCode: intp(0)}}, nil)
	if v == nil || v.Method != MethodExitCode || !v.Passed || v.VerificationID != "ver:r1" {
		t.Fatalf("%+v", v)
	}
}

func TestVerifyTestMethod(t *testing.T) {
	isTest := func(r ToolResult) bool { return r.Tool == "gotest" }
	v := Verify("r1", true, []ToolResult{{Tool: "wc", OK: true, ExitCode: intp(0)}, {Tool: "gotest", OK: true, ExitCode: intp(0)}}, isTest)
	if v == nil || v.Method != MethodTest {
		t.Fatalf("%+v", v)
	}
}

func TestVerifyFailedActFails(t *testing.T) {
	v := Verify("r1", true, []ToolResult{{Tool: "wc", OK: true, ExitCode: intp(0)}, {Tool: "grep", OK: false, ExitCode: intp(1)}}, nil)
	if v == nil || v.Passed {
		t.Fatalf("%+v", v)
	}
	if v := Verify("r1", false, []ToolResult{{Tool: "wc", OK: true, ExitCode: intp(0)}}, nil); v.Passed {
		t.Fatal("a failed run passed")
	}
}

func TestOutcomeLink(t *testing.T) {
	passed := &VerificationResult{VerificationID: "ver:r1", Passed: true}
	if o := Conclude("r1", OutcomeCompleted, passed, nil); o.VerificationID != "ver:r1" {
		t.Fatal("completed and verified: no link")
	}
	if o := Conclude("r1", OutcomeFailed, passed, nil); o.VerificationID != "" {
		t.Fatal("failed, yet linked")
	}
	if o := Conclude("r1", OutcomeCompleted, &VerificationResult{VerificationID: "ver:r1"}, nil); o.VerificationID != "" {
		t.Fatal("not passed, yet linked")
	}
	if o := Conclude("r1", OutcomeCompleted, nil, []string{"runtime_objects"}); o.VerificationID != "" || len(o.Degraded) != 1 {
		t.Fatalf("%+v", o)
	}
}
