// bench_test.go measures the API over a real Unix socket: listing stored
// invocations, admitting runs, and one run's SSE stream fanned out to a
// hundred clients (events delivered per second, and the memory it costs).

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

// benchSocket serves h on a Unix socket in a fresh directory, as serve
// does, and returns a client of it.
func benchSocket(b *testing.B, h http.Handler) *http.Client {
	b.Helper()
	l, sock, err := ListenUnix(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(l)
	b.Cleanup(func() { hs.Close() })
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 256,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

// benchAdmit posts a run through c.
func benchAdmit(b *testing.B, c *http.Client, prog, src string) string {
	body, _ := json.Marshal(api.RunRequest{Prog: prog, Source: src})
	resp, err := c.Post("http://runehost/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var rr api.RunResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("POST /v1/runs: %d %v", resp.StatusCode, err)
	}
	return rr.Invocation
}

// benchUntilEnded waits until every invocation of e has ended.
func benchUntilEnded(b *testing.B, e *host.Engine, want int) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		invs, err := e.List()
		if err != nil {
			b.Fatal(err)
		}
		ended := 0
		for _, inv := range invs {
			if inv.Status.Terminal() {
				ended++
			}
		}
		if ended >= want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("fewer than %d invocations ended in a minute", want)
}

// BenchmarkAPIList is GET /v1/invocations of 100 ended invocations, from
// parallel clients (the loop running, idle).
func BenchmarkAPIList(b *testing.B) {
	env := newE2E(b)
	c := benchSocket(b, env.srv.Handler())
	for i := range 100 {
		benchAdmit(b, c, fmt.Sprintf("p%d", i), `return 1`)
	}
	benchUntilEnded(b, env.e, 100)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Get("http://runehost/v1/invocations")
			if err != nil {
				b.Error(err)
				return
			}
			var l api.List
			err = json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			if err != nil || len(l.Invocations) != 100 {
				b.Errorf("%d invocations listed: %v", len(l.Invocations), err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkAPIAdmit is POST /v1/runs of a tiny prog, each of its own
// prog name: with the loop running (each run also runs to its end, in the
// same process) and without one (admission alone).
func BenchmarkAPIAdmit(b *testing.B) {
	b.Run("loop", func(b *testing.B) {
		env := newE2E(b)
		benchAdmits(b, benchSocket(b, env.srv.Handler()))
	})
	b.Run("noloop", func(b *testing.B) {
		s, err := store.Open(store.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		clock := func() int64 { return time.Now().UnixMilli() }
		e := host.NewEngine(s, port.NewNative(), 1, clock)
		srv := New(Config{Service: &Service{E: e}, Links: links.New(s, clock)})
		benchAdmits(b, benchSocket(b, srv.Handler()))
	})
}

func benchAdmits(b *testing.B, c *http.Client) {
	var n atomic.Int64
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchAdmit(b, c, "tiny"+strconv.FormatInt(n.Add(1), 10), `return input`)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// vmRSS is this process's resident set, in bytes.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkSSEFanout is 100 clients (and 1) following one run's stream while it
// emits 2,000 events: the events delivered per second in all, and the
// process's memory growth (VmRSS and the heap in use at their peak, over
// what they were before the first round; the clients are in the process
// too). One op is one round: a run, its clients, all its events to each.
func BenchmarkSSEFanout(b *testing.B) {
	for _, n := range []int{1, 100} { // one: the run's own pace, for scale
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchFanout(b, n) })
	}
}

func benchFanout(b *testing.B, clients int) {
	const emits = 2000
	env := newE2E(b)
	c := benchSocket(b, env.srv.Handler())
	prog := fmt.Sprintf(`act "test.echo" {text: "go"}
var i = 0
while i < %d { emit("tick", {i: i, pad: "0123456789abcdef0123456789abcdef"}); i += 1 }
return i`, emits)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss0, heap0 := vmRSS(), int64(ms.HeapInuse)
	var peakRSS, peakHeap atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if r := vmRSS(); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			if h := int64(ms.HeapInuse); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	var delivered atomic.Int64
	var streaming, running time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		open := env.echo.hold("go")
		inv := benchAdmit(b, c, fmt.Sprintf("fan%d", i), prog)
		var wg, connected sync.WaitGroup
		for range clients {
			wg.Add(1)
			connected.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("GET", "http://runehost/v1/invocations/"+inv+"/events", nil)
				req.Header.Set("Accept", "text/event-stream")
				resp, err := c.Do(req)
				connected.Done()
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				n := int64(0)
				r := bufio.NewReaderSize(resp.Body, 64<<10)
				for {
					line, err := r.ReadSlice('\n')
					if bytes.HasPrefix(line, []byte("id: ")) { // one an event; the state has none
						n++
					}
					if err == io.EOF {
						break
					}
					if err != nil && err != bufio.ErrBufferFull {
						b.Error(err)
						break
					}
				}
				delivered.Add(n)
			}()
		}
		connected.Wait()
		b.StartTimer()
		t0 := time.Now()
		open()
		wg.Wait()
		streaming += time.Since(t0)
		l, err := env.srv.svc.List(nil, "", 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, row := range l.Invocations {
			if row.ID == inv {
				running += time.Duration(row.Ended-t0.UnixMilli()) * time.Millisecond
			}
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	per := delivered.Load() / int64(b.N) / int64(clients)
	if per < emits {
		b.Fatalf("each client got %d events, want at least %d", per, emits)
	}
	b.ReportMetric(float64(delivered.Load())/streaming.Seconds(), "events/s")
	b.ReportMetric(float64(running.Milliseconds())/float64(b.N), "run-ms/op") // the run's own time, from its gate to its end
	b.ReportMetric(float64(peakRSS.Load()-rss0)/(1<<20), "rss-growth-MB")
	b.ReportMetric(float64(peakHeap.Load()-heap0)/(1<<20), "heap-growth-MB")
}
