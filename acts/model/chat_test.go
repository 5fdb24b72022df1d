// chat_test.go checks model.chat's adapter against the scripted server over
// loopback: each argument as sent, replies with tool calls, streaming in
// each server's style, every error mode with its kind, retries as the
// server asks, and the key in no error.

package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/host"
)

const key = "sk-chat-secret-Key/9+xQ"

func serve(t *testing.T, replies ...modeltest.Reply) (*modeltest.Server, *model.Adapter) {
	t.Helper()
	srv := modeltest.Script(key, replies...)
	t.Cleanup(srv.Close)
	return srv, &model.Adapter{Endpoints: map[string]model.Endpoint{
		"default": {Name: "default", BaseURL: srv.URL + "/v1", Model: "tiny", Key: key}}}
}

// do runs the act with args (JSON) and returns its reply as JSON, or the
// error the prog would see.
func do(t *testing.T, ctx context.Context, a *model.Adapter, args string) (string, *checkpoint.Error) {
	t.Helper()
	v, err := a.Do(ctx, &host.Operation{Tag: model.Tag, Args: acttest.Data(t, args)})
	if err != nil {
		var ce *checkpoint.Error
		if !errors.As(err, &ce) {
			t.Fatalf("not an error the prog sees: %v", err)
		}
		noKey(t, ce.Msg)
		return "", ce
	}
	b, err := checkpoint.DataToJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func noKey(t *testing.T, s string) {
	t.Helper()
	for _, form := range redact.Forms(key) {
		for i := 0; i+8 <= len(form); i++ {
			if strings.Contains(strings.ToLower(s), strings.ToLower(form[i:i+8])) {
				t.Fatalf("%q of the key survived: %s", form[i:i+8], s)
			}
		}
	}
}

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

const hi = `[{"role": "user", "content": "hi"}]`

func TestEachArgOnTheWire(t *testing.T) {
	srv, a := serve(t, modeltest.Reply{Content: `{"a":1}`}, modeltest.Reply{Content: "ok"}, modeltest.Reply{Content: `{"a":1}`}, modeltest.Reply{Content: "ok"})
	ctx := context.Background()
	cases := []struct{ args, want string }{
		{`{"messages": [
			{"role": "system", "content": "be brief"},
			{"role": "user", "content": "add 1 and 2"},
			{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}, {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{\"a\":"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": {"sum": 3}},
			{"role": "tool", "tool_call_id": "c2", "content": "bad arguments"}],
		  "tools": [{"name": "add", "description": "adds", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}, {"name": "now"}],
		  "tool_choice": {"name": "add"},
		  "response_format": {"name": "out", "schema": {"type": "object"}, "strict": true},
		  "max_tokens": 64, "temperature": 0.5, "stop": "END", "seed": 7, "endpoint": "default"}`,
			`{"model": "tiny", "messages": [
			{"role": "system", "content": "be brief"},
			{"role": "user", "content": "add 1 and 2"},
			{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}}, {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{\"a\":"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": "{\"sum\":3}"},
			{"role": "tool", "tool_call_id": "c2", "content": "bad arguments"}],
		  "tools": [{"type": "function", "function": {"name": "add", "description": "adds", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}},
		            {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}],
		  "tool_choice": {"type": "function", "function": {"name": "add"}},
		  "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": true}},
		  "max_tokens": 64, "temperature": 0.5, "stop": "END", "seed": 7}`},
		{`{"messages": ` + hi + `, "tools": [{"name": "x"}], "tool_choice": "required", "stop": ["\n\n", "END"], "temperature": 1}`,
			`{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "x", "parameters": {"type": "object", "properties": {}}}}],
			  "tool_choice": "required", "stop": ["\n\n", "END"], "temperature": 1, "max_tokens": 1024}`},
		{`{"messages": ` + hi + `, "response_format": "json_object"}`,
			`{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}, "max_tokens": 1024}`},
		{`{"messages": ` + hi + `, "stream": true}`,
			`{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1024, "stream": true, "stream_options": {"include_usage": true}}`},
	}
	for i, c := range cases {
		if _, ce := do(t, ctx, a, c.args); ce != nil {
			t.Fatalf("case %d: %v", i, ce)
		}
		sameJSON(t, srv.Bodies()[i], c.want)
	}
}

func TestArgErrors(t *testing.T) {
	_, a := serve(t)
	for _, c := range []struct{ args, want string }{
		{`{"messages": []}`, "messages must be a non-empty list"},
		{`{"messages": [{"role": "god", "content": "x"}]}`, "messages[0].role must be"},
		{`{"messages": [{"role": "user", "content": 1}]}`, "messages[0].content must be a string"},
		{`{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}]}`, "messages[1].tool_call_id"},
		{`{"messages": [{"role": "tool", "tool_call_id": "c"}]}`, "messages[0].content must be given"},
		{`{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"name": "x"}]}]}`, "messages[0].tool_calls[0] needs a string id and name"},
		{`{"messages": [{"role": "assistant", "content": null, "tool_calls": "x"}]}`, "messages[0].tool_calls must be a list"},
		{`{"messages": ` + hi + `, "tools": [{"description": "x"}]}`, "tools[0].name"},
		{`{"messages": ` + hi + `, "tools": [{"name": "x", "parameters": "y"}]}`, "tools[0].parameters must be a map"},
		{`{"messages": ` + hi + `, "tools": [{"name": "x"}, {"name": "x"}]}`, `tools[1].name "x" is given twice`},
		{`{"messages": ` + hi + `, "tool_choice": "sometimes"}`, "tool_choice must be"},
		{`{"messages": ` + hi + `, "tools": [{"name": "x"}], "tool_choice": {"name": "y"}}`, `tool_choice names "y"`},
		{`{"messages": ` + hi + `, "response_format": "yaml"}`, "response_format must be"},
		{`{"messages": ` + hi + `, "response_format": {"schema": 1}}`, "response_format.schema must be a map"},
		{`{"messages": ` + hi + `, "response_format": {"schema": {"type": 5}}}`, "response_format.schema"},
		{`{"messages": ` + hi + `, "response_format": {"schema": {}, "strict": "yes"}}`, "response_format.strict"},
		{`{"messages": ` + hi + `, "max_tokens": 0}`, "max_tokens must be a positive int"},
		{`{"messages": ` + hi + `, "temperature": "hot"}`, "temperature must be a number"},
		{`{"messages": ` + hi + `, "stop": [1]}`, "stop[0] must be a string"},
		{`{"messages": ` + hi + `, "stop": 3}`, "stop must be a string"},
		{`{"messages": ` + hi + `, "seed": 1.5}`, "seed must be an int"},
		{`{"messages": ` + hi + `, "stream": "yes"}`, "stream must be true or false"},
		{`{"messages": ` + hi + `, "endpoint": 1}`, "endpoint must be a string"},
		{`{"messages": ` + hi + `, "max_token": 5}`, "unknown argument max_token"},
	} {
		_, ce := do(t, context.Background(), a, c.args)
		if ce == nil || ce.Kind != "value" || !strings.Contains(ce.Msg, c.want) {
			t.Errorf("%s: got %v, want a value error with %q", c.args, ce, c.want)
		}
	}
}

var calls = []modeltest.ToolCall{
	{ID: "call_a", Name: "get", Arguments: `{"path":"a.txt","n":1}`},
	{ID: "call_b", Name: "put", Arguments: `{"path": "b`}, // cut: not JSON
	{ID: "call_c", Name: "now", Arguments: ``},
}

const callsJSON = `[{"id":"call_a","name":"get","arguments":{"path":"a.txt","n":1}},
	{"id":"call_b","name":"put","arguments":"{\"path\": \"b","arguments_error":"invalid JSON: unexpected EOF"},
	{"id":"call_c","name":"now","arguments":{}}]`

func TestToolCallReply(t *testing.T) {
	_, a := serve(t, modeltest.Reply{ToolCalls: calls, Usage: &modeltest.Usage{PromptTokens: 5, CompletionTokens: 6, TotalTokens: 11}})
	got, ce := do(t, context.Background(), a, `{"messages": `+hi+`, "tools": [{"name": "get"}, {"name": "put"}, {"name": "now"}]}`)
	if ce != nil {
		t.Fatal(ce)
	}
	sameJSON(t, got, `{"content": "", "tool_calls": `+callsJSON+`, "finish_reason": "tool_calls", "model": "tiny",
		"usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
		"context": {"admitted": [{"name": "user#1", "tokens": 5}], "dropped": []}}`)
	if n := a.Spent(mustData(t, got)); n != 11 {
		t.Fatalf("spent %d, want the usage's 11", n)
	}
}

func mustData(t *testing.T, j string) any {
	v, err := checkpoint.DataFromJSON([]byte(j))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// shown collects what host.Stream shows.
type shown struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *shown) add(text string) { s.mu.Lock(); s.b.WriteString(text); s.mu.Unlock() }

// wait returns what was shown once it is want (the coalescer holds text
// for up to host.StreamEvery), or what it is after a while.
func (s *shown) wait(want string) string {
	for range 100 {
		s.mu.Lock()
		got := s.b.String()
		s.mu.Unlock()
		if got == want {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStreams(t *testing.T) {
	const text = "Hello there, I will call a tool now. "
	u := &modeltest.Usage{PromptTokens: 5, CompletionTokens: 6, TotalTokens: 11}
	for _, c := range []struct {
		name  string
		style modeltest.Style
	}{{"openai", modeltest.OpenAI}, {"usage on the finish chunk", modeltest.UsageOnFinish}, {"ollama", modeltest.Ollama}, {"comments", modeltest.Comments}} {
		t.Run(c.name, func(t *testing.T) {
			_, a := serve(t, modeltest.Reply{Content: text, ToolCalls: calls, Usage: u, Style: c.style})
			var s shown
			got, ce := do(t, host.WithStream(context.Background(), s.add), a, `{"messages": `+hi+`, "stream": true}`)
			if ce != nil {
				t.Fatal(ce)
			}
			sameJSON(t, got, `{"content": "`+text+`", "tool_calls": `+callsJSON+`, "finish_reason": "tool_calls", "model": "tiny",
				"usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
				"context": {"admitted": [{"name": "user#1", "tokens": 5}], "dropped": []}}`)
			if s := s.wait(text); s != text {
				t.Fatalf("shown %q, want %q", s, text)
			}
		})
	}
}

// A server that answers a stream request with a whole completion is read
// as one.
func TestStreamAskedAnsweredWhole(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"model":"m","choices":[{"message":{"role":"assistant","content":"whole "},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	var s shown
	got, ce := do(t, host.WithStream(context.Background(), s.add), a, `{"messages": `+hi+`, "stream": true}`)
	if ce != nil || !strings.Contains(got, `"content":"whole "`) || s.wait("whole ") != "whole " {
		t.Fatalf("got %s %v, shown %q", got, ce, s.wait("whole "))
	}
}

func TestErrorModes(t *testing.T) {
	stream := `{"messages": ` + hi + `, "stream": true}`
	for _, c := range []struct {
		name       string
		reply      modeltest.Reply
		args       string
		kind, want string
	}{
		{"error event", modeltest.Reply{Content: "partial answer", Style: modeltest.ErrorEvent}, stream, "failed", "model.chat default: the server sent an error mid-stream: the server broke; you sent Bearer «redacted»"},
		{"cut stream", modeltest.Reply{Content: "partial answer", Style: modeltest.Cut}, stream, "model", "model.chat default: the stream ended before the reply was complete"},
		{"cut before any content", modeltest.Reply{Style: modeltest.Cut}, stream, "model", "the stream ended before the reply was complete"},
		{"malformed chunk", modeltest.Reply{Content: "partial answer", Style: modeltest.Malformed}, stream, "model", "model.chat default: a malformed stream chunk: unexpected end of JSON input"},
		{"schema violated", modeltest.Reply{Content: `{"n": "three"}`},
			`{"messages": ` + hi + `, "response_format": {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}`,
			"model", "model.chat default: the reply does not match its schema: validating root: validating /properties/n: type: three has type \"string\", want \"integer\""},
		{"schema violated, streamed", modeltest.Reply{Content: `{}`},
			`{"messages": ` + hi + `, "stream": true, "response_format": {"schema": {"type": "object", "required": ["n"]}}}`,
			"model", "the reply does not match its schema: validating root: required: missing properties: [\"n\"]"},
		{"not JSON under a schema", modeltest.Reply{Content: "sure! here"}, `{"messages": ` + hi + `, "response_format": {"schema": {}}}`, "model", "the reply is not JSON (response_format json_schema)"},
		{"not an object", modeltest.Reply{Content: "[1]"}, `{"messages": ` + hi + `, "response_format": "json_object"}`, "model", "the reply is not a JSON object (response_format json_object)"},
		{"not a chat completion", modeltest.Reply{Status: 200, Body: `{"object": "list"}`}, `{"messages": ` + hi + `}`, "model", "model.chat default: not a chat completion"},
		{"redirect", modeltest.Reply{Status: 302, Header: map[string]string{"Location": "http://127.0.0.1:1/elsewhere"}}, `{"messages": ` + hi + `}`, "failed", "model.chat default: HTTP 302"},
		{"server error", modeltest.Reply{Status: 500, Body: "boom"}, `{"messages": ` + hi + `}`, "failed", "model.chat default: HTTP 500: boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, a := serve(t, c.reply)
			got, ce := do(t, context.Background(), a, c.args)
			if ce == nil || ce.Kind != c.kind || !strings.HasPrefix(strings.TrimPrefix(ce.Msg, "model.chat default: "), strings.TrimPrefix(c.want, "model.chat default: ")) ||
				(strings.HasPrefix(c.want, "model.chat") && !strings.HasPrefix(ce.Msg, c.want)) {
				t.Fatalf("got %s %+v, want %s: %s…", got, ce, c.kind, c.want)
			}
			if srv.Calls() != 1 {
				t.Fatalf("%d calls", srv.Calls())
			}
		})
	}
}

func TestKeyNotInAStreamError(t *testing.T) {
	_, a := serve(t, modeltest.Reply{Content: "x", Style: modeltest.ErrorEvent})
	_, ce := do(t, context.Background(), a, `{"messages": `+hi+`, "stream": true}`)
	if ce == nil || !strings.Contains(ce.Msg, "you sent Bearer") {
		t.Fatalf("got %v", ce) // do checked the key is not in it
	}
}

func TestBodyCapped(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"` + big + `"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	if _, ce := do(t, context.Background(), a, `{"messages": `+hi+`}`); ce == nil || ce.Kind != "failed" || !strings.Contains(ce.Msg, "over 1 MiB") {
		t.Fatalf("got %v", ce)
	}
	// A stream of more than the cap, however it is cut in chunks.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range model.StreamCap/(64<<10) + 2 {
			w.Write([]byte(": " + strings.Repeat("p", 64<<10) + "\n\n"))
		}
	}))
	defer srv2.Close()
	a = &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv2.URL + "/v1"}}}
	if _, ce := do(t, context.Background(), a, `{"messages": `+hi+`, "stream": true}`); ce == nil || ce.Kind != "failed" || !strings.Contains(ce.Msg, "more than its cap") {
		t.Fatalf("got %v", ce)
	}
}

