// socket.go: Socket Mode as Slack runs it: hello on connect, websocket
// pings, disconnect with a reason, each envelope to one connection, and an
// envelope not acked within the deadline sent again with retry_attempt and
// retry_reason "timeout". Deadlines and retries go by the fake's clock, pings
// by the real one (slack-go's watchdog does).

package fakeslack

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

type socketState struct {
	conns       []*conn // live, oldest first
	connections int     // made since the start; a connection's id is its number
	tickets     int
	connOpen    chan struct{}
	changed     chan struct{} // closed and replaced on every connection, ack and delivery
	acks        map[string]bool
	envSeq      int
	envs        map[string]*envelope
	queue       []*envelope // waiting for a connection
	deliveries  []Delivery
	lateAcks    int
	pings       int
	pongs       int
	hook        *hook
}

func (st *socketState) init() {
	st.connOpen = make(chan struct{}, 64)
	st.changed = make(chan struct{})
	st.acks = map[string]bool{}
	st.envs = map[string]*envelope{}
}

// conn is one websocket connection.
type conn struct {
	id       int
	ws       *websocket.Conn
	wmu      sync.Mutex
	done     chan struct{}
	once     sync.Once
	draining bool // sent a disconnect: no new envelopes
}

func (c *conn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.ws.Close()
	})
}

// pushed is one event as Slack keeps it until acked.
type pushed struct {
	id      string // event_id
	envID   string // its first envelope's id; a retry's is envID.N
	payload map[string]any
	acked   bool
}

// envelope is one delivery of an event.
type envelope struct {
	id      string
	event   *pushed
	attempt int
	reason  string
	sentAt  time.Time
	missed  bool // its deadline passed unacked
	acked   bool
	stop    func()
	index   int // in deliveries
}

// Delivery is one envelope sent on the socket.
type Delivery struct {
	EnvelopeID, EventID string
	Type                string // the inner event's type
	Attempt             int    // retry_attempt
	Reason              string // retry_reason
	Conn                int    // which connection, from 1
	At                  time.Time
	Acked, Late         bool
	Dropped             bool // its ack was lost (Config.DropAcks)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, done: make(chan struct{})}
	ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		s.sock.pongs++
		s.mu.Unlock()
		return nil
	})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	st := &s.sock
	st.connections++
	c.id = st.connections
	st.conns = append(st.conns, c)
	c.write(map[string]any{"type": "hello", "num_connections": len(st.conns),
		"debug_info":      map[string]any{"host": fmt.Sprintf("applink-fake-%d", c.id), "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": s.AppID}})
	queued := st.queue
	st.queue = nil
	for _, env := range queued {
		s.deliverLocked(env)
	}
	s.notifyLocked()
	s.mu.Unlock()
	select {
	case st.connOpen <- struct{}{}:
	default:
	}
	if s.cfg.PingInterval > 0 {
		go s.ping(c)
	}
	defer s.drop(c)
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := ws.ReadJSON(&ack); err != nil {
			return
		}
		s.ack(ack.EnvelopeID)
	}
}

// ping pings c every PingInterval of real time until it closes.
func (s *Server) ping(c *conn) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if c.ws.WriteControl(websocket.PingMessage, []byte(strconv.Itoa(n)), time.Now().Add(5*time.Second)) != nil {
			return
		}
		s.mu.Lock()
		s.sock.pings++
		s.mu.Unlock()
	}
}

func (s *Server) drop(c *conn) {
	c.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sock.conns = slices.DeleteFunc(s.sock.conns, func(x *conn) bool { return x == c })
	s.notifyLocked()
}

func (s *Server) notifyLocked() {
	close(s.sock.changed)
	s.sock.changed = make(chan struct{})
}

func (s *Server) ack(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.sock
	env := st.envs[id]
	if env != nil && !env.acked && env.attempt < s.cfg.DropAcks {
		st.deliveries[env.index].Dropped = true // lost on the way: its deadline passes
		s.notifyLocked()
		return
	}
	st.acks[id] = true
	if env == nil || env.acked {
		return
	}
	env.acked = true
	env.event.acked = true
	if env.stop != nil {
		env.stop()
	}
	d := &st.deliveries[env.index]
	d.Acked = true
	if env.missed || s.cfg.AckDeadline > 0 && s.Clock.Now().Sub(env.sentAt) > s.cfg.AckDeadline {
		d.Late = true
		st.lateAcks++
	}
	s.notifyLocked()
}

// Push sends an Events API event as Slack does (over the socket, or to the
// Events API URL given to DeliverTo), and returns its envelope id.
func (s *Server) Push(event map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(event)
}

