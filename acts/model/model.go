// Package model holds the act model.chat: a chat completion from an
// OpenAI-compatible endpoint. The endpoint's base URL, model and key come
// from the host's configuration, never from the prog; a grant names the
// endpoint (model.chat:default). The reply is recorded like every act's, so a
// resumed prog never calls the model again for it.
package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/acts/args"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/host"
)

// Tag is the act.
const Tag = "model.chat"

// DefaultEndpoint is the endpoint an act names when it names none.
const DefaultEndpoint = "default"

// Endpoint is a configured model endpoint.
type Endpoint struct {
	Name    string
	BaseURL string // up to /v1: the request goes to BaseURL + "/chat/completions"
	Model   string
	Key     string // sent as a bearer token; never shown
	// ContextTokens is the budget of a request's messages, estimated at four
	// characters a token; DefaultContextTokens when 0.
	ContextTokens int64
}

// DefaultContextTokens is an endpoint's context budget when it names none.
const DefaultContextTokens = 8192

// FromEnv reads endpoints from the environment: RUNEHOST_MODEL_URL,
// RUNEHOST_MODEL, RUNEHOST_MODEL_KEY and RUNEHOST_MODEL_CONTEXT_TOKENS
// configure "default"; RUNEHOST_MODEL_<NAME>_URL, _MODEL, _KEY and
// _CONTEXT_TOKENS configure <name>.
func FromEnv() map[string]Endpoint {
	out := map[string]Endpoint{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "RUNEHOST_MODEL") || !strings.HasSuffix(k, "URL") {
			continue
		}
		prefix := strings.TrimSuffix(k, "URL")
		name := strings.ToLower(strings.Trim(strings.TrimPrefix(prefix, "RUNEHOST_MODEL"), "_"))
		if name == "" {
			name = DefaultEndpoint
		}
		model := os.Getenv(prefix + "MODEL")
		if prefix == "RUNEHOST_MODEL_" {
			model = os.Getenv("RUNEHOST_MODEL")
		}
		budget, _ := strconv.ParseInt(os.Getenv(prefix+"CONTEXT_TOKENS"), 10, 64)
		out[name] = Endpoint{Name: name, BaseURL: strings.TrimSuffix(v, "/"), Model: model, Key: os.Getenv(prefix + "KEY"), ContextTokens: budget}
	}
	return out
}

