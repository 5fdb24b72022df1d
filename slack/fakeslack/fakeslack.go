// Package fakeslack is a fake Slack Web API for tests, driven by the real
// slack-go client through its API URL option: chat.postMessage,
// chat.update, auth.test, apps.connections.open and a Socket Mode websocket,
// with Slack's rate limits and Retry-After on its own clock. It keeps every
// request body, so a test can look for what must never be sent.
package fakeslack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/runehost/runehost/slack/clock"
)

// Message is a message as the fake keeps it.
type Message struct {
	Channel, TS, ThreadTS string
	Text                  string
	Blocks                string // JSON
	Edits                 int
}

// Request is a call the fake received.
type Request struct {
	Method string
	At     time.Time
	Body   string // form-encoded or JSON, as sent
	Status int    // what the fake answered
}

// Server is the fake.
type Server struct {
	*httptest.Server
	Clock clock.Clock
	// UpdatesPerMinute limits chat.update for the whole app (0: no limit);
	// over it the fake answers 429 with Retry-After.
	UpdatesPerMinute int
	BotUserID        string

	mu       sync.Mutex
	seq      int
	messages map[string]*Message // by ts
	order    []string
	requests []Request
	updates  []time.Time // accepted chat.update times
	refused  map[string]int
	conns    []*websocket.Conn
	acks     map[string]bool
	envSeq   int
	connOpen chan struct{}
}

