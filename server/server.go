// Package server is runehost's HTTP API (docs/api.md) over one engine: the
// routes, their authentication, the live event streams, the run page and
// its capability links, and the metrics. `runehost serve` runs it.
package server

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/metrics"
	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/server/page"
)

// MaxBody is the largest request body: a prog's source and a 16 MiB input,
// as JSON.
const MaxBody = 48 << 20

// Config is what a server serves.
type Config struct {
	Service *Service
	Links   *links.Links
	Metrics *metrics.Metrics // nil: no /metrics
	Token   string           // the bearer token TCP requests must carry
	BaseURL string           // of links to pages: BASE/r/TOKEN
	Log     *slog.Logger
	Version string
	// MaxStreams caps the live event streams the server holds at once,
	// and MaxStreamsPerLink those of one run page's link (and of one run's
	// tree, of the API's streams); past either a stream is answered 429
	// with Retry-After. 0: DefaultMaxStreams, DefaultMaxStreamsPerLink.
	MaxStreams        int
	MaxStreamsPerLink int
}

// Server serves the API.
type Server struct {
	cfg      Config
	svc      *Service
	hub      hub
	windows  windows // encoded events, shared by the streams of a run
	streams  slots   // the live streams, against their caps
	mux      *http.ServeMux
	stopping chan struct{}
	stopOnce func()
	patterns []string // the routes, for docs/api.md's test
	// poll is how often a live stream reads the store for what no one
	// told it: StreamPoll, or SharedStreamPoll where hosts tell each other.
	poll time.Duration
	ping time.Duration // how often an idle stream says it lives: 15 s
}

// StreamPoll is how often a live stream reads the store for a change no
// one told it of (a command that wrote the store without the server).
// On a store shared by hosts the host that drives a tree tells the
// others of each change (host.Engine.TellChanged), and streams read it at
// once; SharedStreamPoll is then only a floor, for a lost word.
const (
	StreamPoll       = 250 * time.Millisecond
	SharedStreamPoll = 2 * time.Second
)

// New returns a server. Its engine's OnEvent and its loop's OnTurn are
// chained to wake the streams.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, svc: cfg.Service, mux: http.NewServeMux(), stopping: make(chan struct{})}
	s.streams.max, s.streams.perMax = cfg.MaxStreams, cfg.MaxStreamsPerLink
	var once bool
	s.stopOnce = func() {
		if !once {
			once = true
			close(s.stopping)
		}
	}
	e := cfg.Service.E
	s.poll, s.ping = StreamPoll, 15*time.Second
	if e.Store.Shared() {
		s.poll = SharedStreamPoll
		s.hub.hear = func(root string) func() {
			stop, err := e.HearChanged(root, func() { s.hub.publish(root) })
			if err != nil {
				cfg.Log.Warn("streams of a tree will poll: cannot hear its changes", "root", root, "err", err)
				return func() {}
			}
			return stop
		}
	}
	prev := e.OnEvent
	e.OnEvent = func(ev events.Event) {
		if prev != nil {
			prev(ev)
		}
		s.hub.publish(ev.Run)
	}
	if l := cfg.Service.Loop; l != nil {
		prevTurn := l.OnTurn
		l.OnTurn = func(t host.Turn) {
			if prevTurn != nil {
				prevTurn(t)
			}
			s.hub.publish(t.Invocation)
		}
	}
	s.routes()
	return s
}

// Stop ends the live streams (the server is draining): their clients
// reconnect to the next server and resume where they were.
func (s *Server) Stop() { s.stopOnce() }

// Publish wakes the streams of inv's tree.
func (s *Server) Publish(inv string) { s.hub.publish(inv) }

func (s *Server) handle(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, s.cfg.Metrics.Middleware(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No record's id holds a zero byte (no store key may): such an id
		// names nothing.
		if strings.IndexByte(r.PathValue("id"), 0) >= 0 || strings.IndexByte(r.URL.Query().Get("run"), 0) >= 0 {
			if strings.HasPrefix(pattern, "GET "+page.PagePath) {
				page.NotFound(w)
				return
			}
			writeError(w, api.Errorf(api.CodeNotFound, "%q: no such invocation", r.PathValue("id")))
			return
		}
		h.ServeHTTP(w, r)
	})))
}

