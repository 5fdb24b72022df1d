// setup_test.go: a set-up that cannot work (a token of the wrong type, a
// missing scope, a refused token) fails at start with the fix in its
// message, rather than being retried for ever; a card Slack refuses gets
// a plain reply and a log line saying what to do.

package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/slack/fakeslack"
	"github.com/runehost/runehost/store"
)

// slackAPI is a Web API answering each method with a fixed body (auth.test
// and apps.connections.open succeed unless told), and the header Slack
// lists a token's scopes in.
type slackAPI struct {
	mu      sync.Mutex
	answers map[string]map[string]any
	scopes  string
	opens   atomic.Int32 // apps.connections.open calls
}

func (a *slackAPI) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := strings.TrimPrefix(r.URL.Path, "/")
		if method == "apps.connections.open" {
			a.opens.Add(1)
		}
		a.mu.Lock()
		v, ok := a.answers[method]
		a.mu.Unlock()
		if !ok {
			switch method {
			case "auth.test":
				v = map[string]any{"ok": true, "user_id": "UBOT", "user": "runehost", "team": "Acme", "bot_id": "B1"}
			case "apps.connections.open":
				v = map[string]any{"ok": true, "url": "ws://127.0.0.1:1/ws"}
			default:
				v = map[string]any{"ok": false, "error": "unknown_method"}
			}
		}
		if a.scopes != "" {
			w.Header().Set("X-OAuth-Scopes", a.scopes)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

func engine(t *testing.T) *host.Engine {
	s, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return host.NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
}

// syncBuf is a log that tests read while it is written.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestSlackSetupFailsWithTheFix(t *testing.T) {
	for _, tc := range []struct {
		name             string
		bot, app         string
		answers          map[string]map[string]any
		scopes           string
		want, wantCode   string
		noConnectionOpen bool
	}{
		{name: "app token of the wrong type", bot: "xoxb-1", app: "xapp-1",
			answers: map[string]map[string]any{"apps.connections.open": {"ok": false, "error": "not_allowed_token_type"}},
			want:    "SLACK_APP_TOKEN must be an app-level token (xapp-…) with the connections:write scope: create one under Basic Information → App-Level Tokens", wantCode: "not_allowed_token_type"},
		{name: "a bot token as the app token", bot: "xoxb-1", app: "xoxb-2", noConnectionOpen: true,
			want: "SLACK_APP_TOKEN must be an app-level token (xapp-…)", wantCode: "not_an_app_token"},
		{name: "app token without connections:write", bot: "xoxb-1", app: "xapp-1",
			answers: map[string]map[string]any{"apps.connections.open": {"ok": false, "error": "missing_scope", "needed": "connections:write", "provided": "authorizations:read"}},
			want:    "SLACK_APP_TOKEN lacks the scope connections:write", wantCode: "missing_scope"},
		{name: "bot token refused", bot: "xoxb-1", app: "xapp-1", noConnectionOpen: true,
			answers: map[string]map[string]any{"auth.test": {"ok": false, "error": "invalid_auth"}},
			want:    "SLACK_BOT_TOKEN is not accepted", wantCode: "invalid_auth"},
		{name: "app token revoked", bot: "xoxb-1", app: "xapp-1",
			answers: map[string]map[string]any{"apps.connections.open": {"ok": false, "error": "token_revoked"}},
			want:    "SLACK_APP_TOKEN is not accepted", wantCode: "token_revoked"},
		{name: "bot without chat:write", bot: "xoxb-1", app: "xapp-1", scopes: "app_mentions:read,channels:history", noConnectionOpen: true,
			want: "the bot token lacks the scope chat:write", wantCode: "missing_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &slackAPI{answers: tc.answers, scopes: tc.scopes}
			log := &syncBuf{}
			d := New(Config{BotToken: tc.bot, AppToken: tc.app, APIURL: a.serve(t), Log: slog.New(slog.NewTextHandler(log, nil))}, engine(t))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			err := d.RunSocketMode(ctx)
			var se *SetupError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || se.Code != tc.wantCode {
				t.Fatalf("RunSocketMode: %v (after %s), want a SetupError %s with %q", err, time.Since(start), tc.wantCode, tc.want)
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("the set-up failed after %s", time.Since(start))
			}
			if !strings.Contains(log.String(), tc.want) {
				t.Fatalf("the log does not say it:\n%s", log)
			}
			if tc.noConnectionOpen && a.opens.Load() != 0 {
				t.Fatalf("apps.connections.open was called %d times", a.opens.Load())
			}
		})
	}
}

