// card_test.go: the verdict is honest, the quiet suffix says what is going
// on, untrusted text stays literal, preformatted text is cut by structure.

package status

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/runehost/runehost/events"
)

func TestVerdict(t *testing.T) {
	done := []Item{{"a", "done"}, {"b", "done"}}
	for _, c := range []struct {
		card Card
		want string
	}{
		{Card{Status: "completed", Checklist: done}, "✅"},
		{Card{Status: "completed"}, "✅"},
		{Card{Status: "completed", Checklist: []Item{{"a", "done"}, {"b", "open"}}}, "⚠️"},
		{Card{Status: "completed", Checklist: done, Refused: true}, "⚠️"},
		{Card{Status: "completed", Unknown: true}, "⚠️"},
		{Card{Status: "waiting"}, "⚠️"},
		{Card{Status: "conflict"}, "⚠️"},
		{Card{Status: "failed"}, "❌"},
		{Card{Status: "cancelled"}, "❌"},
	} {
		if got := c.card.Verdict(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.card, got, c.want)
		}
	}
}

func TestQuietSuffix(t *testing.T) {
	last := t0
	if s := QuietSuffix(t0.Add(19*time.Second), last, "", time.Time{}); s != "" {
		t.Errorf("within 20 s: %q", s)
	}
	if s := QuietSuffix(t0.Add(25*time.Second), last, "", time.Time{}); s != "thinking (25s since last act)" {
		t.Errorf("no act: %q", s)
	}
	if s := QuietSuffix(t0.Add(25*time.Second), last, "tool.run wc", t0.Add(-5*time.Second)); s != "running tool.run wc (30s)" {
		t.Errorf("an act in flight: %q", s)
	}
}

func TestPaintLiteralAndCut(t *testing.T) {
	c := &Card{Run: "r1", Prog: "agent", Started: t0, Verbosity: Debug, Link: "https://runs.example.com/r1"}
	c.Apply(events.Event{At: t0.UnixMilli(), Kind: events.KindEmit, Emit: &events.Emit{Name: "checklist", Data: `[{"text":"<!channel> *bold* & co","state":"done"}]`}})
	c.Apply(events.Event{At: t0.UnixMilli(), Kind: events.KindToolCall, ToolCall: &events.ToolCall{Description: "fs.read <@U123>"}})
	c.Current = strings.Repeat("line\n", 30)
	p := Paint(c, t0.Add(3*time.Minute+4*time.Second))
	b, _ := json.Marshal(p.Blocks)
	js := string(b)
	if !strings.Contains(js, `"type":"rich_text"`) || strings.Contains(js, `"type":"section"`) || strings.Contains(js, `"type":""`) {
		t.Fatalf("blocks: %s", js)
	}
	if !strings.Contains(js, `"text":"☑ \u003c!channel\u003e *bold* \u0026 co"`) && !strings.Contains(js, `☑ <!channel> *bold* & co`) {
		t.Fatalf("checklist not literal: %s", js)
	}
	if !strings.Contains(js, "… +18 lines") || !strings.Contains(p.Text, "3m 04s") {
		t.Fatalf("cut / clock: %s / %s", js, p.Text)
	}
	c.Apply(events.Event{At: t0.UnixMilli(), Kind: events.KindToolCall, ToolCall: &events.ToolCall{Description: "<b>"}})
	if p := Paint(&Card{Prog: "a<b>&"}, t0); p.Text != "👀 a&lt;b&gt;&amp; starting" {
		t.Fatalf("fallback not escaped: %q", p.Text)
	}
	if got := Cut("héllo wörld", 1, 4); got != "héll…" {
		t.Fatalf("cut: %q", got)
	}
}

