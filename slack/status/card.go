// card.go holds the card: the state of a run's Slack status card, built from
// its events, and Paint, the one builder of every frame of it (the first
// "starting" frame, the live frames, the close). The body is one rich_text
// block (a section block folds at five lines), and untrusted text (the
// prog's checklist, act targets, the answer) only ever goes into literal
// text elements.

package status

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/runehost/runehost/events"
)

// Verbosity is how much a live card shows.
type Verbosity int

// The levels.
const (
	Quiet   Verbosity = iota // the checklist alone
	Verbose                  // and the recent acts
	Debug                    // and the current act's arguments
)

// QuietAfter is how long without an event before the title says so.
const QuietAfter = 20 * time.Second

// Limits of what a card shows.
const (
	MaxActivity    = 6    // recent act lines on a verbose card
	MaxPreLines    = 12   // lines of a preformatted block before "… +N lines"
	MaxPreChars    = 1000 // Slack refuses long preformatted blocks
	MaxAnswerChars = 2500
)

// Item is one line of the prog's checklist.
type Item struct {
	Text  string `json:"text"`
	State string `json:"state"` // open, in_progress or done
}

// Card is what a card shows of a run.
type Card struct {
	Run, Prog string
	Verbosity Verbosity
	Started   time.Time
	LastEvent time.Time
	Acts      int    // acts attempted so far: the title ticks with each
	InFlight  string // the act running, "" when none
	InFlightT time.Time
	Checklist []Item
	Activity  []string // recent act lines, newest last
	Current   string   // the current act's arguments (debug)
	Refused   bool     // an act was denied or refused by a cap
	Unknown   bool     // an act's effect is unknown
	Waiting   string   // what it waits for
	// The close: set when the run ended (or stopped to wait for good).
	Ended  bool
	Status string // completed, failed, cancelled, conflict, waiting
	Answer string
	Link   string // to the run, when a base URL is configured
}

// Apply folds one run event into the card.
func (c *Card) Apply(ev events.Event) {
	at := time.UnixMilli(ev.At)
	c.LastEvent = at
	if ev.RunNote == nil && ev.Kind != events.KindSpanStart && ev.Kind != events.KindSpanEnd {
		c.Waiting = "" // it works again
	}
	switch {
	case ev.ToolCall != nil:
		c.Acts++
		c.InFlight, c.InFlightT = ev.ToolCall.Description, at
		c.Current = ev.ToolCall.Description
		c.activity("→ " + ev.ToolCall.Description)
	case ev.ToolResult != nil:
		c.InFlight = ""
		mark := "✓ "
		if !ev.ToolResult.OK {
			mark = "✗ "
		}
		c.activity(mark + ev.ToolResult.Tool + ": " + ev.ToolResult.Summary)
	case ev.RunNote != nil:
		switch ev.RunNote.Note {
		case events.NoteRefused:
			c.Refused = true
		case events.NoteWaiting:
			c.Waiting = strings.TrimPrefix(ev.RunNote.Summary, "waiting for ")
			if strings.Contains(ev.RunNote.Summary, "the outcome of act") {
				c.Unknown = true
			}
		}
	case ev.Emit != nil && ev.Emit.Name == "checklist":
		var items []Item
		if json.Unmarshal([]byte(ev.Emit.Data), &items) == nil {
			c.Checklist = items
		}
	case ev.Answer != nil:
		c.Answer = ev.Answer.Text
	}
}

func (c *Card) activity(line string) {
	c.Activity = append(c.Activity, line)
	if len(c.Activity) > MaxActivity {
		c.Activity = c.Activity[len(c.Activity)-MaxActivity:]
	}
}

// Verdict is the close's icon: ✅ only for a completed run whose checklist
// is all done, with no act refused and no effect unknown; ❌ for a failed or
// cancelled run; ⚠️ for anything else (unfinished work, a refusal, waiting).
func (c *Card) Verdict() string {
	switch c.Status {
	case "failed", "cancelled":
		return "❌"
	case "completed":
		if c.Refused || c.Unknown {
			return "⚠️"
		}
		for _, it := range c.Checklist {
			if it.State != "done" {
				return "⚠️"
			}
		}
		return "✅"
	}
	return "⚠️"
}

