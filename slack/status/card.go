// card.go holds the card: the state of a run's Slack status card, built from
// its events, and Paint, the one builder of every frame of it (the first
// "starting" frame, the live frames, the close). The body is one rich_text
// block (a section block folds at five lines), and untrusted text (the
// prog's checklist, act targets, the answer) only ever goes into literal
// text elements.
//
// A card always fits: every part is bounded (the title, each checklist item
// and activity line, the answer cut once by lines and characters), and the
// whole paint is measured against Slack's limits (Limits: the characters of
// text in the blocks, the blocks' JSON, the top-level text, the number of
// blocks) before it is sent. When it does not fit, it degrades in this
// order until it does: older checklist items are folded into "… N earlier
// items done" (then the last into "… N more items"), then the activity
// lines go, then the answer is shortened (and the debug arguments go), then
// the checklist items' text is truncated. The last step is a few hundred
// characters, so no paint is refused for its size.

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

// Bounds of each part of a card, before the whole is measured (Limits).
const (
	MaxActivity       = 6    // recent act lines on a verbose card
	MaxPreLines       = 12   // lines of the debug arguments before "… +N lines"
	MaxPreChars       = 1000 // characters of one preformatted element: Slack refuses long ones (SLACK.md)
	MaxAnswerLines    = 30   // lines of the answer before "… +N lines"
	MaxAnswerChars    = MaxPreChars
	MaxChecklistShown = 40  // checklist items shown; the rest are folded into counts
	MaxItemChars      = 200 // characters of a checklist item or an activity line
	MaxTitleChars     = 400 // characters of the title (and the top-level text)
	MaxSaidChars      = 300 // characters of a streaming model's text: its last ones
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
	Said      string   // the end of the current model call's text as it streams
	Refused   bool     // an act was denied or refused by a cap
	Unknown   bool     // an act's effect is unknown
	Waiting   string   // what it waits for
	Sleeps    string   // when it goes on, when it sleeps at a timer (RFC 3339): nothing to answer
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
		c.Waiting, c.Sleeps = "", "" // it works again
	}
	switch {
	case ev.ToolCall != nil:
		c.Acts++
		c.InFlight, c.InFlightT = ev.ToolCall.Description, at
		c.Current = ev.ToolCall.Description
		c.Said = ""
		c.activity("→ " + ev.ToolCall.Description)
	case ev.Assistant != nil:
		if c.InFlight != "" {
			c.Said = tail(c.Said+ev.Assistant.Text, MaxSaidChars)
		}
	case ev.ToolResult != nil:
		c.InFlight, c.Said = "", ""
		mark := "✓ "
		if !ev.ToolResult.OK {
			mark = "✗ "
		}
		c.activity(mark + ev.ToolResult.Tool + ": " + ev.ToolResult.Summary)
	case ev.RunNote != nil:
		switch ev.RunNote.Note {
		case events.NoteRefused:
			c.Refused = true
		case events.NoteSleeping:
			c.Waiting, c.Sleeps = "", strings.TrimPrefix(ev.RunNote.Summary, "until ")
		case events.NoteWaiting:
			c.Waiting, c.Sleeps = strings.TrimPrefix(ev.RunNote.Summary, "waiting for "), ""
			if strings.Contains(ev.RunNote.Summary, "the outcome of act") {
				c.Unknown = true
			}
		}
	case ev.Emit != nil && ev.Emit.Name == "checklist":
		if items, ok := checklist(ev.Emit.Data); ok {
			c.Checklist = items
		}
	case ev.Answer != nil:
		c.Answer = ev.Answer.Text
	}
}