// A model's streamed text shows while its act runs, its last characters
// only, and goes when the act's result comes.
func TestCardShowsStreamedText(t *testing.T) {
	c := &Card{Run: "r1", Prog: "agent", Started: t0}
	at := t0.UnixMilli()
	c.Apply(events.Event{At: at, Kind: events.KindToolCall, ToolCall: &events.ToolCall{CallID: "r1#1", Description: "model.chat default"}})
	c.Apply(events.Event{At: at, Kind: events.KindAssistant, Assistant: &events.Assistant{CallID: "r1#1", Text: strings.Repeat("blah ", 100)}})
	c.Apply(events.Event{At: at, Kind: events.KindAssistant, Assistant: &events.Assistant{CallID: "r1#1", Text: "the <@U1> answer is"}})
	b, _ := json.Marshal(Paint(c, t0.Add(time.Second)).Blocks)
	if js := string(b); !strings.Contains(js, "✎ …") || !strings.Contains(js, `blah the \u003c@U1\u003e answer is`) || strings.Count(js, "blah") > MaxSaidChars/5+1 {
		t.Fatalf("streamed text not shown as its tail: %s", js)
	}
	c.Apply(events.Event{At: at, Kind: events.KindToolResult, ToolResult: &events.ToolResult{CallID: "r1#1", Tool: "model.chat", OK: true, Summary: "the answer is 4"}})
	if b, _ := json.Marshal(Paint(c, t0.Add(2*time.Second)).Blocks); strings.Contains(string(b), "✎") {
		t.Fatalf("streamed text still shown after the result: %s", b)
	}
}

func TestCloseFrame(t *testing.T) {
	c := &Card{Run: "r1", Prog: "agent", Started: t0}
	c.Apply(events.Event{At: t0.UnixMilli(), Kind: events.KindRunNote, RunNote: &events.RunNote{Note: events.NoteRefused, Summary: "tool.run denied"}})
	c.Ended, c.Status, c.Answer = true, "completed", "42"
	p := Paint(c, t0.Add(65*time.Second))
	if !strings.HasPrefix(p.Text, "⚠️ agent completed in 1m 05s") {
		t.Fatalf("close: %q", p.Text)
	}
}

// A 300-item checklist (and every other part at its longest, in characters
// JSON escapes) paints within Slack's limits, its earlier done items folded
// into a count; the degrade order holds: the checklist is folded before the
// activity lines go, and those go before the answer is shortened.
func TestBigCardFits(t *testing.T) {
	long := strings.Repeat("<&>", 100)
	c := &Card{Run: "r1", Prog: long, Started: t0, Verbosity: Debug, Ended: true, Status: "completed",
		Answer: strings.Repeat(long+"\n", 200), Link: "https://runs.example.com/r1", Waiting: long}
	for i := 0; i < 300; i++ {
		state := "done"
		if i >= 290 {
			state = "open"
		}
		c.Checklist = append(c.Checklist, Item{fmt.Sprintf("%d %s", i, long), state})
	}
	for i := 0; i < 20; i++ {
		c.activity(long)
	}
	for _, lim := range []Limits{DefaultLimits, DefaultLimits.Half()} {
		p := PaintWithin(c, t0.Add(time.Minute), lim)
		chars, js := p.Size()
		if !lim.Fits(p) || chars > lim.BlockChars || js > lim.BlocksJSON {
			t.Fatalf("%d chars, %d bytes of JSON, over %+v", chars, js, lim)
		}
		b, _ := json.Marshal(p.Blocks)
		if !strings.Contains(string(b), "earlier items done") || !strings.Contains(string(b), "☐ 290 ") || strings.Contains(string(b), "☑ 0 ") {
			t.Fatalf("the checklist is not folded from its start: %.300s", b)
		}
	}
	// Plain text: folding the checklist is enough, the activity stays.
	plain := strings.Repeat("x", 200)
	c = &Card{Run: "r1", Prog: "p", Started: t0, Verbosity: Verbose, Ended: true, Status: "completed", Answer: plain}
	for i := 0; i < 300; i++ {
		c.Checklist = append(c.Checklist, Item{plain, "done"})
	}
	c.activity("the last act")
	p := Paint(c, t0)
	b, _ := json.Marshal(p.Blocks)
	if !DefaultLimits.Fits(p) || !strings.Contains(string(b), "the last act") || !strings.Contains(string(b), plain) {
		t.Fatalf("degraded past the checklist: %.300s", b)
	}
	// All open: the tail is folded into "… N more items".
	for i := range c.Checklist {
		c.Checklist[i].State = "open"
	}
	b, _ = json.Marshal(Paint(c, t0).Blocks)
	if !strings.Contains(string(b), "… 260 more items") {
		t.Fatalf("%.300s", b)
	}
}