// defaultClient uses no proxy from the environment and follows no
// redirect: the key goes to the configured endpoint and nowhere else.
var defaultClient = &http.Client{
	Transport:     &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Adapter is the model.chat act.
type Adapter struct {
	Endpoints map[string]Endpoint
	Client    *http.Client // http.DefaultClient when nil
}

// Limits declares model.chat's limits.
func (a *Adapter) Limits() host.Limits {
	return host.Limits{Args: 1 << 20, Reply: 1 << 20, Time: 2 * time.Minute}
}

// Secrets returns the keys of the configured endpoints, which are redacted
// wherever they appear.
func (a *Adapter) Secrets() []string {
	var out []string
	for _, e := range a.Endpoints {
		if e.Key != "" {
			out = append(out, e.Key)
		}
	}
	return out
}

// CheckGrant accepts the name of a configured endpoint.
func (a *Adapter) CheckGrant(_, target string) (string, error) {
	if _, ok := a.Endpoints[target]; !ok {
		names := make([]string, 0, len(a.Endpoints))
		for n := range a.Endpoints {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return "", errors.New("no model endpoint is configured: set RUNEHOST_MODEL_URL (and RUNEHOST_MODEL, RUNEHOST_MODEL_KEY) where runehost runs")
		}
		if target == "" {
			return "", fmt.Errorf("want an endpoint: %s:NAME (configured: %s)", Tag, strings.Join(names, ", "))
		}
		return "", fmt.Errorf("no model endpoint %q is configured (configured: %s; see RUNEHOST_MODEL_URL)", target, strings.Join(names, ", "))
	}
	return target, nil
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type request struct {
	// Model is the endpoint's; with none configured (RUNEHOST_MODEL unset)
	// the field is left out, for a server that serves one model, rather
	// than sent empty.
	Model       string    `json:"model,omitempty"`
	Messages    []message `json:"messages"`
	MaxTokens   int64     `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
}

type response struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

func (a *Adapter) parse(op *host.Operation) (string, *request, error) {
	m, err := args.Map(op.Args, Tag, "{messages, endpoint, max_tokens, temperature}")
	if err != nil {
		return "", nil, err
	}
	name := DefaultEndpoint
	if v, ok := m.Get("endpoint"); ok {
		if name, ok = v.(string); !ok {
			return "", nil, args.Errorf("model.chat: endpoint must be a string")
		}
	}
	req := &request{}
	msgs, _ := m.Get("messages")
	list, ok := msgs.([]any)
	if !ok || len(list) == 0 {
		return "", nil, args.Errorf("model.chat: messages must be a non-empty list of {role, content}")
	}
	for _, x := range list {
		mm, ok := x.(*checkpoint.Map)
		if !ok {
			return "", nil, args.Errorf("model.chat: each message must be a map {role, content}")
		}
		r, _ := mm.Get("role")
		c, _ := mm.Get("content")
		rs, rok := r.(string)
		cs, cok := c.(string)
		if !rok || !cok || (rs != "system" && rs != "user" && rs != "assistant") {
			return "", nil, args.Errorf("model.chat: a message needs role system, user or assistant and a string content")
		}
		req.Messages = append(req.Messages, message{rs, cs})
	}
	if v, ok := m.Get("max_tokens"); ok {
		if req.MaxTokens, ok = v.(int64); !ok || req.MaxTokens <= 0 {
			return "", nil, args.Errorf("model.chat: max_tokens must be a positive int")
		}
	}
	if v, ok := m.Get("temperature"); ok {
		f, ok := v.(float64)
		if i, iok := v.(int64); iok {
			f, ok = float64(i), true
		}
		if !ok {
			return "", nil, args.Errorf("model.chat: temperature must be a number")
		}
		req.Temperature = &f
	}
	return name, req, nil
}

// Authorize allows an act on an endpoint that is configured and granted.
func (a *Adapter) Authorize(_ context.Context, op *host.Operation, grants []host.Grant) (string, error) {
	name, _, err := a.parse(op)
	if err != nil {
		return "", err
	}
	if _, ok := a.Endpoints[name]; !ok {
		return "", fmt.Errorf("model.chat: no endpoint %q is configured", name)
	}
	for _, g := range grants {
		if g.Target() == name {
			return g.Statement, nil
		}
	}
	return "", fmt.Errorf("model.chat: endpoint %q is not granted", name)
}

// Suggest names the endpoint to grant for op, if it is configured.
func (a *Adapter) Suggest(op *host.Operation) string {
	name, _, err := a.parse(op)
	if _, ok := a.Endpoints[name]; err != nil || !ok {
		return ""
	}
	return Tag + ":" + name
}

// Do asks the endpoint for one completion.
func (a *Adapter) Do(ctx context.Context, op *host.Operation) (any, error) {
	name, req, err := a.parse(op)
	if err != nil {
		return nil, err
	}
	ep := a.Endpoints[name]
	req.Model = ep.Model
	var admitted, dropped []any
	req.Messages, admitted, dropped = assemble(req.Messages, ep.ContextTokens)
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if ep.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+ep.Key)
	}
	c := a.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(hr)
	if err != nil {
		return nil, a.failed(ep, "model.chat %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, a.failed(ep, "model.chat %s: reading the reply: %v", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, a.failed(ep, "model.chat %s: HTTP %d: %s", name, resp.StatusCode, b)
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) == 0 {
		return nil, a.failed(ep, "model.chat %s: not a chat completion: %s", name, b)
	}
	out := &checkpoint.Map{}
	out.Set("content", r.Choices[0].Message.Content)
	out.Set("finish_reason", r.Choices[0].FinishReason)
	out.Set("model", r.Model)
	u := &checkpoint.Map{}
	u.Set("prompt_tokens", r.Usage.PromptTokens)
	u.Set("completion_tokens", r.Usage.CompletionTokens)
	u.Set("total_tokens", r.Usage.TotalTokens)
	out.Set("usage", u)
	ctxm := &checkpoint.Map{}
	ctxm.Set("admitted", admitted)
	ctxm.Set("dropped", dropped)
	out.Set("context", ctxm)
	return out, nil
}

// tokens estimates a message's tokens: four characters a token, and a few
// for the message itself.
func tokens(m message) int64 { return int64(len(m.Content)+3)/4 + 4 }

// assemble fits messages to a budget: every system message and the last
// message stay; the others are admitted newest first while they fit, and
// the older ones dropped. It returns the messages in their order, and the
// admitted and dropped blocks as {name, tokens}.
func assemble(msgs []message, budget int64) ([]message, []any, []any) {
	if budget <= 0 {
		budget = DefaultContextTokens
	}
	keep := make([]bool, len(msgs))
	var used int64
	for i, m := range msgs {
		if m.Role == "system" || i == len(msgs)-1 {
			keep[i] = true
			used += tokens(m)
		}
	}
	for i := len(msgs) - 2; i >= 0; i-- {
		if !keep[i] && used+tokens(msgs[i]) <= budget {
			keep[i] = true
			used += tokens(msgs[i])
		} else if !keep[i] {
			break // older ones are dropped too: no holes in a conversation
		}
	}
	var out []message
	var admitted, dropped []any
	for i, m := range msgs {
		b := &checkpoint.Map{}
		b.Set("name", fmt.Sprintf("%s#%d", m.Role, i+1))
		b.Set("tokens", tokens(m))
		if keep[i] {
			out = append(out, m)
			admitted = append(admitted, b)
		} else {
			dropped = append(dropped, b)
		}
	}
	if admitted == nil {
		admitted = []any{}
	}
	if dropped == nil {
		dropped = []any{}
	}
	return out, admitted, dropped
}

// failed is an error the prog sees, with the endpoint's key taken out
// whatever the server echoed, raw or encoded.
func (a *Adapter) failed(ep Endpoint, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if ep.Key != "" {
		msg = redact.New(ep.Key).Known(msg) // before the cut, so no part of it is left
	}
	if r := []rune(msg); len(r) > 400 {
		msg = string(r[:400]) + "…"
	}
	return &checkpoint.Error{Kind: "failed", Msg: msg}
}

var (
	_ host.Authorizer   = (*Adapter)(nil)
	_ host.GrantChecker = (*Adapter)(nil)
	_ host.Limited      = (*Adapter)(nil)
	_ host.Suggester    = (*Adapter)(nil)
)
