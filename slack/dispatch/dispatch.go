// Package dispatch runs progs from Slack: a mention names a prog (from the
// configured directory) and its input; a status card is posted at once, in
// the mention's thread, and kept true while the run works; a reply in the
// thread that matches what the run awaits is delivered to it (approvals from
// Slack). Events arrive over Socket Mode or the Events API.
package dispatch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/syntax"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/slack/clock"
	"github.com/runehost/runehost/slack/status"
)

// Config configures a Dispatcher.
type Config struct {
	BotToken      string // xoxb-…: posts and edits cards
	AppToken      string // xapp-…: Socket Mode
	SigningSecret string // the Events API's requests are signed with it
	APIURL        string // Slack's API (a fake in tests); the real one when ""
	ProgDir       string // where a mention's prog NAME.rune is found
	BaseURL       string // without Link, a run's link is BaseURL/runs/INV, when set
	// Link, if set, makes the link of a run's card: its live page, through a
	// capability link (runehost serve gives one).
	Link        func(inv string) (string, error)
	Verbosity   status.Verbosity
	Limit       uint64        // steps a run may take
	MinInterval time.Duration // between two edits of a card
	Heartbeat   time.Duration // repaint of live cards (elapsed time, quiet suffix); 0: 5 s
	Budget      status.BudgetConfig
	// SocketOptions are given to the Socket Mode client (tests shorten its
	// ping timeout, slack-go's 30 s, which runs on the real clock).
	SocketOptions []socketmode.Option
	// Clock runs the cards' intervals and their budget; the real clock when
	// nil (tests run the production intervals on a virtual one).
	Clock clock.Clock
	// Log gets the set-up's progress and what goes wrong, redacted
	// (docs/slack.md lists the lines); nothing is logged when nil.
	Log *slog.Logger
}

// Dispatcher turns Slack events into runs and runs into cards.
type Dispatcher struct {
	cfg   Config
	api   *slack.Client
	e     *host.Engine
	cards *status.Cards
	clk   clock.Clock

	mu      sync.Mutex
	runs    map[string]*run      // by root invocation
	threads map[string]*run      // by channel/thread ts
	seen    map[string]time.Time // event ids and messages already handled
	closing []*status.Live       // closed cards whose terminal frame may be pending
	botUser string               // the bot's user id, from auth.test
	botName string               // and its name
	wg      sync.WaitGroup

	checkMu sync.Mutex
	checked bool      // Check passed
	tried   bool      // Check ran, and found no *SetupError
	badSig  time.Time // the last bad signature logged (at most one a minute)
}

type run struct {
	inv, channel, thread string
	live                 *status.Live
	drive                sync.Mutex // one drive of a run at a time

	// Under the dispatcher's mu:
	driving bool // one of the dispatcher's own drives holds it: that drive settles the card
	ended   bool // the run ended (its outcome was logged) during that drive
	settled bool // the card is closed: nothing closes it again
}

