// shared_test.go checks a live stream, through one host, of a run another
// host drives on a store they share: its events and its end are pushed
// (the driving host tells the others), not found by polling.

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/metrics"
	"github.com/runehost/runehost/store"
)

func TestStreamOfARunAnotherHostDrives(t *testing.T) {
	node, err := store.StartNode(store.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	var es []*host.Engine
	for range 2 {
		s, err := store.Open(store.Options{JetStream: &store.JetStream{URLs: []string{node.ClientURL()}, Memory: true, Shared: true}})
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.StopClaims(); s.Close() })
		es = append(es, e)
	}
	a, b := es[0], es[1]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&host.Loop{E: a, Workers: 2}).Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	srv := New(Config{Service: &Service{E: b}, Token: testToken, Metrics: metrics.New(), BaseURL: "http://runehost.test"})
	srv.poll, srv.ping = time.Hour, time.Hour // what arrives was told, not polled for
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Stop(); ts.Close() })

	id, err := a.NewInvocationID()
	if err != nil {
		t.Fatal(err)
	}
	src := "let e = await {key: \"go\"}\nfor i in range(3) { emit(\"tick\", i) }\nreturn e + 1"
	if err := a.Admit(context.Background(), id, "p", "", []byte(src), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	for st, _ := a.State(id); st == nil || st.Status != host.Waiting; st, _ = a.State(id) {
		time.Sleep(10 * time.Millisecond)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/invocations/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 100)
	go readSSE(resp.Body, func(m sseMsg) bool {
		if m.event == "state" {
			var st api.RunState
			json.Unmarshal([]byte(m.data), &st)
			got <- "state " + st.Status
			return !api.Terminal(st.Status)
		}
		got <- m.data
		return true
	})
	waitFor := func(what string) {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case m := <-got:
				if strings.Contains(m, what) {
					return
				}
			case <-timeout:
				t.Fatalf("the stream through host b never got %q", what)
			}
		}
	}
	waitFor("state waiting")
	if err := a.Deliver(id, "go", []byte{0x18, 41}); err != nil {
		t.Fatal(err)
	}
	waitFor(`"tick"`)
	waitFor("state completed")
}