func (s *Server) pushLocked(event map[string]any) string {
	st := &s.sock
	st.envSeq++
	p := &pushed{id: fmt.Sprintf("Ev%d", st.envSeq)}
	p.payload = map[string]any{"token": "x", "team_id": s.TeamID, "api_app_id": s.AppID, "type": "event_callback",
		"event_id": p.id, "event_time": s.Clock.Now().Unix(), "event": event,
		"authorizations": []any{map[string]any{"team_id": s.TeamID, "user_id": s.BotUserID, "is_bot": true}}}
	id := fmt.Sprintf("env-%d", st.envSeq)
	p.envID = id
	if st.hook != nil {
		go s.postEvent(p, 0, "")
		return id
	}
	s.deliverLocked(&envelope{id: id, event: p})
	return id
}

// deliverLocked sends env on the newest live connection that was not told
// to disconnect, or queues it until one connects.
func (s *Server) deliverLocked(env *envelope) {
	st := &s.sock
	if s.closed {
		return
	}
	var c *conn
	for i := len(st.conns) - 1; i >= 0; i-- {
		if !st.conns[i].draining {
			c = st.conns[i]
			break
		}
	}
	if c == nil {
		st.queue = append(st.queue, env)
		return
	}
	msg := map[string]any{"envelope_id": env.id, "type": "events_api", "accepts_response_payload": false,
		"retry_attempt": env.attempt, "retry_reason": env.reason, "payload": env.event.payload}
	if err := c.write(msg); err != nil {
		st.conns = slices.DeleteFunc(st.conns, func(x *conn) bool { return x == c })
		go c.close()
		s.deliverLocked(env)
		return
	}
	env.sentAt = s.Clock.Now()
	st.envs[env.id] = env
	ev, _ := env.event.payload["event"].(map[string]any)
	typ, _ := ev["type"].(string)
	env.index = len(st.deliveries)
	st.deliveries = append(st.deliveries, Delivery{EnvelopeID: env.id, EventID: env.event.id, Type: typ, Attempt: env.attempt,
		Reason: env.reason, Conn: c.id, At: env.sentAt})
	if s.cfg.AckDeadline > 0 {
		env.stop = s.Clock.AfterFunc(s.cfg.AckDeadline, func() { s.expire(env) })
	}
	s.notifyLocked()
}

// expire runs at env's deadline: unacked, its event goes again after the
// next of Retries.
func (s *Server) expire(env *envelope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if env.acked || s.closed {
		return
	}
	env.missed = true
	if env.event.acked || env.attempt >= len(s.cfg.Retries) {
		return
	}
	again := func() {
		if env.event.acked || s.closed {
			return
		}
		n := env.attempt + 1
		s.deliverLocked(&envelope{id: fmt.Sprintf("%s.%d", env.event.envID, n), event: env.event, attempt: n, reason: "timeout"})
	}
	if d := s.cfg.Retries[env.attempt]; d > 0 {
		s.Clock.AfterFunc(d, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			again()
		})
		return
	}
	again()
}

// Disconnect sends every connection a disconnect message with reason
// ("warning", "refresh_requested", "link_disabled"), as Slack does before it
// drops a connection; slack-go then opens a new one. New envelopes wait for
// the new connection; the old one is closed after DisconnectGrace.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sock.conns {
		c.draining = true
		c.write(map[string]any{"type": "disconnect", "reason": reason,
			"debug_info": map[string]any{"host": fmt.Sprintf("applink-fake-%d", c.id)}})
		if s.cfg.DisconnectGrace > 0 {
			s.Clock.AfterFunc(s.cfg.DisconnectGrace, c.close)
		}
	}
}

// WaitConnected waits for a Socket Mode client to connect (each connection
// is waited for once).
func (s *Server) WaitConnected(d time.Duration) bool {
	select {
	case <-s.sock.connOpen:
		return true
	case <-time.After(d):
		return false
	}
}

// wait waits up to d of real time for cond, checked with s.mu held.
func (s *Server) wait(d time.Duration, cond func() bool) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return true
		}
		ch := s.sock.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

// WaitConnections waits for the n-th connection since the fake started.
func (s *Server) WaitConnections(n int, d time.Duration) bool {
	return s.wait(d, func() bool { return s.sock.connections >= n })
}

// WaitAcked waits for the envelope id to be acked.
func (s *Server) WaitAcked(id string, d time.Duration) bool {
	return s.wait(d, func() bool { return s.sock.acks[id] })
}

// WaitDeliveries waits until n envelopes have been sent.
func (s *Server) WaitDeliveries(n int, d time.Duration) bool {
	return s.wait(d, func() bool { return len(s.sock.deliveries) >= n })
}

// Connections counts the connections made since the fake started.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.connections
}

// Connected counts the connections open now.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sock.conns)
}

// Acked reports whether an envelope was acknowledged (in time or late).
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.acks[id]
}

// LateAcks counts the acks that came after their envelope's deadline.
func (s *Server) LateAcks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.lateAcks
}

// Deliveries returns the envelopes sent, in order.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sock.deliveries)
}

// Pings counts the websocket pings sent, and Pongs the pongs received.
func (s *Server) Pings() (pings, pongs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.pings, s.sock.pongs
}