// New returns a dispatcher over an engine. It sets the engine's OnEvent.
func New(cfg Config, e *host.Engine) *Dispatcher {
	opts := []slack.Option{}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	if cfg.Limit == 0 {
		cfg.Limit = 10_000_000
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	d := &Dispatcher{cfg: cfg, api: slack.New(cfg.BotToken, opts...), e: e, clk: clk,
		runs: map[string]*run{}, threads: map[string]*run{}, seen: map[string]time.Time{}}
	// The card client never retries a 429: a retried frame is stale, and it
	// would hold up the reply behind it.
	d.cards = &status.Cards{API: d.api, Budget: status.NewBudget(clk, cfg.Budget), Clock: clk, MinInterval: cfg.MinInterval, Log: cfg.Log}
	prev := e.OnEvent
	e.OnEvent = func(ev events.Event) {
		if prev != nil {
			prev(ev)
		}
		d.onEvent(ev)
	}
	return d
}

// link is a run's link for its card, or "".
func (d *Dispatcher) link(inv string) string {
	if d.cfg.Link != nil {
		l, err := d.cfg.Link(inv)
		if err != nil {
			d.warn("slack: the link of a run", "inv", inv, "err", err)
			return ""
		}
		return l
	}
	if d.cfg.BaseURL != "" {
		return strings.TrimSuffix(d.cfg.BaseURL, "/") + "/runs/" + inv
	}
	return ""
}

// Cards returns the dispatcher's card sender (its counters, for the logs).
func (d *Dispatcher) Cards() *status.Cards { return d.cards }

func rootOf(inv string) string { r, _, _ := strings.Cut(inv, "."); return r }

// onEvent folds a run's event into its card; a run's outcome, the last
// event of every end (a reply from Slack, an event sent by the CLI or the
// API, a cancel, an await's timeout woken by the host's loop), closes it.
func (d *Dispatcher) onEvent(ev events.Event) {
	d.mu.Lock()
	r := d.runs[rootOf(ev.Run)]
	d.mu.Unlock()
	if r == nil || r.live == nil {
		return
	}
	if ev.Outcome != nil && ev.Run != r.inv {
		// A child's end may end the run: a root that returned joins its
		// children, and completes as the last one settles, its own outcome
		// logged only when something concludes it (RunTree does; the host's
		// loop does not).
		if st, err := d.e.State(r.inv); err == nil && st.Status.Terminal() {
			d.ended(r)
		}
		return
	}
	if ev.Run != r.inv && ev.ToolCall == nil && ev.ToolResult == nil {
		return // a child's checklist, answer and notes are its own, not the card's
	}
	r.live.Update(func(c *status.Card) { c.Apply(ev) })
	if ev.Outcome != nil {
		d.ended(r)
	}
}

// ended settles the card of a run whose outcome was just logged. When one
// of the dispatcher's own drives holds the run, that drive settles it as it
// returns (with what it saw: a host's failure too); otherwise the run ended
// by another way, and its card is settled here, from its state.
func (d *Dispatcher) ended(r *run) {
	d.mu.Lock()
	if r.settled {
		d.mu.Unlock()
		return
	}
	if r.driving {
		r.ended = true
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	st, err := d.e.State(r.inv)
	d.settle(r, st, err)
}

// hold takes r for one of the dispatcher's own drives (a mention's, a
// reply's, a woken await's, a recovered run's), which settles the card
// itself with where it left the run. release gives r back, and settles a
// run that ended during the drive by another way (ended) if the drive did
// not.
func (d *Dispatcher) hold(r *run) (release func()) {
	r.drive.Lock()
	d.mu.Lock()
	r.driving = true
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		r.driving = false
		ended := r.ended && !r.settled
		r.ended = false
		d.mu.Unlock()
		if ended {
			st, err := d.e.State(r.inv)
			d.settle(r, st, err)
		}
		r.drive.Unlock()
	}
}

// plain is what a person typed in a message (see typed).
func (d *Dispatcher) plain(text string) string {
	d.mu.Lock()
	bot := d.botUser
	d.mu.Unlock()
	return typed(text, bot)
}

// Mention starts a run for a mention: NAME [INPUT], INPUT being JSON or
// text, NAME ending at the first whitespace (a newline too). A mention
// that names no prog here is answered by a plain reply in its thread, with
// no card; otherwise the card is posted before any work on the run, and
// when it cannot be, the run is not started (a run nobody sees) and a
// plain reply says why.
func (d *Dispatcher) Mention(ctx context.Context, channel, user, text, ts string) {
	name, rest := command(d.plain(text))
	if name == "" {
		d.say(ctx, channel, ts, "runehost: "+usage)
		return
	}
	if !progNameRE.MatchString(name) {
		d.say(ctx, channel, ts, fmt.Sprintf("runehost: no prog %s: a prog's name is letters, digits, - and _ (at most 64); %s", echo(name), usage))
		return
	}
	path, err := filepath.Abs(filepath.Join(d.cfg.ProgDir, name+".rune"))
	if err != nil {
		d.say(ctx, channel, ts, "runehost: the host cannot find its progs: "+err.Error())
		return
	}
	src, err := modules.Load(path, modules.LibPath()) // the prog and the modules it imports
	var se *syntax.Error
	switch {
	case errors.As(err, &se):
		d.say(ctx, channel, ts, fmt.Sprintf("runehost: prog %s cannot be compiled: %s", echo(name), d.e.Clean(err.Error(), 300)))
		return
	case err != nil:
		d.say(ctx, channel, ts, fmt.Sprintf("runehost: no prog %s here", echo(name)))
		return
	}
	card := &status.Card{Prog: name, Verbosity: d.cfg.Verbosity}
	live, err := d.cards.Open(ctx, channel, ts, card)
	if err != nil {
		d.cardRefused(ctx, channel, ts, name, err)
		return
	}
	fail := func(msg string) {
		live.Close(func(c *status.Card) { c.Status, c.Answer = "failed", msg })
	}
	var input any = rest
	if rest == "" {
		input = nil
	} else if v, err := checkpoint.DataFromJSON([]byte(rest)); err == nil {
		input = v
	}
	in, err := checkpoint.EncodeData(input)
	if err != nil {
		fail("the input is not data: " + err.Error())
		return
	}
	inv, err := d.e.NewInvocationID()
	if err != nil {
		fail("the host cannot start it: " + err.Error())
		return
	}
	r := &run{inv: inv, channel: channel, thread: ts, live: live}
	d.mu.Lock()
	d.runs[inv] = r
	d.threads[channel+"/"+ts] = r
	d.mu.Unlock()
	live.Update(func(c *status.Card) {
		c.Run, c.Started = inv, d.clk.Now()
		c.Link = d.link(inv)
	})
	seed := sha256.Sum256([]byte(inv + ts))
	defer d.hold(r)()
	// Marked before it starts: a run that ends while no dispatcher runs
	// has its card closed by the next one (marks.go).
	d.mark(inv)
	// The prog runs as CHANNEL/NAME: the channel's grants are its grants.
	// Its origin finds the thread and the card again after a restart.
	origin := strings.Join([]string{"slack", channel, ts, live.TS}, ":")
	// It is bound to its file in the prog directory, which is the
	// operator's to change: the file there replaces whatever was bound.
	bind := host.Binding{To: host.FileBinding(path), Replace: true}
	st, err := d.e.StartFrom(ctx, inv, channel+"/"+name, origin, bind, src, in, d.cfg.Limit, uint64(seed[0])<<8|uint64(seed[1]))
	if err == nil {
		st, err = d.e.RunTree(ctx, inv)
	}
	d.settle(r, st, err)
}

// Recover takes up the runs a previous process left unfinished: their
// threads are listened to again, their cards edited again (rebuilt from
// their run logs), and those that were running are driven on. The cards
// of runs that ended while no dispatcher ran are closed (closeLeft).
func (d *Dispatcher) Recover(ctx context.Context) error {
	invs, err := d.e.List(host.Running, host.Waiting, host.Joining)
	if err != nil {
		return err
	}
	n := 0
	defer func() {
		if n > 0 {
			d.info("slack: took up the runs the last process left", "runs", n)
		}
	}()
	taken := map[string]bool{}
	for _, i := range invs {
		taken[i.ID] = true
		channel, thread, cardTS, ok := slackOrigin(i)
		if !ok {
			continue
		}
		c, err := d.rebuild(i)
		if err != nil {
			continue
		}
		r := &run{inv: i.ID, channel: channel, thread: thread, live: d.cards.AttachInThread(channel, thread, cardTS, c)}
		d.mark(i.ID) // a run taken up from a store of before the marks has none
		d.mu.Lock()
		d.runs[i.ID] = r
		d.threads[channel+"/"+thread] = r
		d.mu.Unlock()
		n++
		d.spawn(func() {
			defer d.hold(r)()
			st, err := d.e.RunTree(ctx, r.inv)
			d.settle(r, st, err)
		})
	}
	return d.closeLeft(taken)
}

// slackOrigin is where a root invocation started from Slack came from: the
// channel, the thread and its card.
func slackOrigin(i *host.Invocation) (channel, thread, cardTS string, ok bool) {
	parts := strings.Split(i.Origin, ":")
	if len(parts) != 4 || parts[0] != "slack" || i.Parent != "" {
		return "", "", "", false
	}
	return parts[1], parts[2], parts[3], true
}

// rebuild is a run's card as its run log makes it.
func (d *Dispatcher) rebuild(i *host.Invocation) (*status.Card, error) {
	_, name, _ := strings.Cut(i.Prog, "/")
	c := &status.Card{Run: i.ID, Prog: name, Verbosity: d.cfg.Verbosity, Started: time.UnixMilli(i.Admitted)}
	c.Link = d.link(i.ID)
	evs, err := d.e.Events(i.ID, 1, 0)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		c.Apply(ev)
	}
	return c, nil
}