// QuietSuffix is what the title adds after QuietAfter without an event:
// the act running, or thinking.
func QuietSuffix(now, last time.Time, inFlight string, since time.Time) string {
	if last.IsZero() || now.Sub(last) < QuietAfter {
		return ""
	}
	if inFlight != "" {
		return fmt.Sprintf("running %s (%ds)", inFlight, int(now.Sub(since).Seconds()))
	}
	return fmt.Sprintf("thinking (%ds since last act)", int(now.Sub(last).Seconds()))
}

// Clock writes a duration as 3m 04s.
func Clock(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// Painted is one paint: the top-level fallback text and the blocks.
type Painted struct {
	Text   string
	Blocks []slack.Block
}

// Key identifies what a paint shows.
func (p Painted) Key() string {
	b, _ := json.Marshal(p.Blocks)
	return p.Text + "\x00" + string(b)
}

var (
	bold = &slack.RichTextSectionTextStyle{Bold: true}
	ital = &slack.RichTextSectionTextStyle{Italic: true}
)

func text(s string, style *slack.RichTextSectionTextStyle) slack.RichTextSectionElement {
	if s == "" {
		s = " " // Slack refuses an empty text element
	}
	return slack.NewRichTextSectionTextElement(s, style)
}

// Paint builds a frame of the card at now. Every paint comes from here.
func Paint(c *Card, now time.Time) Painted {
	title := ""
	switch {
	case c.Ended:
		title = fmt.Sprintf("%s %s %s in %s", c.Verdict(), c.Prog, c.Status, Clock(now.Sub(c.Started)))
	case c.Started.IsZero():
		title = "👀 " + c.Prog + " starting"
	default:
		title = fmt.Sprintf("⏳ %s running %s", c.Prog, Clock(now.Sub(c.Started)))
		if c.Acts > 0 {
			title += fmt.Sprintf(" · %d acts", c.Acts)
		}
		if s := QuietSuffix(now, c.LastEvent, c.InFlight, c.InFlightT); s != "" {
			title += " · " + s
		}
		if c.Waiting != "" {
			title += " · waiting for " + oneLine(c.Waiting, 120)
		}
	}
	var els []slack.RichTextElement
	els = append(els, slack.NewRichTextSection(text(title, bold)))
	if len(c.Checklist) > 0 {
		var items []slack.RichTextElement
		for _, it := range c.Checklist {
			mark := map[string]string{"done": "☑ ", "in_progress": "◐ "}[it.State]
			if mark == "" {
				mark = "☐ "
			}
			items = append(items, slack.NewRichTextSection(text(mark+oneLine(it.Text, 200), nil)))
		}
		els = append(els, slack.NewRichTextList(slack.RTEListBullet, 0, items...))
	}
	if (c.Verbosity >= Verbose || c.Ended) && len(c.Activity) > 0 && !(c.Ended && c.Verbosity == Quiet) {
		var lines []slack.RichTextSectionElement
		for i, l := range c.Activity {
			if i > 0 {
				lines = append(lines, text("\n", nil))
			}
			lines = append(lines, text(oneLine(l, 200), nil))
		}
		els = append(els, slack.NewRichTextSection(lines...))
	}
	if c.Verbosity >= Debug && c.InFlight != "" && c.Current != "" && !c.Ended {
		els = append(els, pre(c.Current))
	}
	if c.Ended && c.Answer != "" {
		els = append(els, pre(Cut(c.Answer, MaxAnswerChars)))
	}
	if c.Link != "" && (c.Ended || !c.Started.IsZero()) {
		els = append(els, slack.NewRichTextSection(slack.NewRichTextSectionLinkElement(c.Link, "run "+c.Run, ital)))
	}
	fallback := escape(title)
	return Painted{Text: fallback, Blocks: []slack.Block{slack.NewRichTextBlock("card", els...)}}
}

// pre is a preformatted block cut by structure.
func pre(s string) *slack.RichTextPreformatted {
	return &slack.RichTextPreformatted{Type: slack.RTEPreformatted, Elements: []slack.RichTextSectionElement{text(Cut(s, MaxPreChars), nil)}}
}

// Cut shortens text by structure: its first MaxPreLines lines and "… +N
// lines", then at most n characters, never splitting a character.
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > MaxPreLines {
		s = strings.Join(lines[:MaxPreLines], "\n") + fmt.Sprintf("\n… +%d lines", len(lines)-MaxPreLines)
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

// escape makes text literal in Slack's mrkdwn (the fallback text is parsed).
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
