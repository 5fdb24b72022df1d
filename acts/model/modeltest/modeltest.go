// Package modeltest is a scripted OpenAI-compatible chat completions server
// on loopback, for tests: it answers each request with the next reply of
// its script, checks the bearer key, and keeps the requests it saw.
package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Message is a chat message as the API carries it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what the server received.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
}

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	Key string

	mu       sync.Mutex
	script   []string // replies, in order
	Requests []Request
}

// New starts a server that answers with replies in order, then with HTTP 500.
func New(key string, replies ...string) *Server {
	s := &Server{Key: key, script: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Calls returns how many completions were asked for.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Requests)
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
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.Requests)
	s.Requests = append(s.Requests, req)
	s.mu.Unlock()
	if n >= len(s.script) {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	reply := s.script[n]
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply}}},
		"usage":   map[string]any{"prompt_tokens": len(strings.Fields(req.Messages[len(req.Messages)-1].Content)), "completion_tokens": len(strings.Fields(reply)), "total_tokens": 0},
	})
}