// closeLeft closes the cards still marked whose runs ended while no
// dispatcher ran (runehost send or cancel on the store, say), as settle
// would have, their duration counted to the run's end; taken are the runs
// Recover took up. A mark whose run is gone (collected) goes.
func (d *Dispatcher) closeLeft(taken map[string]bool) error {
	marked, err := d.marked()
	if err != nil {
		return err
	}
	n := 0
	for _, inv := range marked {
		if taken[inv] {
			continue
		}
		in, err := d.e.Inspect(inv)
		if errors.Is(err, host.ErrNoSuchInvocation) {
			d.unmark(inv)
			continue
		}
		if err != nil || in.Invocation.Damage != "" {
			continue // kept: a later start may read it
		}
		i := in.Invocation
		channel, thread, cardTS, ok := slackOrigin(i)
		if !ok {
			d.unmark(inv)
			continue
		}
		if !i.Status.Terminal() {
			continue // taken up already, or ended since List
		}
		c, err := d.rebuild(i)
		if err != nil {
			continue
		}
		r := &run{inv: inv, channel: channel, thread: thread, live: d.cards.AttachInThread(channel, thread, cardTS, c)}
		var at time.Time
		if i.Ended != 0 {
			at = time.UnixMilli(i.Ended)
		}
		d.closeEnded(r, &host.RunState{Status: i.Status, Result: i.Result, Err: i.Err}, at)
		n++
	}
	if n > 0 {
		d.info("slack: closed the cards of runs that ended while no process had them", "runs", n)
	}
	return nil
}