// Routes are the patterns the server serves, in the order registered.
func (s *Server) Routes() []string { return slices.Clone(s.patterns) }

func (s *Server) routes() {
	s.handle("GET /healthz", http.HandlerFunc(s.healthz))
	if s.cfg.Metrics != nil {
		s.handle("GET /metrics", s.cfg.Metrics.Handler())
	}
	s.handle("POST /v1/runs", http.HandlerFunc(s.postRun))
	s.handle("GET /v1/invocations", http.HandlerFunc(s.getList))
	s.handle("GET /v1/invocations/{id}", http.HandlerFunc(s.getInspect))
	s.handle("GET /v1/invocations/{id}/checkpoint", http.HandlerFunc(s.getCheckpoint))
	s.handle("GET /v1/invocations/{id}/state", http.HandlerFunc(s.getState))
	s.handle("GET /v1/invocations/{id}/events", http.HandlerFunc(s.getEvents))
	s.handle("POST /v1/invocations/{id}/send", http.HandlerFunc(s.postSend))
	s.handle("POST /v1/invocations/{id}/resume", http.HandlerFunc(s.postResume))
	s.handle("POST /v1/invocations/{id}/cancel", http.HandlerFunc(s.postCancel))
	s.handle("POST /v1/invocations/{id}/acts/{ordinal}/resolve", http.HandlerFunc(s.postResolve))
	s.handle("GET /v1/grants", http.HandlerFunc(s.getGrants))
	s.handle("POST /v1/grants", http.HandlerFunc(s.postGrant))
	s.handle("POST /v1/grants/revoke", http.HandlerFunc(s.postRevoke))
	s.handle("POST /v1/invocations/{id}/links", http.HandlerFunc(s.postLink))
	s.handle("GET /v1/invocations/{id}/links", http.HandlerFunc(s.getLinks))
	s.handle("POST /v1/invocations/{id}/links/revoke", http.HandlerFunc(s.postRevokeLinks))
	pages := page.Handler(pageSource{s})
	s.handle("GET "+page.PagePath, pages)
	s.handle("GET "+page.AssetPath, pages)
	s.handle("GET "+page.FaviconPath, pages)
	s.handle("GET "+page.EventsPath, http.HandlerFunc(s.getPageEvents))
	s.handle("GET /runs", page.Index(indexSource{s}))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.Errorf(api.CodeNotFound, "no route %s %s (docs/api.md)", r.Method, r.URL.Path))
	})
}

// Handler is the API for a trusted transport (the Unix socket, whose file
// permissions are its protection).
func (s *Server) Handler() http.Handler { return s.mux }