func TestFold(t *testing.T) {
	items := []Item{{"a", "done"}, {"b", "open"}, {"c", "done"}, {"d", "in_progress"}, {"e", "open"}}
	done, shown, more := fold(items, 3)
	if done != 2 || more != 0 || fmt.Sprint(shown) != "[{b open} {d in_progress} {e open}]" {
		t.Fatal(done, shown, more)
	}
	done, shown, more = fold(items, 2)
	if done != 2 || more != 1 || fmt.Sprint(shown) != "[{b open} {d in_progress}]" {
		t.Fatal(done, shown, more)
	}
}

// The answer is cut once, with one marker that counts the lines not shown.
func TestAnswerCutOnce(t *testing.T) {
	var lines []string
	for i := 1; i <= 42; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	c := &Card{Prog: "p", Started: t0, Ended: true, Status: "completed", Answer: strings.Join(lines, "\n") + "\n"}
	b, _ := json.Marshal(Paint(c, t0).Blocks)
	js := string(b)
	if strings.Count(js, "…") != 1 || !strings.Contains(js, `line 30\n… +12 lines"`) || strings.Contains(js, "line 31") {
		t.Fatalf("%s", js)
	}
	// Cut by characters: the marker still counts what is not shown.
	for i := range lines {
		lines[i] = strings.Repeat("y", 60)
	}
	got := Cut(strings.Join(lines, "\n"), MaxAnswerLines, MaxAnswerChars)
	shown := strings.Count(got, "\n") // the marker's line is the last
	if utf8.RuneCountInString(got) > MaxAnswerChars || !strings.HasSuffix(got, fmt.Sprintf("… +%d lines", 42-shown)) || strings.Count(got, "…") != 1 {
		t.Fatalf("%d shown: %q", shown, got)
	}
	if Cut("short\ntext", 12, 100) != "short\ntext" || Cut("a\nb\nc", 2, 100) != "a\nb\n… +1 line" {
		t.Fatal(Cut("a\nb\nc", 2, 100))
	}
}

// A checklist cut by the event's cap keeps the items before the cut.
func TestChecklistCutByTheCap(t *testing.T) {
	c := &Card{}
	c.Apply(events.Event{Kind: events.KindEmit, Emit: &events.Emit{Name: "checklist", Data: `[{"text":"a","state":"done"},{"text":"b","state":"open"},{"text":"c…[900 more chars]`}})
	if len(c.Checklist) != 3 || c.Checklist[1].Text != "b" || !strings.Contains(c.Checklist[2].Text, "too long") {
		t.Fatalf("%+v", c.Checklist)
	}
	c.Apply(events.Event{Kind: events.KindEmit, Emit: &events.Emit{Name: "checklist", Data: `not json`}})
	if len(c.Checklist) != 3 {
		t.Fatal("a checklist that is not one replaced the last")
	}
}

// A run that sleeps at a timer is shown sleeping until its deadline, never
// as waiting for something to answer; its next event clears it.
func TestCardSleeps(t *testing.T) {
	c := &Card{Prog: "ticks", Started: t0}
	note := func(kind, summary string) events.Event {
		return events.Event{At: t0.UnixMilli(), Kind: events.KindRunNote, RunNote: &events.RunNote{Note: kind, Summary: summary}}
	}
	c.Apply(note(events.NoteSleeping, "until 2026-12-07T14:22:01Z"))
	if got := Title(c, t0.Add(time.Second)); !strings.Contains(got, "sleeping until 14:22:01 UTC") || strings.Contains(got, "waiting for") {
		t.Fatalf("title %q", got)
	}
	c.Apply(events.Event{At: t0.UnixMilli(), Kind: events.KindEmit, Emit: &events.Emit{Name: "tick"}})
	if got := Title(c, t0.Add(2*time.Second)); strings.Contains(got, "sleeping") {
		t.Fatalf("title %q after it went on", got)
	}
	c.Apply(note(events.NoteWaiting, "waiting for an event [approve]"))
	if got := Title(c, t0.Add(3*time.Second)); !strings.Contains(got, "waiting for an event [approve]") {
		t.Fatalf("title %q", got)
	}
}
