// servers_test.go reads replies as real servers write them, beyond the
// scripted server's styles: CRLF lines, data without a space, a first chunk
// with no choices (Azure), null content deltas (vLLM), the last event not
// closed by a blank line, a tool's name repeated in each fragment, content
// as a list of parts, reasoning text beside the content.

package model_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/host"
)

// raw is a reply written exactly as given.
func raw(contentType, body string) modeltest.Reply {
	return modeltest.Reply{Status: 200, Header: map[string]string{"Content-Type": contentType}, Body: body}
}

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(e + "\n\n")
	}
	return b.String()
}

func TestRealServerVariants(t *testing.T) {
	const stream = `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`
	const whole = `{"messages": [{"role": "user", "content": "hi"}]}`
	for _, c := range []struct {
		name, args string
		reply      modeltest.Reply
		want       string // in the reply's JSON
	}{
		{"CRLF lines and no space after data:", stream, raw("text/event-stream",
			strings.ReplaceAll(sse(`data:{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`,
				`data:{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`, `data:[DONE]`), "\n", "\r\n")),
			`"content":"Hello"`},
		{"Azure: a first chunk of prompt filter results, no choices", stream, raw("text/event-stream", sse(
			`data: {"choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`,
			`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"content_filter_results":{}}]}`,
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `data: [DONE]`)),
			`"content":"ok"`},
		{"vLLM: null content deltas around a tool call", stream, raw("text/event-stream", sse(
			`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`,
			`data: {"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"chatcmpl-tool-1","type":"function","function":{"name":"add","arguments":""}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 1}"}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{"content":null},"finish_reason":"tool_calls"}]}`, `data: [DONE]`)),
			`"tool_calls":[{"id":"chatcmpl-tool-1","name":"add","arguments":{"a":1}}]`},
		{"the last event not closed by a blank line", stream, raw("text/event-stream",
			sse(`data: {"choices":[{"index":0,"delta":{"content":"done"}}]}`)+`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
			`"finish_reason":"stop"`},
		{"a tool's name repeated in every fragment", stream, raw("text/event-stream", sse(
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\""}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"add","arguments":": 2}"}}]}}]}`,
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)),
			`"tool_calls":[{"id":"c1","name":"add","arguments":{"a":2}}]`},
		{"reasoning text beside the content", stream, raw("text/event-stream", sse(
			`data: {"choices":[{"index":0,"delta":{"reasoning_content":"let me think"}}]}`,
			`data: {"choices":[{"index":0,"delta":{"content":"4"},"finish_reason":"stop"}]}`)),
			`"content":"4"`},
		{"content as a list of parts", whole, raw("application/json",
			`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":[{"type":"text","text":"Hello"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":" there"}]}}]}`),
			`"content":"Hello there"`},
		{"content null with a tool call, whole", whole, raw("application/json",
			`{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"add","arguments":"{}"}}]}}]}`),
			`"content":"","tool_calls":[{"id":"c9","name":"add","arguments":{}}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, a := serve(t, c.reply)
			got, ce := do(t, context.Background(), a, c.args)
			if ce != nil || !strings.Contains(got, c.want) {
				t.Fatalf("got %s %v, want %s in it", got, ce, c.want)
			}
		})
	}
}

// A chunk cut by the end of the body is a truncated stream, not a
// malformed one: the server stopped, it did not send bad JSON.
func TestCutChunkIsTruncated(t *testing.T) {
	_, a := serve(t, raw("text/event-stream", sse(`data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}`)+`data: {"choices":[{"ind`))
	_, ce := do(t, context.Background(), a, `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`)
	if ce == nil || ce.Kind != "model" || !strings.Contains(ce.Msg, "the stream ended before the reply was complete") {
		t.Fatalf("got %+v", ce)
	}
}

// An endpoint's timeout bounds a call, its stream included, and the act's
// limit is the longest endpoint's; FromEnv reads it.
func TestEndpointTimeout(t *testing.T) {
	t.Setenv("RUNEHOST_MODEL_URL", "http://127.0.0.1:1/v1")
	t.Setenv("RUNEHOST_MODEL_TIMEOUT", "250ms")
	t.Setenv("RUNEHOST_MODEL_SLOW_URL", "http://127.0.0.1:1/v1")
	t.Setenv("RUNEHOST_MODEL_SLOW_TIMEOUT", "15m")
	eps := model.FromEnv()
	if eps["default"].Timeout != 250*time.Millisecond || eps["slow"].Timeout != 15*time.Minute {
		t.Fatalf("endpoints %+v", eps)
	}
	if l := (&model.Adapter{Endpoints: eps}).Limits(); l.Time != 15*time.Minute {
		t.Fatalf("the act's limit is %s, not the slowest endpoint's", l.Time)
	}
	srv, a := serve(t, modeltest.Reply{Content: "a reply that comes slowly, chunk by chunk"})
	srv.SetOnChunk(func([]byte) { time.Sleep(100 * time.Millisecond) })
	ep := a.Endpoints["default"]
	ep.Timeout = 250 * time.Millisecond
	a.Endpoints["default"] = ep
	start := time.Now()
	_, ce := do(t, context.Background(), a, `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`)
	if ce == nil || ce.Kind != "failed" || !strings.Contains(ce.Msg, "deadline exceeded") {
		t.Fatalf("got %+v after %s", ce, time.Since(start))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %s, its endpoint allows 250ms", d)
	}
}

// An act that failed once the model had begun to answer charges what that
// answer spent (its error's data, spent_tokens); one the server refused
// charges nothing. Through an engine, so the token allowance shows it.
func TestFailedCallsCharge(t *testing.T) {
	srv := modeltest.Script(key,
		modeltest.Reply{Content: strings.Repeat("many words here ", 40), Style: modeltest.ErrorEvent},
		modeltest.Reply{Status: 401, Body: `{"error":{"message":"no"}}`},
		modeltest.Reply{Content: `{"n": "not an int"}`, Usage: &modeltest.Usage{PromptTokens: 20, CompletionTokens: 9, TotalTokens: 29}})
	defer srv.Close()
	e := acttest.Engine(t, map[string]host.Adapter{model.Tag: &model.Adapter{Endpoints: map[string]model.Endpoint{
		"default": {Name: "default", BaseURL: srv.URL + "/v1", Key: key}}}})
	acttest.Grant(t, e, "model.chat:default")
	var charged []uint64
	for i, args := range []string{
		`{messages: [{role: "user", content: "hi"}], stream: true}`,
		`{messages: [{role: "user", content: "hi"}]}`,
		`{messages: [{role: "user", content: "hi"}], response_format: {schema: {type: "object", properties: {n: {type: "integer"}}}}}`,
	} {
		got, _ := acttest.Run(t, e, acttest.Catch(`act "model.chat" `+args), nil)
		want := []string{`["failed",`, `["failed",`, `["model",`}[i]
		if !strings.HasPrefix(got, want) {
			t.Fatalf("call %d: %s, want %s…", i+1, got, want)
		}
		in, err := e.Inspect(acttest.Last())
		if err != nil {
			t.Fatal(err)
		}
		if in.Tokens.Held != 0 {
			t.Fatalf("call %d: %+v held after the call", i+1, in.Tokens)
		}
		charged = append(charged, in.Tokens.Charged)
	}
	// The cut stream: its prompt and the text that came before the error
	// (not its whole reservation of 1,024 and more); the refused call: none;
	// the reply that broke its schema: its usage.
	if charged[0] < 20 || charged[0] > 500 || charged[1] != 0 || charged[2] != 29 {
		t.Fatalf("charged %v", charged)
	}
}