func TestRetryAfter(t *testing.T) {
	busy := func(h map[string]string) modeltest.Reply {
		return modeltest.Reply{Status: 429, Header: h, Body: `{"error":{"message":"slow down"}}`}
	}
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	t.Run("honoured", func(t *testing.T) {
		srv, a := serve(t, busy(map[string]string{"Retry-After-Ms": "60"}),
			modeltest.Reply{Status: 503, Header: map[string]string{"Retry-After": past}}, modeltest.Reply{Content: "ok"})
		start := time.Now()
		got, ce := do(t, context.Background(), a, `{"messages": `+hi+`}`)
		if ce != nil || !strings.Contains(got, `"content":"ok"`) || srv.Calls() != 3 {
			t.Fatalf("got %s %v after %d calls", got, ce, srv.Calls())
		}
		if d := time.Since(start); d < 60*time.Millisecond {
			t.Fatalf("asked again after %s, the server asked for 60ms", d)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		srv, a := serve(t, busy(map[string]string{"Retry-After": "0"}), busy(map[string]string{"Retry-After": "0"}), busy(map[string]string{"Retry-After": "0.01"}), modeltest.Reply{Content: "ok"})
		_, ce := do(t, context.Background(), a, `{"messages": `+hi+`}`)
		if ce == nil || ce.Kind != "rate" || ce.Msg != `model.chat default: HTTP 429 after 3 attempts: the server asked to wait 10ms: {"error":{"message":"slow down"}}` || srv.Calls() != 3 {
			t.Fatalf("got %+v after %d calls", ce, srv.Calls())
		}
	})
	t.Run("too long for the act", func(t *testing.T) {
		srv, a := serve(t, busy(map[string]string{"Retry-After": "30"}), modeltest.Reply{Content: "ok"})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, ce := do(t, ctx, a, `{"messages": `+hi+`}`)
		if ce == nil || ce.Kind != "rate" || !strings.Contains(ce.Msg, "HTTP 429 after 1 attempt: the server asked to wait 30s") || srv.Calls() != 1 {
			t.Fatalf("got %+v after %d calls", ce, srv.Calls())
		}
		// The wait is the error's data, for the prog's own retry.
		if d, err := checkpoint.DecodeData(ce.Data); err != nil || acttest.JSON(t, ce.Data) != `{"retry_after_ms":30000}` {
			t.Fatalf("data %v %v", d, err)
		}
	})
}

func TestKeyInNoError(t *testing.T) {
	srv := modeltest.New("another-key")
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1", Key: key}}}
	_, ce := do(t, context.Background(), a, `{"messages": `+hi+`}`)
	if ce == nil || !strings.HasPrefix(ce.Msg, "model.chat default: HTTP 401") || !strings.Contains(ce.Msg, "«redacted»") {
		t.Fatalf("got %v", ce)
	}
}

// Assembly drops old turns but never a tool call without its reply, nor a
// reply without its call: a server rejects an orphan tool_call_id.
func TestAssemblyKeepsPairs(t *testing.T) {
	srv, a := serve(t, modeltest.Reply{Content: "ok"}, modeltest.Reply{Content: "ok"})
	ep := a.Endpoints["default"]
	ep.ContextTokens = 80
	a.Endpoints["default"] = ep
	long := strings.Repeat("w", 200) // 50 tokens
	args := `{"messages": [
		{"role": "system", "content": "s"},
		{"role": "user", "content": "` + long + `"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "name": "f", "arguments": {}}, {"id": "c2", "name": "f", "arguments": {}}]},
		{"role": "tool", "tool_call_id": "c1", "content": "` + long + `"},
		{"role": "tool", "tool_call_id": "c2", "content": "short"},
		{"role": "user", "content": "and then?"}]}`
	got, ce := do(t, context.Background(), a, args)
	if ce != nil {
		t.Fatal(ce)
	}
	var body struct{ Messages []modeltest.Message }
	json.Unmarshal([]byte(srv.Bodies()[0]), &body)
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	// The pair (72 tokens) does not fit beside the rest: it goes whole, and
	// the user turn before it with it (no holes).
	if strings.Join(roles, " ") != "system user" || !strings.Contains(got, `"dropped":[{"name":"user#2","tokens":54},{"name":"assistant#3","tokens":11},{"name":"tool#4","tokens":55},{"name":"tool#5","tokens":6}]`) {
		t.Fatalf("sent %v; reply %s", roles, got)
	}
	// Ending on a tool reply, the call it answers is kept with it.
	args = strings.Replace(args, `,
		{"role": "user", "content": "and then?"}]}`, `]}`, 1)
	if _, ce := do(t, context.Background(), a, args); ce != nil {
		t.Fatal(ce)
	}
	json.Unmarshal([]byte(srv.Bodies()[1]), &body)
	roles = nil
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, " ") != "system assistant tool tool" {
		t.Fatalf("sent %v", roles)
	}
}

