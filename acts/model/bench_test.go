// bench_test.go measures model.chat's own cost per call against the
// scripted server on loopback (whole and streamed, p50 and p99, beside a
// bare HTTP round trip), and how soon a streamed chunk is shown.

package model_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
)

const benchArgs = `{"messages": [{"role": "system", "content": "You add numbers with the tool."}, {"role": "user", "content": "What is 12 + 30? Use the tool, then answer in a sentence."}],
	"tools": [{"name": "add", "description": "adds two ints", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}], "max_tokens": 256`

var benchReply = modeltest.Reply{Content: "I will add the two numbers with the tool now, then answer. ",
	ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a": 12, "b": 30}`}}}

// percentiles reports the p50 and p99 of ds.
func percentiles(b *testing.B, ds []time.Duration, name string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2]), name+"-p50-ns")
	b.ReportMetric(float64(ds[len(ds)*99/100]), name+"-p99-ns")
}

func benchChat(b *testing.B, stream bool) {
	srv := modeltest.Script("sk-bench", benchReply)
	srv.Cycle = true
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1", Model: "m", Key: "sk-bench"}}}
	args := benchArgs + `}`
	if stream {
		args = benchArgs + `, "stream": true}`
	}
	op := &host.Operation{Tag: model.Tag, Args: acttest.Data(b, args)}
	ctx := host.WithStream(context.Background(), func(string) {})
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		t := time.Now()
		if _, err := a.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	percentiles(b, ds, "call")
}

// BenchmarkChat is a whole (not streamed) call with one tool call.
func BenchmarkChat(b *testing.B) { benchChat(b, false) }

// BenchmarkChatStream is the same reply streamed: 21 content chunks and 7
// tool-call fragments.
func BenchmarkChatStream(b *testing.B) { benchChat(b, true) }

// BenchmarkLoopback is the bare HTTP round trip to the same server with a
// like body, for what the act adds to it.
func BenchmarkLoopback(b *testing.B) {
	srv := modeltest.Script("", benchReply)
	srv.Cycle = true
	defer srv.Close()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"What is 12 + 30?"}]}`)
	c := &http.Client{}
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t := time.Now()
		resp, err := c.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ds = append(ds, time.Since(t))
	}
	percentiles(b, ds, "call")
}

// BenchmarkStreamLatency is the time from the server writing a content
// chunk to host.Stream showing it (the first text of a call is shown at
// once; later text is coalesced every host.StreamEvery).
func BenchmarkStreamLatency(b *testing.B) {
	srv := modeltest.Script("", modeltest.Reply{Content: "Hi "})
	srv.Cycle = true
	defer srv.Close()
	var written atomic.Int64
	srv.SetOnChunk(func(ev []byte) {
		if strings.Contains(string(ev), `"content":"Hi "`) {
			written.Store(time.Now().UnixNano())
		}
	})
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	op := &host.Operation{Tag: model.Tag, Args: acttest.Data(b, `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`)}
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		var seen int64
		ctx := host.WithStream(context.Background(), func(string) {
			if seen == 0 {
				seen = time.Now().UnixNano()
			}
		})
		if _, err := a.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
		if seen == 0 {
			b.Fatal("nothing shown")
		}
		ds = append(ds, time.Duration(seen-written.Load()))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2]), "chunk-to-show-p50-ns")
}

// BenchmarkStreamEventLatency is the time from the server writing a call's
// first content chunk to its assistant event being published by an engine
// (stored in the run's log, then handed to OnEvent): what a terminal, a
// card or a page waits before the model's first words.
func BenchmarkStreamEventLatency(b *testing.B) {
	srv := modeltest.Script("", modeltest.Reply{Content: "Hi there "})
	srv.Cycle = true
	defer srv.Close()
	var written, seen atomic.Int64
	srv.SetOnChunk(func(ev []byte) {
		if strings.Contains(string(ev), `"content":"Hi`) {
			written.Store(time.Now().UnixNano())
		}
	})
	e := acttest.Engine(b, map[string]host.Adapter{model.Tag: &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}})
	acttest.Grant(b, e, "model.chat:default")
	e.OnEvent = func(ev events.Event) {
		if ev.Kind == events.KindAssistant {
			seen.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
	src := `return (act "model.chat" {messages: [{role: "user", content: "hi"}], stream: true}).content`
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		seen.Store(0)
		if got, _ := acttest.Run(b, e, src, nil); got != `"Hi there "` {
			b.Fatalf("got %s", got)
		}
		if seen.Load() == 0 {
			b.Fatal("no assistant event")
		}
		ds = append(ds, time.Duration(seen.Load()-written.Load()))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2]), "chunk-to-event-p50-ns")
	b.ReportMetric(float64(ds[len(ds)*99/100]), "chunk-to-event-p99-ns")
}
