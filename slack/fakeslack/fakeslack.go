// Package fakeslack is a fake Slack for tests, driven by the real slack-go
// client through its API URL option: the Web API's chat.postMessage,
// chat.update, auth.test and apps.connections.open, and a Socket Mode
// websocket, with Slack's limits, errors and event deliveries on the fake's
// own clock. It keeps every request body, so a test can look for what must
// never be sent.
//
// New is lenient, as the fake always was: it limits only what
// UpdatesPerMinute says and checks nothing it is sent. NewStrict behaves like
// Slack where it matters (see Strict), and is what new tests should use; a
// test that needs one thing otherwise starts from Strict() and NewWith.
//
// On a clock.Fake, the limits, Retry-After, the 3 s ack deadline and the
// redeliveries run at production values as the test advances the clock. Two
// things go by the real clock because slack-go measures them so: websocket
// pings (slack-go's watchdog drops a connection after 30 s of real time
// without one) and slack-go's own waits (its reconnect backoff and a
// Retry-After it sleeps on when apps.connections.open is limited). A test
// that acks over the socket in real time and then advances the clock waits
// for the ack first (WaitAcked, WaitDeliveries).
package fakeslack

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runehost/runehost/slack/clock"
)

// Config says how much like Slack the fake behaves.
type Config struct {
	// PerMinute caps the calls a method takes in any rolling minute, for the
	// whole app (absent or 0: no cap). Server.UpdatesPerMinute, when set,
	// is chat.update's cap.
	PerMinute map[string]int
	// PostBurst and PostEvery shape chat.postMessage in each channel: a
	// burst of PostBurst, then one every PostEvery (PostEvery 0: no limit).
	PostBurst int
	PostEvery time.Duration
	// RateLimitedAs200 answers a call over a limit with HTTP 200
	// {"ok":false,"error":"rate_limited"}, which slack-go returns as a
	// slack.SlackErrorResponse, instead of HTTP 429 with Retry-After, which
	// it returns as *slack.RateLimitedError.
	RateLimitedAs200 bool
	// RandomRateLimited is the chance that a call to a limited method is
	// refused with HTTP 200 rate_limited although it is under its limit, as
	// Slack does now and then; Seed seeds the draw.
	RandomRateLimited float64
	Seed              uint64
	// ValidateBlocks checks text and blocks as Slack does: invalid_blocks,
	// invalid_blocks_format, msg_blocks_too_long, msg_too_long, no_text.
	ValidateBlocks bool
	// MaxBlocksText is the most characters of text in a message's blocks
	// (0: MaxBlocksText).
	MaxBlocksText int
	// CheckTokens answers not_authed without a token, invalid_auth for a
	// token other than BotToken or AppToken (when set), and
	// not_allowed_token_type for an app-level token on a bot method.
	CheckTokens        bool
	BotToken, AppToken string
	// RequireAppToken answers not_allowed_token_type when
	// apps.connections.open is called with a token that is not xapp-.
	RequireAppToken bool
	// Echo delivers, as Slack does to an app subscribed to messages, a
	// message event for each of the bot's own posts, a message_changed for
	// each edit and a message_deleted for Delete.
	Echo bool
	// AckDeadline is how long an envelope waits for its ack before Slack
	// sends it again (0: never again); Retries are the waits before each
	// new attempt once a deadline has passed (Slack: at once, 1 min, 5 min).
	AckDeadline time.Duration
	Retries     []time.Duration
	// DropAcks loses the acks of each event's first DropAcks deliveries
	// on the way, as a bad network would (an Events API answer too): the
	// fake never sees them, so those deliveries pass their deadline and the
	// event comes again, per Retries. A deadline alone cannot promise that:
	// an ack back before the fake's clock moves is in time, however short
	// the deadline.
	DropAcks int
	// PingInterval is how often the websocket is pinged (0: never). The
	// pings go by the real clock: slack-go's 30 s watchdog does.
	PingInterval time.Duration
	// DisconnectGrace is how long a connection stays open after Disconnect
	// before the fake closes it itself (0: until the client closes it).
	DisconnectGrace time.Duration
}