// TCPHandler is the API for TCP: every route but /healthz and the pages
// (their capability links are their authority) wants the bearer token.
func (s *Server) TCPHandler() http.Handler {
	want := []byte("Bearer " + s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		open := p == "/healthz" || p == page.FaviconPath || strings.HasPrefix(p, "/r/") || strings.HasPrefix(p, page.AssetPath)
		if !open {
			got := []byte(r.Header.Get("Authorization"))
			if q := r.URL.Query().Get("token"); p == "/runs" && q != "" {
				got = []byte("Bearer " + q) // the index is opened in a browser
			}
			if s.cfg.Token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="runehost"`)
				writeError(w, api.Errorf(api.CodeUnauthorized, "this route wants the server's bearer token (Authorization: Bearer TOKEN; see runehost serve --token-file)"))
				return
			}
		}
		s.mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// answer writes v with status, or err as the API's error.
func answer(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, status, v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		ae = &api.Error{Code: api.CodeInternal, Message: err.Error()}
	}
	writeJSON(w, ae.Status(), api.ErrorBody{Error: ae})
}

// decode reads a JSON body into v, refusing what is over MaxBody or is not
// one JSON value of the right shape.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return api.Errorf(api.CodeTooLarge, "the request body is over %d bytes", MaxBody)
		}
		if errors.Is(err, io.EOF) {
			return api.Errorf(api.CodeBadRequest, "want a JSON body")
		}
		return api.Errorf(api.CodeBadRequest, "the request body: %v", err)
	}
	if dec.More() {
		return api.Errorf(api.CodeBadRequest, "the request body has more than one JSON value")
	}
	return nil
}

// decodeOptional is decode for a body that may be left out.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decode(w, r, v)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	status := "ok"
	select {
	case <-s.stopping:
		status = "stopping"
	default:
	}
	writeJSON(w, http.StatusOK, api.Health{Status: status, PID: os.Getpid(), Version: s.cfg.Version, Host: s.svc.E.Host(), Fenced: s.svc.E.Fenced()})
}

func (s *Server) postRun(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	resp, err := s.svc.Run(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.cfg.Log.Info("admitted", "invocation", resp.Invocation, "prog", req.Prog)
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) getList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, api.Errorf(api.CodeBadRequest, "limit %q: want a number", v))
			return
		}
		limit = n
	}
	var statuses []string
	for _, v := range q["status"] {
		statuses = append(statuses, strings.Split(v, ",")...)
	}
	l, err := s.svc.List(statuses, q.Get("after"), limit)
	answer(w, http.StatusOK, l, err)
}

func (s *Server) getInspect(w http.ResponseWriter, r *http.Request) {
	in, err := s.svc.Inspect(r.PathValue("id"))
	answer(w, http.StatusOK, in, err)
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request) {
	cp, err := s.svc.Checkpoint(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.Write(cp)
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.State(r.PathValue("id"))
	answer(w, http.StatusOK, st, err)
}

// getEvents is the run log: a JSON array, or with Accept: text/event-stream
// the live stream.
func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	inv, q := r.PathValue("id"), r.URL.Query()
	if _, err := s.svc.State(inv); err != nil {
		writeError(w, err)
		return
	}
	from := uint64(1)
	if v := q.Get("from"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, api.Errorf(api.CodeBadRequest, "from %q: want a seq", v))
			return
		}
		from = max(n, 1)
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		limit := 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeError(w, api.Errorf(api.CodeBadRequest, "limit %q: want a number", v))
				return
			}
			limit = n
		}
		evs, err := s.svc.Events(inv, from, limit)
		if err != nil {
			writeError(w, err)
			return
		}
		if evs == nil {
			evs = []events.Event{}
		}
		writeJSON(w, http.StatusOK, evs)
		return
	}
	tree := q.Get("tree") == "1" || q.Get("tree") == "true"
	c := q.Get("cursor")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		c = id
	}
	cur, err := ParseCursor(inv, c)
	if err != nil {
		writeError(w, err)
		return
	}
	if c == "" && from > 1 {
		cur[inv] = from - 1
	}
	root := rootOf(inv)
	release, refused := s.streams.take("run:"+root, "run "+root+"'s tree")
	if refused != nil {
		refuse(w, refused)
		return
	}
	defer release()
	if err := s.stream(r.Context(), w, Follow{Inv: inv, Tree: tree, Cursor: cur, UntilSettled: q.Get("until") == "settled"}); err != nil {
		s.cfg.Log.Warn("event stream ended", "invocation", inv, "err", err)
	}
}

// cursorNow is the tree stream's position now, for an action's answer.
func (s *Server) cursorNow(inv string) string {
	ids, err := s.svc.E.Tree(inv)
	if err != nil {
		return ""
	}
	c := Cursor{}
	for _, id := range ids {
		if n, err := s.svc.E.LastSeq(id); err == nil && n > 0 {
			c[id] = n
		}
	}
	return c.String(inv, true)
}

// act answers an action that drives an invocation on: where its tree's
// stream stood before it, for the caller to follow.
func (s *Server) act(w http.ResponseWriter, inv string, f func() (*api.RunState, error)) {
	c := s.cursorNow(inv)
	st, err := f()
	if err != nil {
		writeError(w, err)
		return
	}
	st.Cursor = c
	s.hub.publish(inv)
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) postSend(w http.ResponseWriter, r *http.Request) {
	var req api.Send
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.act(w, r.PathValue("id"), func() (*api.RunState, error) { return s.svc.Send(r.PathValue("id"), req) })
}

func (s *Server) postResume(w http.ResponseWriter, r *http.Request) {
	s.act(w, r.PathValue("id"), func() (*api.RunState, error) { return s.svc.Resume(r.PathValue("id")) })
}

func (s *Server) postCancel(w http.ResponseWriter, r *http.Request) {
	inv := r.PathValue("id")
	s.act(w, inv, func() (*api.RunState, error) {
		if err := s.svc.Cancel(inv); err != nil {
			return nil, err
		}
		s.cfg.Log.Info("cancelled", "invocation", inv)
		return s.svc.State(inv)
	})
}

func (s *Server) postResolve(w http.ResponseWriter, r *http.Request) {
	ord, err := ParseOrdinal(r.PathValue("ordinal"))
	if err != nil {
		writeError(w, err)
		return
	}
	var req api.Resolve
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.act(w, r.PathValue("id"), func() (*api.RunState, error) { return s.svc.Resolve(r.PathValue("id"), ord, req) })
}

func (s *Server) getGrants(w http.ResponseWriter, r *http.Request) {
	gs, err := s.svc.Grants(r.URL.Query().Get("prog"))
	answer(w, http.StatusOK, gs, err)
}

func (s *Server) postGrant(w http.ResponseWriter, r *http.Request) {
	s.grants(w, r, "granted", func(req api.GrantRequest) (any, error) { return s.svc.Grant(req) })
}

func (s *Server) postRevoke(w http.ResponseWriter, r *http.Request) {
	s.grants(w, r, "revoked", func(req api.GrantRequest) (any, error) { return s.svc.Revoke(req) })
}

// grants answers a change of grants, logged as done when it is.
func (s *Server) grants(w http.ResponseWriter, r *http.Request, done string, change func(api.GrantRequest) (any, error)) {
	var req api.GrantRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	v, err := change(req)
	if err == nil {
		s.cfg.Log.Info(done, "prog", prog(req.Prog), "statements", req.Statements)
	}
	answer(w, http.StatusOK, v, err)
}

func (s *Server) postLink(w http.ResponseWriter, r *http.Request) {
	inv := r.PathValue("id")
	var req api.LinkRequest
	if err := decodeOptional(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	var ttl time.Duration
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 {
			writeError(w, api.Errorf(api.CodeBadRequest, "ttl %q: want a positive duration, such as 24h", req.TTL))
			return
		}
		ttl = d
	}
	if _, err := s.svc.State(inv); err != nil {
		writeError(w, err)
		return
	}
	token, l, err := s.cfg.Links.Create(inv, ttl)
	if err != nil {
		writeError(w, err)
		return
	}
	out := apiLink(l)
	out.Token = token
	if s.cfg.BaseURL != "" { // no pages served: no URL that would open
		out.URL = strings.TrimSuffix(s.cfg.BaseURL, "/") + "/r/" + token
	}
	writeJSON(w, http.StatusCreated, out)
}

func apiLink(l links.Link) api.Link {
	return api.Link{ID: l.ID, Run: l.Run, Created: l.Created, Expires: l.Expires, Revoked: l.Revoked}
}

func (s *Server) getLinks(w http.ResponseWriter, r *http.Request) {
	ls, err := s.cfg.Links.List(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := []api.Link{}
	for _, l := range ls {
		out = append(out, apiLink(l))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) postRevokeLinks(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if err := decodeOptional(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	n, err := s.cfg.Links.Revoke(r.PathValue("id"), req.ID)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"revoked": n})
}

// getPageEvents is the page's stream: its token is its authority, and a
// wrong one is the same 404 as the page's.
func (s *Server) getPageEvents(w http.ResponseWriter, r *http.Request) {
	root, ok := s.pageRun(r.PathValue("token"), r.URL.Query().Get("run"))
	if !ok {
		page.NotFound(w)
		return
	}
	run := cmp.Or(r.URL.Query().Get("run"), root)
	c := r.URL.Query().Get("cursor")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		c = id
	}
	cur, err := ParseCursor(run, c)
	if err != nil {
		writeError(w, err)
		return
	}
	// Counted by the link: one link shared widely cannot take every
	// slot of the run's other links, or of the API's streams.
	release, refused := s.streams.take("link:"+r.PathValue("token"), "this link")
	if refused != nil {
		refuse(w, refused)
		return
	}
	defer release()
	if err := s.stream(r.Context(), w, Follow{Inv: run, Tree: true, Cursor: cur}); err != nil {
		s.cfg.Log.Warn("page stream ended", "invocation", run, "err", err)
	}
}
