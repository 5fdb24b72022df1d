// server_test.go drives the API over HTTP: streams that resume with
// Last-Event-ID see every event once, every route wants the token on TCP,
// a wrong link is a 404 like an unknown run, and a revoke or a cancel
// reaches a prog while it runs.

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/metrics"
	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/store"
)

const testToken = "test-token-0123456789abcdef"

// fixture is a served engine with its loop running.
type fixture struct {
	e     *host.Engine
	srv   *Server
	ts    *httptest.Server // the trusted handler
	tcp   *httptest.Server // the TCP handler, with the token
	links *links.Links
	clock func() int64
}

// gate is a test act that blocks until it is let go, counting its calls.
type gate struct {
	mu    sync.Mutex
	calls int
	ch    chan struct{}
}

func (g *gate) Do(ctx context.Context, op *host.Operation) (any, error) {
	g.mu.Lock()
	g.calls++
	ch := g.ch
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return "ok", nil
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func newFixture(t *testing.T, opts ...func(*Config)) *fixture {
	t.Helper()
	s, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now().UnixMilli()
	clock := func() int64 { mu.Lock(); defer mu.Unlock(); now++; return now }
	e := host.NewEngine(s, port.NewNative(), 1, clock)
	e.Adapters["test.gate"] = &gate{}
	loop := &host.Loop{E: e, Workers: 2, Poll: 5 * time.Millisecond}
	l := links.New(s, clock)
	cfg := Config{Service: &Service{E: e, Loop: loop, Clock: clock}, Links: l, Token: testToken, Metrics: metrics.New(), BaseURL: "http://runehost.test"}
	for _, o := range opts {
		o(&cfg)
	}
	srv := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	f := &fixture{e: e, srv: srv, ts: httptest.NewServer(srv.Handler()), tcp: httptest.NewServer(srv.TCPHandler()), links: l, clock: clock}
	t.Cleanup(func() {
		srv.Stop()
		f.ts.Close()
		f.tcp.Close()
		cancel()
		<-done
		e.Park(context.Background())
		s.Close()
	})
	return f
}

func (f *fixture) do(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.ts.URL+path, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func (f *fixture) run(t *testing.T, prog, src string) string {
	t.Helper()
	var r api.RunResponse
	if code := f.do(t, "POST", "/v1/runs", api.RunRequest{Prog: prog, Source: src}, &r); code != http.StatusCreated {
		t.Fatalf("run: status %d", code)
	}
	return r.Invocation
}

func (f *fixture) wait(t *testing.T, inv string, ok func(*api.RunState) bool) *api.RunState {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st api.RunState
		f.do(t, "GET", "/v1/invocations/"+inv+"/state", nil, &st)
		if ok(&st) {
			return &st
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: never got there", inv)
	return nil
}

// sseReader reads one stream: its events and its last id.
type sseMsg struct {
	id, event, data string
}

func readSSE(r io.Reader, each func(sseMsg) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var m sseMsg
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if m.data != "" || m.event != "" {
				if !each(m) {
					return nil
				}
			}
			m = sseMsg{}
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			m.data = line[6:]
		}
	}
	return sc.Err()
}

// A client that drops the stream at random points and comes back with its
// Last-Event-ID gets every event once, in order, for one run and for a tree.
func TestStreamResumesExactlyOnce(t *testing.T) {
	f := newFixture(t)
	// Many events over time, and children with events of their own.
	src := `if input != nil { for i in range(40) { emit("child", i) }; return input }
let a = act "spawn" {steps: 1000000, input: 1}
let b = act "spawn" {steps: 1000000, input: 2}
var s = 0
for i in range(300) { emit("tick", i); for j in range(200) { s += j } }
return [s, (await {key: a.id}).result, (await {key: b.id}).result]`
	inv := f.run(t, "many", src)
	for _, tree := range []bool{false, true} {
		t.Run(fmt.Sprintf("tree=%v", tree), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			seen := map[string]bool{}
			last := map[string]uint64{}
			var got []events.Event
			cursor, ended := "", false
			for round := 0; !ended && round < 1000; round++ {
				url := f.ts.URL + "/v1/invocations/" + inv + "/events"
				if tree {
					url += "?tree=1"
				}
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Accept", "text/event-stream")
				if cursor != "" {
					req.Header.Set("Last-Event-ID", cursor)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				drop := 1 + rng.IntN(40) // events read before hanging up
				readSSE(resp.Body, func(m sseMsg) bool {
					if m.event == "state" {
						var st api.RunState
						json.Unmarshal([]byte(m.data), &st)
						ended = api.Terminal(st.Status)
						return !ended
					}
					var ev events.Event
					if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
						t.Fatalf("event %q: %v", m.data, err)
					}
					k := fmt.Sprintf("%s/%d", ev.Run, ev.Seq)
					if seen[k] {
						t.Fatalf("event %s seen twice", k)
					}
					if ev.Seq != last[ev.Run]+1 {
						t.Fatalf("%s: seq %d after %d", ev.Run, ev.Seq, last[ev.Run])
					}
					seen[k], last[ev.Run] = true, ev.Seq
					got = append(got, ev)
					cursor = m.id
					drop--
					return drop > 0
				})
				resp.Body.Close()
			}
			if !ended {
				t.Fatal("the stream never ended")
			}
			ids := []string{inv}
			if tree {
				ids, _ = f.e.Tree(inv)
				if len(ids) != 3 {
					t.Fatalf("tree %v", ids)
				}
			}
			want := 0
			for _, id := range ids {
				evs, err := f.e.Events(id, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				want += len(evs)
				if last[id] != uint64(len(evs)) {
					t.Errorf("%s: last seq %d, the log has %d", id, last[id], len(evs))
				}
			}
			if len(got) != want {
				t.Fatalf("got %d events, the logs have %d", len(got), want)
			}
		})
	}
}

// Over TCP, every route but /healthz and the pages wants the token.
func TestTCPWantsTheToken(t *testing.T) {
	f := newFixture(t)
	inv := f.run(t, "p", `return 1`)
	f.wait(t, inv, func(st *api.RunState) bool { return api.Terminal(st.Status) })
	fill := strings.NewReplacer("{id}", inv, "{ordinal}", "1", "{token}", "x")
	for _, route := range f.srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		path = fill.Replace(path)
		open := path == "/healthz" || path == "/favicon.ico" || strings.HasPrefix(path, "/r/") || strings.HasPrefix(path, "/page/")
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + testToken} {
			req, _ := http.NewRequest(method, f.tcp.URL+path, strings.NewReader("{}"))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want401 := !open && auth != "Bearer "+testToken
			if (resp.StatusCode == http.StatusUnauthorized) != want401 {
				t.Errorf("%s %s with %q: status %d", method, path, auth, resp.StatusCode)
			}
		}
	}
}