// Slack's documented limits, per app and workspace.
const (
	Tier1 = 1   // a minute: apps.connections.open ("1+", with bursts)
	Tier2 = 20  // a minute
	Tier3 = 50  // a minute: chat.update
	Tier4 = 100 // a minute: auth.test
)

// Production intervals.
const (
	AckDeadline  = 3 * time.Second  // Slack's wait for an ack
	PingInterval = 10 * time.Second // the fake's pings; slack-go gives up after 30 s without one
)

// Lenient is New's configuration: no limits but UpdatesPerMinute, no
// checks, no echoes, no redelivery; pings every PingInterval.
func Lenient() Config {
	return Config{PingInterval: PingInterval}
}

// Strict is NewStrict's configuration, Slack where it matters:
// chat.update 50 a minute, chat.postMessage 1 a second per channel after a
// burst of 3 and 300 a minute in all, auth.test 100 a minute,
// apps.connections.open 10 a minute (Tier 1 is "1+", and Slack asks for the
// reconnects itself); blocks and tokens checked; the bot's posts echoed;
// un-acked envelopes sent again after 3 s, 1 min and 5 min; pings every
// 10 s; a disconnected socket closed 10 s after its disconnect message.
func Strict() Config {
	return Config{
		PerMinute:       map[string]int{"chat.update": Tier3, "chat.postMessage": 300, "auth.test": Tier4, "apps.connections.open": 10},
		PostBurst:       3,
		PostEvery:       time.Second,
		ValidateBlocks:  true,
		CheckTokens:     true,
		RequireAppToken: true,
		Echo:            true,
		AckDeadline:     AckDeadline,
		Retries:         []time.Duration{0, time.Minute, 5 * time.Minute},
		PingInterval:    PingInterval,
		DisconnectGrace: 10 * time.Second,
	}
}

// Message is a message as the fake keeps it.
type Message struct {
	Channel, TS, ThreadTS string
	Text                  string
	Blocks                string // JSON
	Edits                 int
	Deleted               bool
}

// Request is a call the fake received.
type Request struct {
	Method string
	At     time.Time
	Body   string // form-encoded or JSON, as sent
	Status int    // what the fake answered
	Error  string // the Slack error it answered, "" when ok
}

// Refusal is a kind of answer that was not ok: the method, the HTTP status
// and the Slack error ("ratelimited" with a 429, "rate_limited" with a 200).
type Refusal struct {
	Method string
	Status int
	Error  string
}

// Server is the fake.
type Server struct {
	*httptest.Server
	Clock clock.Clock
	// UpdatesPerMinute limits chat.update for the whole app (0: Config's
	// PerMinute); over it the fake answers 429 with Retry-After.
	UpdatesPerMinute int
	BotUserID        string
	BotID            string
	TeamID, AppID    string

	cfg      Config
	mu       sync.Mutex
	seq      int
	messages map[string]*Message // by channel/ts
	order    []string
	requests []Request
	calls    map[string][]time.Time // accepted calls by method, within the last minute
	posts    map[string]*bucket     // chat.postMessage by channel
	refused  map[string]int         // chat.update rate limits by message ts
	refusals map[Refusal]int
	rng      *rand.Rand
	channels map[string]*channelState
	said     map[string]*said // users' messages pushed, by channel/ts
	scopes   map[string][]string
	authErr  string
	closed   bool

	sock socketState
}

type channelState struct{ archived, out bool }

type said struct{ user, text, thread string }

// New starts a lenient fake on clk (clock.Real{} when nil).
func New(clk clock.Clock) *Server { return NewWith(clk, Lenient()) }

// NewStrict starts a fake that behaves like Slack (Strict()) on clk.
func NewStrict(clk clock.Clock) *Server { return NewWith(clk, Strict()) }

