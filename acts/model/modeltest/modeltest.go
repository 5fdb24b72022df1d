// Package modeltest is a scripted OpenAI-compatible chat completions server
// on loopback, for tests: it answers each request with the next reply of
// its script (whole, or streamed as text/event-stream chunks when the
// request asks for a stream), checks the bearer key, and keeps the
// requests it saw.
package modeltest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Message is a chat message as the API carries it (content null reads "").
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// Request is what the server received; Body is its JSON as sent.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Stream   bool      `json:"stream"`
	Body     []byte    `json:"-"`
}

// ToolCall is a call a scripted reply makes.
type ToolCall struct {
	ID, Name  string
	Arguments string // JSON text, as the wire carries it (or not JSON, to test that)
}

// Usage is a reply's token usage.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int64
}

// Style is how a streamed reply is sent.
type Style int

// The styles of a stream.
const (
	OpenAI        Style = iota // content in pieces, tool calls in fragments, a usage-only chunk, [DONE]
	UsageOnFinish              // usage on the finish chunk, as llama.cpp does
	Ollama                     // each tool call whole in one chunk, every one at index 0
	ErrorEvent                 // some content, then data: {"error": ...} echoing the Authorization header
	Cut                        // some content, then the body ends: no finish, no [DONE]
	Malformed                  // some content, then a chunk that is not JSON
	Comments                   // as OpenAI, with comment and keep-alive lines between events
)

// Reply is one scripted answer.
type Reply struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string // "stop", or "tool_calls" when there are calls, when empty
	Usage        *Usage // from the words of the request and reply when nil
	Style        Style  // when the request asks for a stream

	// Status, when not 0, answers with that HTTP status, Header and Body
	// instead (a 429 with Retry-After, a 302, a 500).
	Status int
	Header map[string]string
	Body   string
}

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	Key string
	// Cycle answers from the script's start again once it is exhausted,
	// rather than with HTTP 500 (for benchmarks).
	Cycle bool

	mu       sync.Mutex
	onChunk  func(event []byte)
	script   []Reply
	Requests []Request
}

// New starts a server that answers with replies (contents) in order, then
// with HTTP 500.
func New(key string, replies ...string) *Server {
	r := make([]Reply, len(replies))
	for i, c := range replies {
		r[i] = Reply{Content: c}
	}
	return Script(key, r...)
}

// Script starts a server that answers with replies in order, then with
// HTTP 500.
func Script(key string, replies ...Reply) *Server {
	s := &Server{Key: key, script: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// ScriptOn is Script on the address addr (host:port), as a command that
// stands in for a model server listens where it is told.
func ScriptOn(addr, key string, replies ...Reply) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Key: key, script: replies}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	s.Server.Listener.Close()
	s.Server.Listener = l
	s.Server.Start()
	return s, nil
}

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetOnChunk has f called with each stream event just before it is
// written (and flushed). It may be set while the server serves: each
// request reads it under the server's lock.
func (s *Server) SetOnChunk(f func(event []byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChunk = f
}

// Calls returns how many completions were asked for.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Requests)
}

// Bodies returns the JSON bodies received, in order.
func (s *Server) Bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.Requests))
	for i, r := range s.Requests {
		out[i] = string(r.Body)
	}
	return out
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		http.Error(w, `{"error":{"message":"bad key `+r.Header.Get("Authorization")+`"}}`, http.StatusUnauthorized)
		return
	}
	var req Request
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil || json.Unmarshal(raw, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	req.Body = raw
	s.mu.Lock()
	n := len(s.Requests)
	s.Requests = append(s.Requests, req)
	onChunk := s.onChunk
	var reply Reply
	ok := n < len(s.script)
	if ok {
		reply = s.script[n]
	} else if ok = s.Cycle && len(s.script) > 0; ok {
		reply = s.script[n%len(s.script)]
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	if reply.Status != 0 {
		for k, v := range reply.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(reply.Status)
		fmt.Fprint(w, reply.Body)
		return
	}
	if reply.FinishReason == "" {
		reply.FinishReason = "stop"
		if len(reply.ToolCalls) > 0 {
			reply.FinishReason = "tool_calls"
		}
	}
	if reply.Usage == nil {
		p := int64(len(strings.Fields(req.Messages[len(req.Messages)-1].Content)))
		c := int64(len(strings.Fields(reply.Content)))
		reply.Usage = &Usage{p, c, p + c}
	}
	id := fmt.Sprintf("chatcmpl-%d", n)
	if req.Stream {
		s.stream(w, r, id, req.Model, reply, onChunk)
		return
	}
	calls := []any{}
	for _, c := range reply.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		if reply.Content == "" {
			msg["content"] = nil
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": reply.FinishReason, "message": msg}},
		"usage":   usage(reply.Usage),
	})
}

func usage(u *Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens}
}

// stream sends reply as chunks (research: the wire format of OpenAI's).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id, model string, reply Reply, onChunk func([]byte)) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(text string) {
		if reply.Style == Comments {
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		if onChunk != nil {
			onChunk([]byte(text))
		}
		fmt.Fprint(w, text)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any, u map[string]any) {
		m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if u != nil {
			m["usage"] = u
		}
		b, _ := json.Marshal(m)
		send("data: " + string(b) + "\n\n")
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	// broken sends a broken style's end, once half the content is sent.
	broken := func() bool {
		switch reply.Style {
		case ErrorEvent:
			send(`data: {"error":{"message":"the server broke; you sent ` + r.Header.Get("Authorization") + `","type":"server_error"}}` + "\n\n")
		case Cut:
		case Malformed:
			send("data: {\"id\":\"" + id + "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"\n\n")
		default:
			return false
		}
		return true
	}
	pieces := split(reply.Content)
	for i, p := range pieces {
		chunk(map[string]any{"content": p}, nil, nil)
		if i == len(pieces)/2 && broken() {
			return
		}
	}
	if len(pieces) == 0 && broken() {
		return
	}
	for i, c := range reply.ToolCalls {
		if reply.Style == Ollama {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}}}, nil, nil)
			continue
		}
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		for _, p := range split(c.Arguments) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil, nil)
		}
	}
	if reply.Style == UsageOnFinish {
		chunk(map[string]any{}, reply.FinishReason, usage(reply.Usage))
	} else {
		chunk(map[string]any{}, reply.FinishReason, nil)
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{}, "usage": usage(reply.Usage)})
		send("data: " + string(b) + "\n\n")
	}
	send("data: [DONE]\n\n")
}

// split cuts text into pieces of up to 3 characters, as a model's tokens
// come; no piece when text is empty.
func split(text string) []string {
	var out []string
	r := []rune(text)
	for len(r) > 0 {
		n := min(3, len(r))
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return out
}