// A scope the dispatcher can do without is warned of; the set-up passes.
func TestSlackSetupWarnsOfAMissingScope(t *testing.T) {
	a := &slackAPI{scopes: "chat:write,app_mentions:read,groups:history"}
	log := &syncBuf{}
	d := New(Config{BotToken: "xoxb-1", SigningSecret: "s", APIURL: a.serve(t), Log: slog.New(slog.NewTextHandler(log, nil))}, engine(t))
	if _, err := d.EventsHandler(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := log.String(); !strings.Contains(l, "lacks the scope channels:history") || !strings.Contains(l, "the bot is signed in") {
		t.Fatalf("log:\n%s", l)
	}
}

// An app token refused after the check passed (slack-go's own connection,
// which retries every error but four for ever) ends Socket Mode with the fix.
func TestSlackSocketModeRefusedLater(t *testing.T) {
	a := &slackAPI{}
	url := a.serve(t)
	d := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: url}, engine(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.answers = map[string]map[string]any{"apps.connections.open": {"ok": false, "error": "not_allowed_token_type"}}
	a.mu.Unlock()
	err := d.RunSocketMode(ctx)
	if se := (*SetupError)(nil); !errors.As(err, &se) || !strings.Contains(err.Error(), "App-Level Tokens") {
		t.Fatalf("RunSocketMode: %v", err)
	}
}

// refusing sits in front of the fake and refuses chat.postMessage with
// code: every post (all) or those with blocks (a card).
func refusing(t *testing.T, fake *fakeslack.Server, code string, all bool) string {
	target, _ := url.Parse(fake.Server.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chat.postMessage" {
			body, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(body))
			if all || form.Get("blocks") != "" {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": code})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// A card Slack refuses is not run; a plain reply in the thread says why.
func TestSlackCardRefusedGetsAPlainReply(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	defer fake.Close()
	log := &syncBuf{}
	d, _, _ := startOn(t, fake, t.TempDir(), refusing(t, fake, "invalid_blocks", false), slog.New(slog.NewTextHandler(log, nil)))
	thread := fake.Mention("C1", "U1", "agent go")
	waitFor(t, "the reply", 3*time.Second, func() bool { return len(fake.Messages()) > 0 })
	d.Wait()
	ms := fake.Messages()
	if len(ms) != 1 || ms[0].ThreadTS != thread || ms[0].Blocks != "" ||
		!strings.Contains(ms[0].Text, "runehost could not post a status card here (invalid_blocks") || !strings.Contains(ms[0].Text, "agent was not run") {
		t.Fatalf("%+v", ms)
	}
	if invs, _ := d.e.List(); len(invs) != 0 {
		t.Fatalf("a run was started: %+v", invs)
	}
	if !strings.Contains(log.String(), "the status card could not be posted") {
		t.Fatalf("log:\n%s", log)
	}
}

// A bot not in the channel: the log says to invite it.
func TestSlackNotInChannelLogsTheInvite(t *testing.T) {
	fake := fakeslack.NewStrict(fastClock(t))
	defer fake.Close()
	log := &syncBuf{}
	d, _, _ := startOn(t, fake, t.TempDir(), refusing(t, fake, "not_in_channel", true), slog.New(slog.NewTextHandler(log, nil)))
	fake.Mention("C9", "U1", "agent go")
	waitFor(t, "the log", 3*time.Second, func() bool { return strings.Contains(log.String(), "could not be posted") })
	d.Wait()
	if l := log.String(); !strings.Contains(l, "invite the bot to the channel C9 (/invite @") {
		t.Fatalf("log:\n%s", l)
	}
}

// Slack out of reach at start is retried, logged, and not held against the
// set-up.
func TestSlackSetupRetriesWhatMayPass(t *testing.T) {
	defer func(w time.Duration) { checkWait = w }(checkWait)
	checkWait = 10 * time.Millisecond
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "user_id": "UBOT", "user": "runehost", "url": "ws://127.0.0.1:1/ws"})
	}))
	defer srv.Close()
	log := &syncBuf{}
	d := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: srv.URL + "/", Log: slog.New(slog.NewTextHandler(log, nil))}, engine(t))
	if err := d.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := log.String(); strings.Count(l, "checking the set-up failed; retrying") != 2 || !strings.Contains(l, "the app token opens Socket Mode connections") || !d.isBot("UBOT") {
		t.Fatalf("log:\n%s", l)
	}
}
