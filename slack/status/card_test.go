// card_test.go: the verdict is honest, the quiet suffix says what is going
// on, untrusted text stays literal, preformatted text is cut by structure.

package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
	if got := Cut("héllo wörld", 4); got != "héll…" {
		t.Fatalf("cut: %q", got)
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