func TestMetered(t *testing.T) {
	_, a := serve(t)
	op := func(args string) *host.Operation { return &host.Operation{Tag: model.Tag, Args: acttest.Data(t, args)} }
	n, err := a.Reserve(op(`{"messages": ` + hi + `}`))
	if err != nil || n != 5+model.DefaultMaxTokens {
		t.Fatalf("reserve %d %v", n, err)
	}
	tools := `, "tools": [{"name": "search", "description": "searches the web for a query", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]`
	m, _ := a.Reserve(op(`{"messages": ` + hi + `, "max_tokens": 10` + tools + `}`))
	if m <= 15 {
		t.Fatalf("reserve %d: the tools' schema is not counted", m)
	}
	if _, err := a.Reserve(op(`{"messages": []}`)); err == nil {
		t.Fatal("reserved for bad arguments")
	}
	// No usage from the server: the estimate.
	r := mustData(t, `{"content": "abcdefgh", "tool_calls": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, "context": {"admitted": [{"name": "user#1", "tokens": 5}], "dropped": []}}`)
	if n := a.Spent(r); n != 7 {
		t.Fatalf("spent %d, want 5 + 2", n)
	}
	if _, found, err := a.Lookup(context.Background(), op(`{"messages": `+hi+`}`)); found || err != nil {
		t.Fatal("a model call was found")
	}
}