// NewWith starts a fake configured by cfg on clk (clock.Real{} when nil).
func NewWith(clk clock.Clock, cfg Config) *Server {
	if clk == nil {
		clk = clock.Real{}
	}
	s := &Server{Clock: clk, BotUserID: "UBOT", BotID: "B1", TeamID: "T1", AppID: "A1", cfg: cfg,
		messages: map[string]*Message{}, calls: map[string][]time.Time{}, posts: map[string]*bucket{},
		refused: map[string]int{}, refusals: map[Refusal]int{}, rng: rand.New(rand.NewPCG(cfg.Seed, 1)),
		channels: map[string]*channelState{}, said: map[string]*said{}, scopes: map[string][]string{}}
	s.sock.init()
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the API URL for slack.OptionAPIURL (with its trailing slash).
func (s *Server) URL() string { return s.Server.URL + "/" }

// Close closes the sockets and the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := slices.Clone(s.sock.conns)
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.Server.Close()
}

// The scope each method needs, and the kind of token it takes.
var needs = map[string]struct{ scope, token string }{
	"chat.postMessage":      {"chat:write", "bot"},
	"chat.update":           {"chat:write", "bot"},
	"chat.delete":           {"chat:write", "bot"},
	"auth.test":             {"", ""},
	"apps.connections.open": {"connections:write", "app"},
}

// answer is what the fake replies to one call.
type answer struct {
	status int
	retry  int // Retry-After, with a 429
	body   map[string]any
}

func ok(v map[string]any) answer {
	v["ok"] = true
	return answer{status: http.StatusOK, body: v}
}

func fail(err string) answer {
	return answer{status: http.StatusOK, body: map[string]any{"ok": false, "error": err}}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" {
		s.socket(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/")
	r.ParseForm()
	body := r.PostForm.Encode()
	token := r.PostForm.Get("token")
	if h := r.Header.Get("Authorization"); token == "" && strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimPrefix(h, "Bearer ")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	a := s.call(method, token, r)
	errCode, _ := a.body["error"].(string)
	s.requests = append(s.requests, Request{Method: method, At: now, Body: body, Status: a.status, Error: errCode})
	if a.status != http.StatusOK || errCode != "" {
		s.refusals[Refusal{method, a.status, errCode}]++
	}
	w.Header().Set("Content-Type", "application/json")
	if a.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", fmt.Sprint(a.retry))
	}
	w.WriteHeader(a.status)
	json.NewEncoder(w).Encode(a.body)
}

// call answers one Web API call, with s.mu held.
func (s *Server) call(method, token string, r *http.Request) answer {
	need, known := needs[method]
	if !known {
		return fail("unknown_method")
	}
	if a, bad := s.authorize(method, token, need.scope, need.token); bad {
		return a
	}
	if a, limited := s.limit(method, r.PostForm.Get("channel")); limited {
		if method == "chat.update" {
			s.refused[r.PostForm.Get("ts")]++
		}
		return a
	}
	f := r.PostForm
	switch method {
	case "auth.test":
		return ok(map[string]any{"url": "https://fake.slack.com/", "team": "Fake", "user": "runehost",
			"user_id": s.BotUserID, "team_id": s.TeamID, "bot_id": s.BotID})
	case "apps.connections.open":
		s.sock.tickets++
		return ok(map[string]any{"url": fmt.Sprintf("ws://%s/ws?ticket=%d&app_id=%s", r.Host, s.sock.tickets, s.AppID)})
	case "chat.postMessage":
		return s.post(f.Get("channel"), f.Get("thread_ts"), f.Get("text"), f.Get("blocks"), f.Get("attachments"))
	case "chat.update":
		return s.update(f.Get("channel"), f.Get("ts"), f.Get("text"), f.Get("blocks"), f.Get("attachments"))
	case "chat.delete":
		m := s.messages[f.Get("channel")+"/"+f.Get("ts")]
		if m == nil || m.Deleted {
			return fail("message_not_found")
		}
		s.deleteLocked(m)
		return ok(map[string]any{"channel": m.Channel, "ts": m.TS})
	}
	return fail("unknown_method")
}