// Reply delivers a thread reply to the run of that thread, if it waits for
// an event: "KEY JSON" names the key; any other text goes, as {text, user},
// to the run's only awaited key.
func (d *Dispatcher) Reply(ctx context.Context, channel, threadTS, user, text string) {
	d.reply(ctx, channel, threadTS, user, text, nil)
}

// reply is Reply with the names of the files the reply shares: they go as
// files, and as the text when the person typed none.
func (d *Dispatcher) reply(ctx context.Context, channel, threadTS, user, text string, files []string) {
	d.mu.Lock()
	r := d.threads[channel+"/"+threadTS]
	bot := d.botUser
	d.mu.Unlock()
	if r == nil || user == "" || user == bot {
		return
	}
	defer d.hold(r)()
	st, err := d.e.State(r.inv)
	if err != nil || st.Status != host.Waiting || !strings.HasPrefix(st.Waiting, "an event [") {
		return
	}
	tags := strings.Fields(strings.Trim(strings.TrimPrefix(st.Waiting, "an event "), "[]"))
	text = d.plain(text)
	if text == "" && len(files) > 0 {
		text = strings.Join(files, "\n")
	}
	var tag string
	var payload any
	first, rest := command(text)
	for _, t := range tags {
		if t == first {
			tag = t
			payload = rest
			if v, err := checkpoint.DataFromJSON([]byte(rest)); err == nil {
				payload = v
			}
		}
	}
	if tag == "" {
		if len(tags) != 1 {
			return
		}
		m := &checkpoint.Map{}
		m.Set("text", text)
		m.Set("user", user)
		if len(files) > 0 {
			l := make([]any, len(files))
			for i, f := range files {
				l[i] = f
			}
			m.Set("files", l)
		}
		tag, payload = tags[0], m
	}
	b, err := checkpoint.EncodeData(payload)
	if err != nil {
		return
	}
	if _, err = d.e.Send(ctx, r.inv, tag, b); err == nil {
		st, err = d.e.RunTree(ctx, r.inv)
	}
	d.settle(r, st, err)
}