// A wrong, expired or revoked link is the same 404 as a link to nothing,
// for the page and for its stream; so is a good link asked for a run that
// is not its run's descendant.
func TestLinksFailAlike(t *testing.T) {
	f := newFixture(t)
	inv := f.run(t, "p", `return 1`)
	f.wait(t, inv, func(st *api.RunState) bool { return api.Terminal(st.Status) })
	other := f.run(t, "p", `return 1`)
	f.wait(t, other, func(st *api.RunState) bool { return api.Terminal(st.Status) })
	good, _, err := f.links.Create(inv, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expired, _, _ := f.links.Create(inv, time.Millisecond)
	revoked, rl, _ := f.links.Create(inv, time.Hour)
	if _, err := f.links.Revoke(inv, rl.ID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		f.clock() // the clock moves past the expiry
	}
	get := func(path string) (int, string, http.Header) {
		resp, err := http.Get(f.tcp.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		resp.Header.Del("Date")
		return resp.StatusCode, string(b), resp.Header
	}
	if code, body, _ := get("/r/" + good); code != 200 || !strings.Contains(body, inv) {
		t.Fatalf("good link: %d", code)
	}
	code0, body0, h0 := get("/r/" + strings.Repeat("A", 43))
	if code0 != 404 {
		t.Fatalf("unknown link: %d", code0)
	}
	for name, tok := range map[string]string{"wrong": good[:42] + "x", "expired": expired, "revoked": revoked, "garbage": "%2e%2e"} {
		for _, suffix := range []string{"", "/events"} {
			code, body, h := get("/r/" + tok + suffix)
			if code != code0 || body != body0 || fmt.Sprint(h) != fmt.Sprint(h0) {
				t.Errorf("%s%s: %d %q %v, want %d %q %v", name, suffix, code, body, h, code0, body0, h0)
			}
		}
	}
	for _, run := range []string{other, inv + ".1", inv + "0", inv + ".", "../" + inv, inv + ".\x00", "\x00"} {
		for _, suffix := range []string{"", "/events"} {
			code, body, h := get("/r/" + good + suffix + "?run=" + url.QueryEscape(run))
			if code != code0 || body != body0 || fmt.Sprint(h) != fmt.Sprint(h0) {
				t.Errorf("?run=%s%s on %s's link: %d %q", run, suffix, inv, code, body)
			}
		}
	}
	if code, body, _ := get("/r/" + good + "?run=" + inv); code != 200 || !strings.Contains(body, inv) {
		t.Errorf("?run= the link's own run: %d", code)
	}
	// An id with a zero byte (no store key holds one) names nothing, on
	// every route that takes an id.
	for _, path := range []string{"/v1/invocations/r1%00", "/v1/invocations/r1%00/state", "/v1/invocations/%00/events"} {
		if code := f.do(t, "GET", path, nil, nil); code != http.StatusNotFound {
			t.Errorf("GET %s: %d", path, code)
		}
	}
}

// A revoke denies the running prog's next act; a cancel stops it within a
// slice, while it computes.
func TestRevokeAndCancelReachARunningProg(t *testing.T) {
	f := newFixture(t)
	g := f.e.Adapters["test.gate"].(*gate)
	g.mu.Lock()
	g.ch = make(chan struct{})
	g.mu.Unlock()
	if code := f.do(t, "POST", "/v1/grants", api.GrantRequest{Prog: "p", Statements: []string{"test.gate"}}, nil); code != 200 {
		t.Fatalf("grant: %d", code)
	}
	inv := f.run(t, "p", `let a = act "test.gate" {}
var second = "allowed"
try { act "test.gate" {} } catch err { second = err.kind }
return [a, second]`)
	for g.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	var rv api.Revoked
	if code := f.do(t, "POST", "/v1/grants/revoke", api.GrantRequest{Prog: "p", Statements: []string{"test.gate"}}, &rv); code != 200 {
		t.Fatalf("revoke: %d", code)
	}
	close(g.ch)
	st := f.wait(t, inv, func(st *api.RunState) bool { return api.Terminal(st.Status) })
	if string(st.Result) != `["ok","denied"]` {
		t.Fatalf("result %s (%s)", st.Result, st.Status)
	}

	spin := f.run(t, "spin", `var i = 0; while true { i += 1 }`)
	f.wait(t, spin, func(st *api.RunState) bool { return st.Status == "running" })
	time.Sleep(20 * time.Millisecond)
	var cs api.RunState
	if code := f.do(t, "POST", "/v1/invocations/"+spin+"/cancel", nil, &cs); code != 200 || cs.Status != "cancelled" {
		t.Fatalf("cancel: %d %+v", code, cs)
	}
}

// Errors are one JSON shape with a stable code.
func TestErrorsHaveOneShape(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/v1/invocations/r404/state", "", 404, api.CodeNotFound},
		{"POST", "/v1/runs", `{"prog":"p","source":"return ("}`, 422, api.CodeCompile},
		{"POST", "/v1/runs", `{"prog":"p"`, 400, api.CodeBadRequest},
		{"POST", "/v1/runs", `{"prog":"p","source":"return 1"} {}`, 400, api.CodeBadRequest},
		{"GET", "/v1/invocations?status=bogus", "", 400, api.CodeBadRequest},
		{"GET", "/v1/nothing", "", 404, api.CodeNotFound},
		{"POST", "/v1/invocations/r1/acts/0/resolve", `{}`, 400, api.CodeBadRequest},
		{"POST", "/v1/grants/revoke", `{"prog":"p","statements":["fs.read"]}`, 404, api.CodeNotFound},
	} {
		req, _ := http.NewRequest(c.method, f.ts.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body api.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || err != nil || body.Error == nil || body.Error.Code != c.code || body.Error.Message == "" {
			t.Errorf("%s %s: %d %+v %v, want %d %s", c.method, c.path, resp.StatusCode, body.Error, err, c.status, c.code)
		}
	}
}

// Every route is in docs/api.md.
func TestRoutesAreDocumented(t *testing.T) {
	f := newFixture(t)
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range f.srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if !regexp.MustCompile("`" + method + " " + regexp.QuoteMeta(path) + "(\\?[^`]*)?`").Match(doc) {
			t.Errorf("docs/api.md does not document %s", route)
		}
	}
}

// A run's token limit is the request's (the default without one), and
// inspect shows it.
func TestRunTokens(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		tokens *uint64
		want   uint64
	}{{nil, host.DefaultTokens}, {new(uint64), 0}} {
		var r api.RunResponse
		if code := f.do(t, "POST", "/v1/runs", api.RunRequest{Prog: "p", Source: "return 1", Tokens: c.tokens}, &r); code != http.StatusCreated {
			t.Fatalf("run: status %d", code)
		}
		f.wait(t, r.Invocation, func(st *api.RunState) bool { return st.Status == "completed" })
		var in api.Inspection
		if code := f.do(t, "GET", "/v1/invocations/"+r.Invocation, nil, &in); code != http.StatusOK || in.Tokens == nil || *in.Tokens != (api.Allowance{Limit: c.want}) {
			t.Fatalf("inspect: %d %+v", code, in.Tokens)
		}
	}
}
