// serve_obs_test.go checks what a serve shows of its runs: OTLP traces
// sent to a collector when OTEL_EXPORTER_OTLP_ENDPOINT is set, and the
// metrics of the runs it drove.

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/runehost/runehost/client"
)

func TestServeTracesAndMetrics(t *testing.T) {
	var mu sync.Mutex
	spans := map[string]int{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "not OTLP", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					spans[sp.Name]++
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(nil)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	dir := filepath.Join(t.TempDir(), "store")
	t.Setenv("RUNEHOST_STORE", dir)
	log := &syncBuffer{}
	stop, err := startServe(context.Background(), dir, log)
	if err != nil {
		t.Fatal(err)
	}
	f := writeProg(t, `var s = 0
for i in range(5000) { s += i }
try { act "fs.read" {path: "/nowhere"} } catch err { }
return s`)
	if code, out, errs := invoke(t, "run", f); code != exitOK || out != "12497500\n" {
		t.Fatalf("run: %d %q %q", code, out, errs)
	}
	cl, ok, err := client.Find(dir)
	if !ok {
		t.Fatalf("no server: %v", err)
	}
	b, err := cl.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`runehost_invocations{status="completed"} 1`, `runehost_acts_total{family="fs",phase="denied"} 1`, `runehost_slices_total [1-9]`, `runehost_steps_total [1-9]`, `runehost_api_requests_total{code="201",route="POST /v1/runs"} 1`} {
		if !regexp.MustCompile(want).Match(b) && !strings.Contains(string(b), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if spans["run p"] != 1 || spans["act fs.read"] != 1 {
		t.Fatalf("spans exported: %v\n%s", spans, log)
	}
}