// checklist reads an emitted checklist. An emit's data is capped
// (events.OutputCap), so a long one arrives cut mid-item: the items before
// the cut are kept, and the rest counted as one more open item saying so.
func checklist(data string) ([]Item, bool) {
	var items []Item
	if json.Unmarshal([]byte(data), &items) == nil {
		return items, true
	}
	dec := json.NewDecoder(strings.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, false
	}
	for dec.More() {
		var it Item
		if dec.Decode(&it) != nil {
			break
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, false
	}
	return append(items, Item{Text: "… the rest of the checklist (too long to show)", State: "open"}), true
}

// tail is the last n characters of s, opened with "…" when cut.
func tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
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

// Limits are what Slack accepts of one message, what every paint is
// measured against before it is sent.
type Limits struct {
	// BlockChars bounds the characters of text in the blocks (text and link
	// elements). Slack documents no figure; it refuses blocks past roughly
	// 12-13k characters with msg_blocks_too_long (measured, issue 14).
	BlockChars int
	// BlocksJSON bounds the bytes of the blocks' JSON, our own guard on top
	// of BlockChars for escaping and structure (json.Marshal writes < as
	// \u003c).
	BlocksJSON int
	// Text bounds the top-level text: Slack truncates it past 40,000
	// characters (chat.postMessage reference).
	Text int
	// Blocks bounds the number of blocks: 50 (Block Kit reference).
	Blocks int
}

// DefaultLimits are Slack's, with the character budget below what was seen
// refused.
var DefaultLimits = Limits{BlockChars: 12_000, BlocksJSON: 24_000, Text: 40_000, Blocks: 50}

// Half is l with the blocks' budgets halved: what a frame Slack refused for
// its size is painted within, once.
func (l Limits) Half() Limits {
	l.BlockChars /= 2
	l.BlocksJSON /= 2
	return l
}

// Fits says whether p is within l.
func (l Limits) Fits(p Painted) bool {
	chars, js := p.Size()
	return chars <= l.BlockChars && js <= l.BlocksJSON && len(p.Blocks) <= l.Blocks &&
		utf8.RuneCountInString(p.Text) <= l.Text
}

// Size measures a paint: the characters of text in its blocks' text and link
// elements, and the bytes of the blocks' JSON.
func (p Painted) Size() (chars, jsonBytes int) {
	var section func(els []slack.RichTextSectionElement)
	section = func(els []slack.RichTextSectionElement) {
		for _, e := range els {
			switch e := e.(type) {
			case *slack.RichTextSectionTextElement:
				chars += utf8.RuneCountInString(e.Text)
			case *slack.RichTextSectionLinkElement:
				chars += utf8.RuneCountInString(e.Text) + utf8.RuneCountInString(e.URL)
			}
		}
	}
	var walk func(els []slack.RichTextElement)
	walk = func(els []slack.RichTextElement) {
		for _, e := range els {
			switch e := e.(type) {
			case *slack.RichTextSection:
				section(e.Elements)
			case *slack.RichTextPreformatted:
				section(e.Elements)
			case *slack.RichTextList:
				walk(e.Elements)
			}
		}
	}
	for _, b := range p.Blocks {
		if rt, ok := b.(*slack.RichTextBlock); ok {
			walk(rt.Elements)
		}
	}
	js, _ := json.Marshal(p.Blocks)
	return chars, len(js)
}

// WithBlockID is p with its blocks' block_id set to id (Slack asks for a new
// block id each time a message is updated). Key does not change.
func (p Painted) WithBlockID(id string) Painted {
	out := Painted{Text: p.Text, Blocks: make([]slack.Block, len(p.Blocks))}
	for i, b := range p.Blocks {
		if rt, ok := b.(*slack.RichTextBlock); ok {
			c := *rt
			c.BlockID = id
			b = &c
		}
		out.Blocks[i] = b
	}
	return out
}

// shape is how much of each part a paint shows.
type shape struct {
	items    int // checklist items shown; the rest folded into counts
	itemText int // characters of a checklist item
	activity int // activity lines
	answer   int // characters of the answer
	current  int // characters of the debug arguments; 0: not shown
}

// shapes is the degrade order, each step smaller than the one before, tried
// until a paint fits: older checklist items are folded into a count first,
// then the activity lines go, then the answer is shortened (and the debug
// arguments go), then the checklist items' text is truncated. The last
// shape is a few hundred characters, so a paint always fits Slack's limits.
var shapes = []shape{
	{items: MaxChecklistShown, itemText: MaxItemChars, activity: MaxActivity, answer: MaxAnswerChars, current: MaxPreChars},
	{items: 20, itemText: MaxItemChars, activity: MaxActivity, answer: MaxAnswerChars, current: MaxPreChars},
	{items: 10, itemText: MaxItemChars, activity: MaxActivity, answer: MaxAnswerChars, current: MaxPreChars},
	{items: 5, itemText: MaxItemChars, activity: MaxActivity, answer: MaxAnswerChars, current: MaxPreChars},
	{items: 5, itemText: MaxItemChars, activity: 3, answer: MaxAnswerChars, current: MaxPreChars},
	{items: 5, itemText: MaxItemChars, activity: 0, answer: MaxAnswerChars, current: MaxPreChars},
	{items: 5, itemText: MaxItemChars, activity: 0, answer: 500, current: 0},
	{items: 5, itemText: MaxItemChars, activity: 0, answer: 200, current: 0},
	{items: 5, itemText: 80, activity: 0, answer: 200, current: 0},
	{items: 5, itemText: 40, activity: 0, answer: 200, current: 0},
}

// Paint builds a frame of the card at now within DefaultLimits. Every paint
// comes from here.
func Paint(c *Card, now time.Time) Painted { return PaintWithin(c, now, DefaultLimits) }

// PaintWithin builds a frame of the card at now that fits lim, degrading in
// the order of shapes; it is never refused for its size.
func PaintWithin(c *Card, now time.Time, lim Limits) Painted {
	var p Painted
	for _, sh := range shapes {
		if p = paint(c, now, sh); lim.Fits(p) {
			return p
		}
	}
	return p // the smallest shape: a few hundred characters
}

// Title is the card's title line at now: its verdict when ended, else what
// it is doing.
func Title(c *Card, now time.Time) string {
	title := ""
	switch {
	case c.Ended:
		title = fmt.Sprintf("%s %s %s in %s", c.Verdict(), oneLine(c.Prog, 80), c.Status, Clock(now.Sub(c.Started)))
	case c.Started.IsZero():
		title = "👀 " + oneLine(c.Prog, 80) + " starting"
	default:
		title = fmt.Sprintf("⏳ %s running %s", oneLine(c.Prog, 80), Clock(now.Sub(c.Started)))
		if c.Acts > 0 {
			title += fmt.Sprintf(" · %d acts", c.Acts)
		}
		if s := QuietSuffix(now, c.LastEvent, oneLine(c.InFlight, 120), c.InFlightT); s != "" {
			title += " · " + s
		}
		if c.Waiting != "" {
			title += " · waiting for " + oneLine(c.Waiting, 120)
		}
		if c.Sleeps != "" {
			title += " · sleeping until " + sleepClock(c.Sleeps)
		}
	}
	return oneLine(title, MaxTitleChars)
}

func paint(c *Card, now time.Time, sh shape) Painted {
	title := Title(c, now)
	var els []slack.RichTextElement
	els = append(els, slack.NewRichTextSection(text(title, bold)))
	if len(c.Checklist) > 0 {
		done, shown, more := fold(c.Checklist, sh.items)
		var items []slack.RichTextElement
		if done > 0 {
			items = append(items, slack.NewRichTextSection(text(fmt.Sprintf("☑ … %d earlier %s done", done, plural(done, "item")), ital)))
		}
		for _, it := range shown {
			mark := map[string]string{"done": "☑ ", "in_progress": "◐ "}[it.State]
			if mark == "" {
				mark = "☐ "
			}
			items = append(items, slack.NewRichTextSection(text(mark+oneLine(it.Text, sh.itemText), nil)))
		}
		if more > 0 {
			items = append(items, slack.NewRichTextSection(text(fmt.Sprintf("… %d more %s", more, plural(more, "item")), ital)))
		}
		els = append(els, slack.NewRichTextList(slack.RTEListBullet, 0, items...))
	}
	if (c.Verbosity >= Verbose || c.Ended) && !(c.Ended && c.Verbosity == Quiet) && sh.activity > 0 && len(c.Activity) > 0 {
		act := c.Activity
		if len(act) > sh.activity {
			act = act[len(act)-sh.activity:]
		}
		var lines []slack.RichTextSectionElement
		for i, l := range act {
			if i > 0 {
				lines = append(lines, text("\n", nil))
			}
			lines = append(lines, text(oneLine(l, MaxItemChars), nil))
		}
		els = append(els, slack.NewRichTextSection(lines...))
	}
	if c.InFlight != "" && c.Said != "" && !c.Ended && sh.activity > 0 {
		els = append(els, slack.NewRichTextSection(text("✎ "+oneLine(c.Said, MaxSaidChars+2), ital)))
	}
	if c.Verbosity >= Debug && c.InFlight != "" && c.Current != "" && !c.Ended && sh.current > 0 {
		els = append(els, pre(Cut(c.Current, MaxPreLines, sh.current)))
	}
	if c.Ended && c.Answer != "" {
		els = append(els, pre(Cut(c.Answer, MaxAnswerLines, sh.answer)))
	}
	if c.Link != "" && (c.Ended || !c.Started.IsZero()) {
		els = append(els, slack.NewRichTextSection(slack.NewRichTextSectionLinkElement(c.Link, "run "+oneLine(c.Run, 80), ital)))
	}
	fallback := escape(title)
	return Painted{Text: fallback, Blocks: []slack.Block{slack.NewRichTextBlock("card", els...)}}
}

// fold picks at most n of the checklist's items to show, in their order:
// done items are folded first, the earliest first, into a count (done);
// if that is not enough, the last items are folded into another (more).
func fold(items []Item, n int) (done int, shown []Item, more int) {
	drop := len(items) - n
	if drop <= 0 {
		return 0, items, 0
	}
	for _, it := range items {
		if drop > 0 && it.State == "done" {
			drop--
			done++
			continue
		}
		shown = append(shown, it)
	}
	if drop > 0 {
		more = drop
		shown = shown[:len(shown)-drop]
	}
	return done, shown, more
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// pre is a preformatted element of text already cut.
func pre(s string) *slack.RichTextPreformatted {
	return &slack.RichTextPreformatted{Type: slack.RTEPreformatted, Elements: []slack.RichTextSectionElement{text(s, nil)}}
}

// Cut shortens text once, by structure, to at most maxLines lines and about
// maxChars characters (never splitting a character), and says once what it
// left out: whole lines go first, then "… +N lines" says how many of the
// text's lines are not shown; a first line too long alone is cut short with
// "…".
func Cut(s string, maxLines, maxChars int) string {
	s = strings.TrimRight(strings.ToValidUTF8(s, "\uFFFD"), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) <= maxLines && utf8.RuneCountInString(s) <= maxChars {
		return s
	}
	room := maxChars // one line: cut short, with "…"
	if len(lines) > 1 {
		room -= utf8.RuneCountInString(fmt.Sprintf("\n… +%d lines", len(lines)))
	}
	var b strings.Builder
	n, shown := 0, 0
	for _, l := range lines {
		w := utf8.RuneCountInString(l)
		if shown > 0 {
			w++ // the newline
		}
		if shown == maxLines || n+w > room {
			break
		}
		if shown > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		n += w
		shown++
	}
	if shown == 0 { // the first line alone is too long: cut it short
		b.WriteString(string([]rune(lines[0])[:max(0, min(utf8.RuneCountInString(lines[0]), room))]) + "…")
		shown = 1
	}
	if rest := len(lines) - shown; rest > 0 {
		fmt.Fprintf(&b, "\n… +%d %s", rest, plural(rest, "line"))
	}
	return b.String()
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

// sleepClock is a timer's deadline as a card says it: the time of day in
// UTC, with its zone (a card is read in many zones).
func sleepClock(rfc3339 string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		return oneLine(rfc3339, 40)
	}
	return t.UTC().Format("15:04:05 MST")
}