// authorize checks the token and the scopes: it reports true with the
// error to answer.
func (s *Server) authorize(method, token, scope, kind string) (answer, bool) {
	if s.authErr != "" {
		return fail(s.authErr), true
	}
	app := strings.HasPrefix(token, "xapp-")
	if s.cfg.CheckTokens {
		switch {
		case token == "":
			return fail("not_authed"), true
		case app && s.cfg.AppToken != "" && token != s.cfg.AppToken,
			!app && s.cfg.BotToken != "" && token != s.cfg.BotToken,
			!app && !strings.HasPrefix(token, "xoxb-") && !strings.HasPrefix(token, "xoxp-"):
			return fail("invalid_auth"), true
		case kind == "bot" && app:
			return fail("not_allowed_token_type"), true
		}
	}
	if kind == "app" && s.cfg.RequireAppToken && !app {
		return fail("not_allowed_token_type"), true
	}
	if scope == "" {
		return answer{}, false
	}
	granted, set := s.scopes[kind]
	if set && !slices.Contains(granted, scope) {
		a := fail("missing_scope")
		a.body["needed"], a.body["provided"] = scope, strings.Join(granted, ",")
		return a, true
	}
	return answer{}, false
}

func (s *Server) channel(id string) *channelState {
	c := s.channels[id]
	if c == nil {
		c = &channelState{}
		s.channels[id] = c
	}
	return c
}

func (s *Server) post(channel, thread, text, blocks, attachments string) answer {
	if channel == "" {
		return fail("channel_not_found")
	}
	switch c := s.channel(channel); {
	case c.archived:
		return fail("is_archived")
	case c.out:
		return fail("not_in_channel")
	}
	if a, bad := s.check(text, blocks, attachments); bad {
		return a
	}
	s.seq++
	ts := fmt.Sprintf("%d.%06d", 1700000000+s.seq, s.seq)
	m := &Message{Channel: channel, TS: ts, ThreadTS: thread, Text: text, Blocks: blocks}
	s.messages[channel+"/"+ts] = m
	s.order = append(s.order, channel+"/"+ts)
	if s.cfg.Echo {
		ev := s.botMessage(m)
		ev["event_ts"] = ts
		s.pushLocked(ev)
	}
	return ok(map[string]any{"channel": channel, "ts": ts, "message": s.botMessage(m)})
}

func (s *Server) update(channel, ts, text, blocks, attachments string) answer {
	switch c := s.channel(channel); {
	case c.archived:
		return fail("is_archived")
	case c.out:
		return fail("channel_not_found")
	}
	m := s.messages[channel+"/"+ts]
	if m == nil || m.Deleted {
		if s.said[channel+"/"+ts] != nil {
			return fail("cant_update_message")
		}
		return fail("message_not_found")
	}
	if blocks == "" {
		// Not Slack's: Slack takes it and drops the blocks. The fake refuses
		// it so that a card never loses its blocks unnoticed.
		return fail("no_blocks")
	}
	if a, bad := s.check(text, blocks, attachments); bad {
		return a
	}
	before := *m
	m.Text, m.Blocks = text, blocks
	m.Edits++
	if s.cfg.Echo {
		s.pushLocked(s.changed(m, &before))
	}
	return ok(map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text})
}

func (s *Server) check(text, blocks, attachments string) (answer, bool) {
	if !s.cfg.ValidateBlocks {
		return answer{}, false
	}
	code, msgs := checkMessage(text, blocks, attachments, s.cfg.MaxBlocksText)
	if code == "" {
		return answer{}, false
	}
	a := fail(code)
	if len(msgs) > 0 {
		a.body["response_metadata"] = map[string]any{"messages": msgs}
	}
	return a, true
}

// eventTS is a fresh ts on the fake's clock, for events that are not
// messages of their own.
func (s *Server) eventTS() string {
	s.seq++
	return fmt.Sprintf("%d.%06d", s.Clock.Now().Unix(), s.seq%1000000)
}

