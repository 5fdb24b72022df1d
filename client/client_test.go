// client_test.go checks the client against an httptest server: finding a
// server, errors, and following a stream across a dropped connection.

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
)

// serveUnix serves h on a socket in dir and writes dir's discovery file.
func serveUnix(t *testing.T, dir string, h http.Handler) {
	t.Helper()
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	b, _ := json.Marshal(api.Discovery{PID: 42, Socket: sock})
	if err := os.WriteFile(filepath.Join(dir, DiscoveryFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func health(w http.ResponseWriter, r *http.Request) {
	json.NewEncoder(w).Encode(api.Health{Status: "ok", PID: 42, Version: "test"})
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := Find(dir); ok || err != nil {
		t.Fatalf("no file: %v %v", ok, err)
	}
	// The file of a server that died: its socket is gone, or refuses.
	b, _ := json.Marshal(api.Discovery{PID: 1, Socket: filepath.Join(dir, "gone.sock")})
	os.WriteFile(filepath.Join(dir, DiscoveryFile), b, 0o600)
	if _, ok, err := Find(dir); ok || err != nil {
		t.Fatalf("missing socket: %v %v", ok, err)
	}
	l, _ := net.Listen("unix", filepath.Join(dir, "gone.sock"))
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, ok, err := Find(dir); ok || err != nil {
		t.Fatalf("refusing socket: %v %v", ok, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", health)
	serveUnix(t, dir, mux)
	c, ok, err := Find(dir)
	if !ok || err != nil || c.Discovery.PID != 42 {
		t.Fatalf("live server: %v %v", ok, err)
	}
}

func TestErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/invocations/{id}/state", func(w http.ResponseWriter, r *http.Request) {
		e := api.Errorf(api.CodeNotFound, "no such invocation %s", r.PathValue("id"))
		w.WriteHeader(e.Status())
		json.NewEncoder(w).Encode(api.ErrorBody{Error: e})
	})
	mux.HandleFunc("POST /v1/grants", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		var req api.GrantRequest
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode([]api.Grant{{Prog: req.Prog, Statement: req.Statements[0]}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(srv.URL+"/", "tok")
	_, err := c.State(context.Background(), "r9")
	if api.CodeOf(err) != api.CodeNotFound || err.Error() != "no such invocation r9" {
		t.Fatalf("state: %v", err)
	}
	gs, err := c.Grant(context.Background(), api.GrantRequest{Prog: "p", Statements: []string{"test.record"}})
	if err != nil || len(gs) != 1 || gs[0].Statement != "test.record" {
		t.Fatalf("grant: %v %v", gs, err)
	}
	if _, err := New(srv.URL, "").Grant(context.Background(), api.GrantRequest{Prog: "p", Statements: []string{"x"}}); api.CodeOf(err) != api.CodeUnauthorized {
		t.Fatalf("without the token: %v", err)
	}
}

// sse is a stream of n events that drops its connection after every third
// event until the last, then settles.
func sse(t *testing.T, n int) http.Handler {
	var conns atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" || r.URL.Query().Get("until") != "settled" || r.URL.Query().Get("tree") != "1" {
			t.Errorf("request %s %v", r.URL, r.Header)
		}
		conns.Add(1)
		from := 1
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			from, _ = strconv.Atoi(id[1:])
			from++
		} else if r.URL.Query().Get("cursor") != "c0" {
			t.Errorf("cursor %q", r.URL.Query().Get("cursor"))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": ping\n\n")
		for seq, sent := from, 0; seq <= n; seq, sent = seq+1, sent+1 {
			if sent == 3 {
				// Hijack and close: a dropped connection mid-stream.
				c, buf, _ := w.(http.Hijacker).Hijack()
				buf.Flush()
				c.Close()
				return
			}
			b, _ := json.Marshal(events.Event{Seq: uint64(seq), At: 1700000000123, Run: "r1", Kind: events.KindEmit, Emit: &events.Emit{Name: "n", Data: strconv.Itoa(seq)}})
			fmt.Fprintf(w, "id: c%d\ndata: %s\n\n", seq, b)
			w.(http.Flusher).Flush()
		}
		b, _ := json.Marshal(api.RunState{Invocation: "r1", Status: "completed", Result: json.RawMessage("7")})
		fmt.Fprintf(w, "event: state\ndata: %s\n\n", b)
	})
}

func TestFollowReconnects(t *testing.T) {
	srv := httptest.NewServer(sse(t, 10))
	defer srv.Close()
	var got []uint64
	st, err := New(srv.URL, "").Follow(context.Background(), "r1", FollowOptions{Tree: true, Cursor: "c0", UntilSettled: true}, func(ev events.Event) {
		got = append(got, ev.Seq)
	})
	if err != nil || st.Status != "completed" || string(st.Result) != "7" {
		t.Fatalf("state %+v, %v", st, err)
	}
	if len(got) != 10 {
		t.Fatalf("events %v", got)
	}
	for i, seq := range got {
		if seq != uint64(i+1) {
			t.Fatalf("events %v: lost or repeated", got)
		}
	}
}

func TestFollowCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	st, err := New(srv.URL, "").Follow(ctx, "r1", FollowOptions{}, nil)
	if st != nil || err != context.DeadlineExceeded {
		t.Fatalf("%v %v", st, err)
	}
}

// A stream refused for the server's cap of streams (429) is tried again
// after its Retry-After, Busy told each time; refused every time, Follow
// ends with an error that says so.
func TestFollowBusy(t *testing.T) {
	var refusals atomic.Int32
	var limit atomic.Int32
	limit.Store(2)
	stream := sse(t, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusals.Add(1) <= limit.Load() {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			json.NewEncoder(w).Encode(api.ErrorBody{Error: &api.Error{Code: api.CodeTooMany, Message: "this link has 64 live event streams"}})
			return
		}
		stream.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var told []string
	opts := FollowOptions{Tree: true, Cursor: "c0", UntilSettled: true, Busy: func(ae *api.Error, wait time.Duration) {
		told = append(told, fmt.Sprintf("%s %v", ae.Message, wait))
	}}
	st, err := New(srv.URL, "").Follow(context.Background(), "r1", opts, nil)
	if err != nil || st.Status != "completed" || len(told) != 2 || told[0] != "this link has 64 live event streams 100ms" {
		t.Fatalf("state %+v, %v, told %q", st, err, told)
	}
	refusals.Store(0)
	limit.Store(1000)
	told = nil
	_, err = New(srv.URL, "").Follow(context.Background(), "r1", opts, nil)
	if api.CodeOf(err) != api.CodeTooMany || !strings.Contains(err.Error(), "refused the event stream 5 times (429 Too Many Requests): this link has 64") || len(told) != busyTries {
		t.Fatalf("refused every time: %v, told %q", err, told)
	}
}