// settle closes a run's card once the run has ended (st, or err: the host
// failed on it); a waiting run's card stays live, saying what it waits for.
// A card is closed once (closeCard): whichever way comes first.
func (d *Dispatcher) settle(r *run, st *host.RunState, err error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// This process is stopping: a run that goes on goes on in the next
		// one, on the same card; one that has ended is closed now.
		if now, serr := d.e.State(r.inv); serr == nil && now.Status.Terminal() {
			d.closeEnded(r, now, time.Time{})
		}
		return
	}
	if err != nil && (st == nil || !st.Status.Terminal()) {
		// What failed may be the run's end by another way meanwhile (a
		// delivery to a run just cancelled, or timed out): its end is shown.
		if now, serr := d.e.State(r.inv); serr == nil && now.Status.Terminal() {
			d.closeEnded(r, now, time.Time{})
			return
		}
	}
	if err != nil {
		d.closeCard(r, time.Time{}, func(c *status.Card) { c.Status, c.Answer = "failed", d.e.Clean("the host failed: "+err.Error(), 0) })
		return
	}
	switch {
	case st.Status.Terminal():
		d.closeEnded(r, st, time.Time{})
	default:
		r.live.Update(func(c *status.Card) {
			c.Waiting = d.e.Clean(st.Waiting, 200)
			if st.Unknown != nil {
				c.Unknown = true
			}
		})
	}
}

// closeEnded closes the card of a run that ended as st says, at at (zero:
// now).
func (d *Dispatcher) closeEnded(r *run, st *host.RunState, at time.Time) {
	d.closeCard(r, at, func(c *status.Card) {
		c.Status = st.Status.String()
		if st.Err != nil {
			c.Answer = d.e.Clean(st.Err.Kind+": "+st.Err.Msg, 0)
		}
	})
}

// closeCard closes r's card with f, unless it is closed already: the
// dispatcher forgets the run, and its mark goes.
func (d *Dispatcher) closeCard(r *run, at time.Time, f func(c *status.Card)) {
	d.mu.Lock()
	if r.settled {
		d.mu.Unlock()
		return
	}
	r.settled = true
	d.mu.Unlock()
	r.live.CloseAt(at, f)
	d.forget(r)
	d.unmark(r.inv)
}

func (d *Dispatcher) forget(r *run) {
	d.mu.Lock()
	kept := d.closing[:0]
	for _, l := range d.closing {
		select {
		case <-l.Done():
		default:
			kept = append(kept, l)
		}
	}
	d.closing = append(kept, r.live)
	delete(d.runs, r.inv)
	if d.threads[r.channel+"/"+r.thread] == r { // a later run in the thread keeps it
		delete(d.threads, r.channel+"/"+r.thread)
	}
	d.mu.Unlock()
}

// userSubtypes are the subtypes of a message a person posts: a plain
// reply (no subtype), one also sent to the channel, one sharing a file, a
// /me. Edits, deletions, joins and bots' messages are not replies.
var userSubtypes = map[string]bool{"": true, "thread_broadcast": true, "file_share": true, "me_message": true}

// isBot reports whether user is the bot itself.
func (d *Dispatcher) isBot(user string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return user != "" && user == d.botUser
}

// SeenFor is how long a delivered event is remembered against repeats
// (Slack retries within minutes).
const SeenFor = time.Hour

