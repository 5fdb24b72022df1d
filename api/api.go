// Package api holds the wire types of runehost's HTTP API (docs/api.md):
// what the server answers and what its clients (the CLI, the page, Slack)
// send, as JSON. It knows nothing of how the host keeps them.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Version is the API's version, the first part of every route's path.
const Version = "v1"

// Error codes: stable names a client may branch on. The message is for a
// person and may change.
const (
	CodeBadRequest   = "bad_request"   // the request is malformed (400)
	CodeUnauthorized = "unauthorized"  // no or a wrong bearer token (401)
	CodeNotFound     = "not_found"     // no such invocation, act, grant or route (404)
	CodeConflict     = "conflict"      // the request does not fit the invocation's state (409)
	CodeCompile      = "compile_error" // the prog does not compile (422)
	CodeRefused      = "refused"       // refused by policy: --strict-grants (403)
	CodeTooLarge     = "too_large"     // the request body is over its cap (413)
	CodeUnavailable  = "unavailable"   // the server is stopping (503)
	CodeTooMany      = "too_many"      // over a cap of live event streams, per run or link or overall; try again after RetryAfter (429)
	CodeInternal     = "internal"      // the host failed (500)
)

// Error is every error the API answers, as {"error": {...}}.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Missing, of a run refused by StrictGrants, is the act tags no grant
	// covers.
	Missing    []string `json:"missing_grants,omitempty"`
	GrantHints []string `json:"grant_hints,omitempty"` // how to grant each of Missing (RunResponse.GrantHints)
	// Bound, of a run refused because its prog's name is bound to another
	// file or source (CodeConflict), is what it is bound to: "file:PATH"
	// or "sha256:HASH".
	Bound string `json:"bound,omitempty"`
	// RetryAfter, of CodeTooMany, is the seconds to wait before trying
	// again, as the answer's Retry-After header says too.
	RetryAfter int `json:"retry_after,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Status is the HTTP status of an error's code.
func (e *Error) Status() int {
	switch e.Code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeCompile:
		return http.StatusUnprocessableEntity
	case CodeRefused:
		return http.StatusForbidden
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeTooMany:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// Errorf returns an *Error with code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf is err's code: CodeInternal for an error that is not an *Error.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// RunRequest admits a prog and runs it (POST /v1/runs).
type RunRequest struct {
	Prog   string `json:"prog"`   // the prog's name: its state and grants are the prog's
	Source string `json:"source"` // the prog's source text
	// Path is the absolute path of the file the source was read from. The
	// prog is bound to it (to the source's hash when there is no path): a
	// run of the same name from another file is refused (CodeConflict,
	// with Bound) unless Replace.
	Path    string          `json:"path,omitempty"`
	Replace bool            `json:"replace,omitempty"` // bind the prog to this file (or source) instead, keeping its state and grants
	Input   json.RawMessage `json:"input,omitempty"`   // the prog's input as JSON; null when absent
	Limit   uint64          `json:"limit,omitempty"`   // the step limit; 10,000,000 when 0
	// Tokens is the model-token limit (host.DefaultTokens, 200,000, when
	// absent); 0 allows no model calls.
	Tokens *uint64 `json:"tokens,omitempty"`
	Seed   *uint64 `json:"seed,omitempty"` // random()'s seed; from the clock when absent
	// StrictGrants refuses a prog whose act tags are not all granted
	// (CodeRefused), instead of admitting it with Missing listed.
	StrictGrants bool `json:"strict_grants,omitempty"`
}

// RunResponse is an admitted run.
type RunResponse struct {
	Invocation string   `json:"invocation"`
	Missing    []string `json:"missing_grants,omitempty"` // act tags no grant covers: they will be denied
	// GrantHints says, for each of Missing, how to grant it: a command, or
	// what its target is when it needs one.
	GrantHints []string `json:"grant_hints,omitempty"`
	Cursor     string   `json:"cursor"` // the events stream of its tree from its start
}

// RunState says where an invocation (and its tree) stands: the last message
// of a stream that settles, and the answer of the actions that drive one.
type RunState struct {
	Invocation string          `json:"invocation"`
	Status     string          `json:"status"`           // running, waiting, joining, completed, failed, cancelled, conflict
	Result     json.RawMessage `json:"result,omitempty"` // once completed (or conflict)
	Answer     string          `json:"answer,omitempty"` // the result as text, redacted
	Error      *RunError       `json:"error,omitempty"`  // once failed
	Waiting    string          `json:"waiting,omitempty"`
	Awaits     []string        `json:"awaits,omitempty"`   // the event tags it waits for, when it awaits one
	Deadline   int64           `json:"deadline,omitempty"` // unix ms, of an await with a timeout
	Sleeps     int64           `json:"sleeps,omitempty"`   // unix ms: its tree waits only for timers, and goes on by itself then
	Command    string          `json:"command,omitempty"`  // the command that answers what it waits for
	Unknown    *Act            `json:"unknown,omitempty"`  // the act of unknown outcome it waits on
	Paused     string          `json:"paused,omitempty"`   // why the host cannot run it: an operator resumes it
	Cursor     string          `json:"cursor,omitempty"`   // of the events stream, after the action
	Steps      uint64          `json:"steps,omitempty"`    // charged so far
	Tokens     uint64          `json:"tokens,omitempty"`   // model tokens charged so far
	Started    int64           `json:"started,omitempty"`  // unix ms, when it was admitted
	Ended      int64           `json:"ended,omitempty"`    // unix ms, once it ended
}

// RunError is a prog's uncaught error.
type RunError struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	Text    string   `json:"text"` // as the CLI prints it: POSITION: KIND: MESSAGE
	Trace   []string `json:"trace,omitempty"`
}

// Terminal says whether a status is an end.
func Terminal(status string) bool {
	switch status {
	case "completed", "failed", "cancelled", "conflict":
		return true
	}
	return false
}

// Invocation is one row of the list (GET /v1/invocations).
type Invocation struct {
	ID       string `json:"invocation"`
	Prog     string `json:"prog,omitempty"`
	Revision uint64 `json:"revision"`
	Status   string `json:"status"` // persisted, or projected: queued, unknown, damaged
	Parent   string `json:"parent,omitempty"`
	Paused   string `json:"paused,omitempty"`
	Damage   string `json:"damage,omitempty"`
	Admitted int64  `json:"admitted,omitempty"` // unix ms
	Ended    int64  `json:"ended,omitempty"`
}

// List is a page of invocations in id order; Next, when not "", is the
// after= of the next page.
type List struct {
	Invocations []Invocation `json:"invocations"`
	Next        string       `json:"next,omitempty"`
}

// Act is an act as inspect shows it.
type Act struct {
	Invocation string          `json:"invocation,omitempty"`
	Ordinal    uint64          `json:"ordinal"`
	Tag        string          `json:"tag"`
	Args       json.RawMessage `json:"args"`
	Phase      string          `json:"phase"`
	Grant      *string         `json:"grant,omitempty"` // the statement that allowed it; "" when denied
	Outcome    string          `json:"outcome,omitempty"`
}

// Send delivers an event (POST /v1/invocations/{id}/send).
type Send struct {
	Tag     string          `json:"tag"`
	Payload json.RawMessage `json:"payload"`
}

// Resolve settles an act of unknown outcome
// (POST /v1/invocations/{id}/acts/{ordinal}/resolve): exactly one of
// Outcome and Error.
type Resolve struct {
	Outcome json.RawMessage `json:"outcome,omitempty"`
	Error   *ActError       `json:"error,omitempty"`
}

// ActError is an act's error as an operator gives it.
type ActError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Grant is one grant (GET /v1/grants).
type Grant struct {
	Prog      string `json:"prog"`
	Statement string `json:"statement"`
	Tag       string `json:"tag,omitempty"`
	Target    string `json:"target,omitempty"`
	Granted   int64  `json:"granted,omitempty"` // unix ms
	Damage    string `json:"damage,omitempty"`
}

// GrantRequest grants or revokes (POST /v1/grants, POST /v1/grants/revoke).
type GrantRequest struct {
	Prog       string   `json:"prog"`
	Statements []string `json:"statements"`
}

// Revoked answers a revocation: how many of the statements were granted.
type Revoked struct {
	Revoked []string `json:"revoked"`
	Absent  []string `json:"absent,omitempty"`
}

// LinkRequest makes a capability link to a run's page.
type LinkRequest struct {
	TTL string `json:"ttl,omitempty"` // a Go duration; 7 days when ""
}

// Link is a capability link; Token and URL only when it is made.
type Link struct {
	ID      string `json:"id"`
	Run     string `json:"run"`
	Token   string `json:"token,omitempty"`
	URL     string `json:"url,omitempty"`
	Created int64  `json:"created"`
	Expires int64  `json:"expires"`
	Revoked bool   `json:"revoked,omitempty"`
}

// Health is GET /healthz.
type Health struct {
	Status  string `json:"status"` // ok, or stopping
	PID     int    `json:"pid"`
	Version string `json:"version"`
	Host    string `json:"host,omitempty"` // its name among the hosts of a shared store (claims name it)
	// Fenced counts the commits its claims' fence refused since it
	// started: writes of trees it no longer held, or made while it was cut
	// off from the store. Each is a write another host's takeover made
	// stale, refused rather than applied.
	Fenced int64 `json:"fenced,omitempty"`
}

// Discovery is the file a server writes in its store directory
// (serve.json) so that commands on that store find it.
type Discovery struct {
	PID    int    `json:"pid"`
	Socket string `json:"socket"`           // the Unix socket's path
	Listen string `json:"listen,omitempty"` // the TCP address, when it listens on one
}
