// shared_test.go checks a live stream, through one host, of a run another
// host drives on a store they share: its events and its end are pushed
// (the driving host tells the others), not found by polling.

package server

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/runehost/runehost/store/jetstream"
)

// sharedEngines opens n hosts on one JetStream store, each with the gate
// act (never closed: it answers at once).
func sharedEngines(t *testing.T, n int) []*host.Engine {
	node, err := jetstream.StartNode(jetstream.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	var es []*host.Engine
	for range n {
		s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: []string{node.ClientURL()}, Memory: true, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.StopClaims(); s.Close() })
		e.Adapters["test.gate"] = &gate{}
		e.Ward().Grant(host.AnyProg, "test.gate")
		es = append(es, e)
	}
	return es
}

// loopOf runs a Loop of e until the test ends.
func loopOf(t *testing.T, e *host.Engine) *host.Loop {
	l := &host.Loop{E: e, Workers: 2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// admitAndFollow admits src as id on e, waits until it waits, and opens
// the event stream at url; the stream is closed when the test ends.
func admitAndFollow(t *testing.T, e *host.Engine, id, src, url string) *http.Response {
	t.Helper()
	if err := e.Admit(context.Background(), id, "p", "", []byte(src), nil, 1<<30, 1); err != nil {
		t.Fatal(err)
	}
	for st, _ := e.State(id); st == nil || st.Status != host.Waiting; st, _ = e.State(id) {
		time.Sleep(10 * time.Millisecond)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestStreamOfARunAnotherHostDrives(t *testing.T) {
	es := sharedEngines(t, 2)
	a, b := es[0], es[1]
	loopOf(t, a)

	srv := New(Config{Service: &Service{E: b}, Token: testToken, Metrics: metrics.New(), BaseURL: "http://runehost.test"})
	srv.poll, srv.ping = time.Hour, time.Hour // what arrives was told, not polled for
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Stop(); ts.Close() })

	id, err := a.NewInvocationID()
	if err != nil {
		t.Fatal(err)
	}
	src := "let e = await {key: \"go\"}\nfor i in range(3) { emit(\"tick\", i) }\nreturn e + 1"
	resp := admitAndFollow(t, a, id, src, ts.URL+"/v1/invocations/"+id+"/events")
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

// A live stream of a run its own host drives reads that run's events from
// what the host keeps, not from the store, where each read of a log is a
// scan (a consumer of the stream, which the nodes make and drop), and lists
// the tree's invocations once a second, not at every event: as `runehost
// run` attached to a host follows its run's tree.
func TestStreamOfARunDrivenHereScansLittle(t *testing.T) {
	e := sharedEngines(t, 1)[0]
	l := loopOf(t, e)
	srv := New(Config{Service: &Service{E: e, Loop: l}, Token: testToken, Metrics: metrics.New(), BaseURL: "http://runehost.test"})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Stop(); ts.Close() })
	const acts = 60
	src := fmt.Sprintf("await {key: \"go\"}\nvar i = 0\nwhile i < %d { act \"test.gate\" {}; emit(\"n\", i); i += 1 }\nreturn i", acts)
	id, _ := e.NewInvocationID()
	resp := admitAndFollow(t, e, id, src, ts.URL+"/v1/invocations/"+id+"/events?tree=1")
	before, start := srv.windows.reads.Load(), time.Now()
	if err := e.Deliver(id, "go", []byte{0xf6}); err != nil {
		t.Fatal(err)
	}
	l.Notify()
	emits := 0
	readSSE(resp.Body, func(m sseMsg) bool {
		if strings.Contains(m.data, `"emit"`) {
			emits++
		}
		if m.event == "state" {
			var st api.RunState
			json.Unmarshal([]byte(m.data), &st)
			return !api.Terminal(st.Status)
		}
		return true
	})
	if emits != acts {
		t.Fatalf("the stream got %d emits, want %d", emits, acts)
	}
	reads := srv.windows.reads.Load() - before
	t.Logf("the stream read the store %d times for %d acts (%s)", reads, acts, time.Since(start).Round(time.Millisecond))
	// A tree's list once a second, and once more at each settling; each
	// event read from the store would be some three reads an act.
	if limit := 5 + 2*int64(time.Since(start)/time.Second); reads > limit {
		t.Fatalf("the stream read the store %d times for %d acts (at most %d)", reads, acts, limit)
	}
}
