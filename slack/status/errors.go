// errors.go holds Error and Classify: what a failed call to Slack means for
// a card (retry it, back off every card, or stop), from slack-go v0.35's
// typed errors and the Web API's `error` strings.

package status

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"
)

// Class is what a failed call to Slack calls for.
type Class int

// The classes.
const (
	// Temporary: Slack or the network failed this once (5xx, a timeout, a
	// reset connection, fatal_error...). Retried with backoff, each retry
	// drawn from the budget again.
	Temporary Class = iota + 1
	// RateLimit: Slack asked us to slow down (HTTP 429, `ratelimited`,
	// `rate_limited`). The whole budget (edits) or post lane (posts) backs
	// off for RetryAfter; the call is retried after it.
	RateLimit
	// Permanent: the same call will never succeed (the message or channel
	// is gone, the token is revoked, the payload is refused). The card stops
	// being edited at once.
	Permanent
)

func (c Class) String() string {
	switch c {
	case Temporary:
		return "temporary"
	case RateLimit:
		return "rate_limit"
	case Permanent:
		return "permanent"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// DefaultRetryAfter is how long a rate limit that names no Retry-After
// (a 429 without the header, `rate_limited` with HTTP 200: slack-go does not
// pass on that response's headers) backs off for.
const DefaultRetryAfter = 2 * time.Second

// Error is a classified failure of a call to Slack.
type Error struct {
	Class Class
	// Code is Slack's `error` string (msg_blocks_too_long,
	// message_not_found...), "http_NNN" for an HTTP status, "ratelimited"
	// for a 429, "timeout", "canceled" or "network" for a call that got no
	// answer, "post_timeout" for a post that found no slot within
	// Cards.PostTimeout.
	Code string
	// RetryAfter is, for RateLimit, how long to wait (Slack's Retry-After,
	// else DefaultRetryAfter).
	RetryAfter time.Duration
	Err        error // what slack-go returned
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("slack: %s (%s)", e.Code, e.Class)
	}
	return fmt.Sprintf("slack: %s (%s): %v", e.Code, e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Why says, in a sentence for the person who asked (a plain reply when a
// card could not be posted), what went wrong.
func (e *Error) Why() string {
	switch e.Class {
	case RateLimit:
		return fmt.Sprintf("Slack is rate-limiting this app (%s): try again in a minute.", e.Code)
	case Temporary:
		return fmt.Sprintf("Slack did not answer in time (%s): try again shortly.", e.Code)
	}
	return fmt.Sprintf("Slack refused the status card (%s).", e.Code)
}

// TooBig says the payload was refused for its size (msg_blocks_too_long,
// msg_too_long, invalid_blocks): the frame is painted smaller once before the
// error counts as permanent. After Paint's bounds it should never happen.
func (e *Error) TooBig() bool {
	switch e.Code {
	case "msg_blocks_too_long", "msg_too_long", "invalid_blocks":
		return true
	}
	return false
}

// slackCodes classes the Web API's `error` strings that are not permanent;
// any other string is (Slack documents the transient ones, and a call refused
// for any other reason is refused again).
var slackCodes = map[string]Class{
	"ratelimited":         RateLimit,
	"rate_limited":        RateLimit,
	"fatal_error":         Temporary,
	"internal_error":      Temporary,
	"service_unavailable": Temporary,
	"request_timeout":     Temporary,
	"team_added_to_org":   Temporary, // a migration: "intermittently unavailable"
}

// Classify says what err, returned by a slack-go call, calls for; nil for
// nil. An *Error is returned as it is.
//
//   - *slack.RateLimitedError (HTTP 429 with Retry-After): RateLimit, its
//     RetryAfter (at least a second).
//   - slack.StatusCodeError: 429 is RateLimit; 408 and 5xx are Temporary;
//     any other status is Permanent.
//   - slack.SlackErrorResponse (HTTP 200, ok false): by its Err string:
//     ratelimited and rate_limited are RateLimit; fatal_error,
//     internal_error, service_unavailable, request_timeout and
//     team_added_to_org are Temporary; any other (msg_blocks_too_long,
//     message_not_found, channel_not_found, is_archived, not_in_channel,
//     cant_update_message, edit_window_closed, invalid_auth, token_revoked,
//     account_inactive, missing_scope, no_text...) is Permanent.
//   - context.DeadlineExceeded and context.Canceled, network errors and any
//     other error (a garbled answer): Temporary.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &Error{Class: RateLimit, Code: "ratelimited", RetryAfter: max(rl.RetryAfter, time.Second), Err: err}
	}
	var sc slack.StatusCodeError
	var scp *slack.StatusCodeError
	code := 0
	if errors.As(err, &sc) {
		code = sc.Code
	} else if errors.As(err, &scp) && scp != nil {
		code = scp.Code
	}
	if code != 0 {
		e := &Error{Code: fmt.Sprintf("http_%d", code), Err: err}
		switch {
		case code == http.StatusTooManyRequests:
			e.Class, e.RetryAfter = RateLimit, DefaultRetryAfter
		case code >= 500 || code == http.StatusRequestTimeout:
			e.Class = Temporary
		default:
			e.Class = Permanent
		}
		return e
	}
	var se slack.SlackErrorResponse
	var sep *slack.SlackErrorResponse
	slackErr, isSlack := "", false
	if errors.As(err, &se) {
		slackErr, isSlack = se.Err, true
	} else if errors.As(err, &sep) && sep != nil {
		slackErr, isSlack = sep.Err, true
	}
	if isSlack {
		e := &Error{Class: Permanent, Code: slackErr, Err: err}
		if c, ok := slackCodes[slackErr]; ok {
			e.Class = c
		}
		if e.Class == RateLimit {
			e.RetryAfter = DefaultRetryAfter
		}
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Class: Temporary, Code: "timeout", Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Class: Temporary, Code: "canceled", Err: err}
	}
	return &Error{Class: Temporary, Code: "network", Err: err}
}