// botMessage is m as Slack shows a message the bot posted with its bot
// token: no subtype, bot_id and the bot's user.
func (s *Server) botMessage(m *Message) map[string]any {
	ev := map[string]any{"type": "message", "channel": m.Channel, "channel_type": "channel", "user": s.BotUserID,
		"bot_id": s.BotID, "app_id": s.AppID, "team": s.TeamID, "text": m.Text, "ts": m.TS,
		"bot_profile": map[string]any{"id": s.BotID, "app_id": s.AppID, "name": "runehost", "team_id": s.TeamID, "deleted": false}}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
		ev["parent_user_id"] = s.BotUserID
	}
	if m.Blocks != "" && json.Valid([]byte(m.Blocks)) {
		ev["blocks"] = json.RawMessage(m.Blocks)
	}
	return ev
}

// changed is the message_changed event of an edit from before to m.
func (s *Server) changed(m, before *Message) map[string]any {
	ts := s.eventTS()
	now := s.botMessage(m)
	now["edited"] = map[string]any{"user": s.BotUserID, "ts": ts}
	delete(now, "channel")
	prev := s.botMessage(before)
	delete(prev, "channel")
	return map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel": m.Channel,
		"channel_type": "channel", "ts": ts, "event_ts": ts, "message": now, "previous_message": prev}
}

func (s *Server) deleteLocked(m *Message) {
	m.Deleted = true
	if s.cfg.Echo {
		ts := s.eventTS()
		prev := s.botMessage(m)
		delete(prev, "channel")
		s.pushLocked(map[string]any{"type": "message", "subtype": "message_deleted", "hidden": true, "channel": m.Channel,
			"channel_type": "channel", "ts": ts, "event_ts": ts, "deleted_ts": m.TS, "previous_message": prev})
	}
}

// Delete deletes a message (as a person or an admin might): an update of it
// then fails with message_not_found.
func (s *Server) Delete(channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.messages[channel+"/"+ts]; m != nil && !m.Deleted {
		s.deleteLocked(m)
	}
}

// Archive archives a channel: posts and updates there fail with is_archived.
func (s *Server) Archive(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channel(channel).archived = true
}

// Kick removes the bot from a channel: a post there fails with
// not_in_channel, an update with channel_not_found.
func (s *Server) Kick(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channel(channel).out = true
}

// Join puts the bot back in a channel.
func (s *Server) Join(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channel(channel).out = false
}

// SetBotScopes grants the bot token only these scopes: a method needing
// another fails with missing_scope, needed and provided.
func (s *Server) SetBotScopes(scopes ...string) { s.setScopes("bot", scopes) }

// SetAppScopes grants the app-level token only these scopes
// (apps.connections.open needs connections:write).
func (s *Server) SetAppScopes(scopes ...string) { s.setScopes("app", scopes) }

func (s *Server) setScopes(kind string, scopes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes[kind] = append([]string{}, scopes...)
}

// FailAuth makes every call fail with err (invalid_auth, token_revoked,
// account_inactive...) until FailAuth("").
func (s *Server) FailAuth(err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authErr = err
}

// RateLimitAs200 switches how a call over a limit is refused: HTTP 200
// rate_limited (on) or HTTP 429 with Retry-After (off).
func (s *Server) RateLimitAs200(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.RateLimitedAs200 = on
}

// Messages returns the messages posted, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, k := range s.order {
		out = append(out, *s.messages[k])
	}
	return out
}

// Requests returns every request received.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Refused counts the chat.update calls refused for a rate limit (429 or
// 200 rate_limited), by message.
func (s *Server) Refused() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.refused)
}

// Refusals counts every answer that was not ok, by method, status and error.
func (s *Server) Refusals() map[Refusal]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.refusals)
}

// MaxUpdatesPerMinute is the most chat.update calls accepted in any minute.
func (s *Server) MaxUpdatesPerMinute() int { return s.MaxPerMinute("chat.update") }

// MaxPerMinute is the most calls of method that got past the rate limits in
// any minute (those that failed later, on their content, count: Slack counts
// them too).
func (s *Server) MaxPerMinute(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var times []time.Time
	for _, r := range s.requests {
		if r.Method == method && r.Status == 200 && r.Error != "rate_limited" {
			times = append(times, r.At)
		}
	}
	best := 0
	for i := range times {
		n := 0
		for j := i; j < len(times) && times[j].Sub(times[i]) < time.Minute; j++ {
			n++
		}
		best = max(best, n)
	}
	return best
}