// New starts a fake on clk (clock.Real{} when nil).
func New(clk clock.Clock) *Server {
	if clk == nil {
		clk = clock.Real{}
	}
	s := &Server{Clock: clk, BotUserID: "UBOT", messages: map[string]*Message{}, refused: map[string]int{}, acks: map[string]bool{}, connOpen: make(chan struct{}, 8)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the API URL for slack.OptionAPIURL (with its trailing slash).
func (s *Server) URL() string { return s.Server.URL + "/" }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" {
		s.socket(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/")
	r.ParseForm()
	body := r.PostForm.Encode()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	retry := 1
	reply := func(status int, v map[string]any) {
		s.requests = append(s.requests, Request{Method: method, At: now, Body: body, Status: status})
		w.Header().Set("Content-Type", "application/json")
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", fmt.Sprint(retry))
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	switch method {
	case "auth.test":
		reply(200, map[string]any{"ok": true, "user_id": s.BotUserID, "team_id": "T1", "bot_id": "B1"})
	case "apps.connections.open":
		reply(200, map[string]any{"ok": true, "url": "ws://" + r.Host + "/ws"})
	case "chat.postMessage":
		s.seq++
		ts := fmt.Sprintf("%d.%06d", 1700000000+s.seq, s.seq)
		m := &Message{Channel: r.PostForm.Get("channel"), TS: ts, ThreadTS: r.PostForm.Get("thread_ts"), Text: r.PostForm.Get("text"), Blocks: r.PostForm.Get("blocks")}
		if m.Channel == "" {
			reply(200, map[string]any{"ok": false, "error": "channel_not_found"})
			return
		}
		s.messages[ts] = m
		s.order = append(s.order, ts)
		reply(200, map[string]any{"ok": true, "channel": m.Channel, "ts": ts})
	case "chat.update":
		m := s.messages[r.PostForm.Get("ts")]
		if m == nil {
			reply(200, map[string]any{"ok": false, "error": "message_not_found"})
			return
		}
		if s.UpdatesPerMinute > 0 {
			kept := s.updates[:0]
			for _, t := range s.updates {
				if now.Sub(t) < time.Minute {
					kept = append(kept, t)
				}
			}
			s.updates = kept
			if len(s.updates) >= s.UpdatesPerMinute {
				s.refused[m.TS]++
				// Retry-After: until the oldest call in the window leaves it.
				retry = int(s.updates[0].Add(time.Minute).Sub(now).Seconds()) + 1
				reply(http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
				return
			}
		}
		s.updates = append(s.updates, now)
		if r.PostForm.Get("blocks") == "" {
			reply(200, map[string]any{"ok": false, "error": "no_blocks"}) // an update with text alone drops the blocks
			return
		}
		m.Text, m.Blocks = r.PostForm.Get("text"), r.PostForm.Get("blocks")
		m.Edits++
		reply(200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
	default:
		reply(200, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1, "connection_info": map[string]any{"app_id": "A1"}})
	s.mu.Lock()
	s.conns = append(s.conns, conn)
	s.mu.Unlock()
	s.connOpen <- struct{}{}
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := conn.ReadJSON(&ack); err != nil {
			return
		}
		s.mu.Lock()
		s.acks[ack.EnvelopeID] = true
		s.mu.Unlock()
	}
}

// WaitConnected waits for a Socket Mode client to connect.
func (s *Server) WaitConnected(d time.Duration) bool {
	select {
	case <-s.connOpen:
		return true
	case <-time.After(d):
		return false
	}
}

// Push sends an Events API event to the connected Socket Mode clients, as
// Slack does, and returns its envelope id.
func (s *Server) Push(event map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.envSeq++
	id := fmt.Sprintf("env-%d", s.envSeq)
	env := map[string]any{
		"envelope_id": id, "type": "events_api", "accepts_response_payload": false,
		"payload": map[string]any{"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
			"event_id": fmt.Sprintf("Ev%d", s.envSeq), "event_time": 1700000000, "event": event},
	}
	for _, c := range s.conns {
		c.WriteJSON(env)
	}
	return id
}

// Mention pushes an app_mention of the bot in channel, and returns its ts.
func (s *Server) Mention(channel, user, text string) string {
	ts := fmt.Sprintf("%d.000100", 1700000000+s.bump())
	s.Push(map[string]any{"type": "app_mention", "user": user, "channel": channel, "ts": ts, "event_ts": ts, "text": "<@" + s.BotUserID + "> " + text})
	return ts
}

// MentionInThread pushes a mention posted inside an existing thread.
func (s *Server) MentionInThread(channel, threadTS, user, text string) string {
	ts := fmt.Sprintf("%d.000150", 1700000000+s.bump())
	s.Push(map[string]any{"type": "app_mention", "user": user, "channel": channel, "ts": ts, "event_ts": ts, "thread_ts": threadTS, "text": "<@" + s.BotUserID + "> " + text})
	return ts
}

// ReplyMentioning pushes a thread reply that mentions the bot: Slack sends
// it twice, as a message and as a mention, with different event ids.
func (s *Server) ReplyMentioning(channel, threadTS, user, text string) {
	ts := fmt.Sprintf("%d.000250", 1700000000+s.bump())
	s.Push(map[string]any{"type": "message", "user": user, "channel": channel, "ts": ts, "event_ts": ts, "thread_ts": threadTS, "text": "<@" + s.BotUserID + "> " + text})
	s.Push(map[string]any{"type": "app_mention", "user": user, "channel": channel, "ts": ts, "event_ts": ts, "thread_ts": threadTS, "text": "<@" + s.BotUserID + "> " + text})
}

// Reply pushes a message in a thread.
func (s *Server) Reply(channel, threadTS, user, text string) {
	ts := fmt.Sprintf("%d.000200", 1700000000+s.bump())
	s.Push(map[string]any{"type": "message", "user": user, "channel": channel, "ts": ts, "event_ts": ts, "thread_ts": threadTS, "text": text})
}

func (s *Server) bump() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// Acked reports whether an envelope was acknowledged.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[id]
}

// Messages returns the messages posted, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, ts := range s.order {
		out = append(out, *s.messages[ts])
	}
	return out
}

// Requests returns every request received.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Refused counts the chat.update calls refused with 429, by message.
func (s *Server) Refused() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.refused {
		out[k] = v
	}
	return out
}

// MaxUpdatesPerMinute is the most chat.update calls accepted in any minute.
func (s *Server) MaxUpdatesPerMinute() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var times []time.Time
	for _, r := range s.requests {
		if r.Method == "chat.update" && r.Status == 200 {
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