// first reports whether key is new, remembering it for SeenFor.
func (d *Dispatcher) first(key string) bool {
	if key == "event:" || key == "msg:/" {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if len(d.seen)%1024 == 0 { // now and then, forget the old ones
		for k, t := range d.seen {
			if now.Sub(t) > SeenFor {
				delete(d.seen, k)
			}
		}
	}
	if t, ok := d.seen[key]; ok && now.Sub(t) <= SeenFor {
		return false
	}
	d.seen[key] = now
	return true
}

// logAt logs msg and its key-value pairs, the values redacted.
func (d *Dispatcher) logAt(level slog.Level, msg string, kv ...any) {
	if d.cfg.Log == nil {
		return
	}
	for i := 1; i < len(kv); i += 2 {
		switch v := kv[i].(type) {
		case string:
			kv[i] = d.e.Clean(v, 0)
		case error:
			kv[i] = d.e.Clean(v.Error(), 0)
		}
	}
	d.cfg.Log.Log(context.Background(), level, d.e.Clean(msg, 0), kv...)
}

func (d *Dispatcher) info(msg string, kv ...any)     { d.logAt(slog.LevelInfo, msg, kv...) }
func (d *Dispatcher) warn(msg string, kv ...any)     { d.logAt(slog.LevelWarn, msg, kv...) }
func (d *Dispatcher) logError(msg string, kv ...any) { d.logAt(slog.LevelError, msg, kv...) }

// say posts a plain reply in a thread, escaped (Slack reads a message's
// text as mrkdwn) and redacted; it is how a mention that starts no run is
// answered.
func (d *Dispatcher) say(ctx context.Context, channel, thread, text string) {
	// Through the cards' queue: budgeted, paced per channel, retried.
	if err := d.cards.Reply(ctx, channel, thread, d.e.Clean(text, 0)); err != nil {
		d.warn("slack: a reply could not be posted: "+d.postFix(channel, err), "channel", channel, "err", err)
	}
}

// cardRefused answers a mention whose card could not be posted: the run is
// not started (nobody would see it), the log says what to fix, and a plain
// reply in the thread says why, when Slack takes one (not when the bot is
// not in the channel).
func (d *Dispatcher) cardRefused(ctx context.Context, channel, thread, prog string, err error) {
	fix := d.postFix(channel, err)
	d.warn("slack: the status card could not be posted, so the run was not started: "+fix, "channel", channel, "prog", prog, "err", err)
	d.say(ctx, channel, thread, fmt.Sprintf("runehost could not post a status card here (%s: %s), so %s was not run.", errCode(err), fix, prog))
}

// errCode is Slack's error code in err, or err's text.
func errCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return err.Error()
}

func (d *Dispatcher) known(channel, thread string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.threads[channel+"/"+thread] != nil
}

func (d *Dispatcher) spawn(f func()) {
	d.wg.Add(1)
	go func() { defer d.wg.Done(); f() }()
}

// Wait waits for the runs started from events to settle or wait.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// Drain waits, at most max, for the terminal frames of closed cards that
// are funded but not sent yet: a stopping process sends them first.
func (d *Dispatcher) Drain(max time.Duration) {
	deadline := time.After(max)
	d.mu.Lock()
	closing := d.closing
	d.closing = nil
	d.mu.Unlock()
	for _, l := range closing {
		select {
		case <-l.Done():
		case <-deadline:
			return
		}
	}
}

// checkLater retries the set-up check until it passes, when Check could
// not reach Slack: the bot's user id is learnt then.
func (d *Dispatcher) checkLater(ctx context.Context) {
	d.checkMu.Lock()
	done := d.checked
	d.checkMu.Unlock()
	for wait := 10 * time.Second; !done; wait = min(2*wait, 5*time.Minute) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		err := d.check(ctx, 1)
		if se := (*SetupError)(nil); errors.As(err, &se) {
			return // logged by Check
		}
		d.checkMu.Lock()
		done = d.checked
		d.checkMu.Unlock()
	}
}

// heartbeat repaints live cards, so that elapsed time and the quiet suffix
// move between events.
func (d *Dispatcher) heartbeat(ctx context.Context) {
	every := d.cfg.Heartbeat
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		var runs []*run
		for _, r := range d.runs {
			runs = append(runs, r)
		}
		d.mu.Unlock()
		// Awaits whose deadline passed are woken and driven on.
		if n, err := (&host.Scheduler{E: d.e}).Wake(); err == nil && n > 0 {
			for _, r := range runs { // the woken await may be a child's: drive every tree
				if st, err := d.e.State(r.inv); err == nil && !st.Status.Terminal() {
					r := r
					d.spawn(func() {
						defer d.hold(r)()
						st, err := d.e.RunTree(ctx, r.inv)
						d.settle(r, st, err)
					})
				}
			}
		}
		for _, r := range runs {
			if r.live != nil && r.live.Card().Waiting == "" {
				r.live.Repaint() // a waiting card's frame changes only with time: leave it
			}
		}
	}
}
