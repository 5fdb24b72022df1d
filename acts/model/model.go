// Package model holds the act model.chat: a chat completion from an
// OpenAI-compatible endpoint. The endpoint's base URL, model and key come
// from the host's configuration, never from the prog; a grant names the
// endpoint (model.chat:default). The reply is recorded like every act's, so a
// resumed prog never calls the model again for it.
package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

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
	// MaxTokens is the max_tokens sent when the prog gives none;
	// DefaultMaxTokens when 0.
	MaxTokens int64
	// Timeout is how long a call may take, a stream's last chunk
	// included; DefaultTimeout when 0 (a slow local model streaming a long
	// reply may want more).
	Timeout time.Duration
}

// DefaultTimeout is how long a call may take when its endpoint says not.
const DefaultTimeout = 2 * time.Minute

// DefaultMaxTokens is the max_tokens an act sends when neither the prog nor
// the endpoint names one: sent, so that the server keeps to what the
// act reserved of the token allowance.
const DefaultMaxTokens = 1024

// DefaultContextTokens is an endpoint's context budget when it names none.
const DefaultContextTokens = 8192

// FromEnv reads endpoints from the environment: RUNEHOST_MODEL_URL,
// RUNEHOST_MODEL, RUNEHOST_MODEL_KEY, RUNEHOST_MODEL_CONTEXT_TOKENS,
// RUNEHOST_MODEL_MAX_TOKENS and RUNEHOST_MODEL_TIMEOUT (a duration: 10m)
// configure "default"; RUNEHOST_MODEL_<NAME>_URL,
// _MODEL, _KEY, _CONTEXT_TOKENS and _MAX_TOKENS configure <name>.
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
		maxTokens, _ := strconv.ParseInt(os.Getenv(prefix+"MAX_TOKENS"), 10, 64)
		timeout, _ := time.ParseDuration(os.Getenv(prefix + "TIMEOUT"))
		out[name] = Endpoint{Name: name, BaseURL: strings.TrimSuffix(v, "/"), Model: model, Key: os.Getenv(prefix + "KEY"),
			ContextTokens: budget, MaxTokens: max(maxTokens, 0), Timeout: max(timeout, 0)}
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
	Client    *http.Client // when nil, one that uses no proxy and follows no redirect
}

// Limits declares model.chat's limits.
func (a *Adapter) Limits() host.Limits {
	t := DefaultTimeout
	for _, ep := range a.Endpoints {
		t = max(t, ep.Timeout) // Do keeps each call to its endpoint's
	}
	return host.Limits{Args: 1 << 20, Reply: 1 << 20, Time: t}
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

// Authorize allows an act on an endpoint that is configured and granted.
func (a *Adapter) Authorize(_ context.Context, op *host.Operation, grants []host.Grant) (string, error) {
	c, err := parse(op.Args)
	if err != nil {
		return "", err
	}
	name := c.endpoint
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
	c, err := parse(op.Args)
	if err != nil {
		return ""
	}
	if _, ok := a.Endpoints[c.endpoint]; !ok {
		return ""
	}
	return Tag + ":" + c.endpoint
}
