// errors_test.go: Classify against slack-go v0.35's typed errors, as the
// client really returns them.

package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err   error
		class Class
		code  string
		after time.Duration
	}{
		{&slack.RateLimitedError{RetryAfter: 30 * time.Second}, RateLimit, "ratelimited", 30 * time.Second},
		{&slack.RateLimitedError{}, RateLimit, "ratelimited", time.Second},
		{slack.StatusCodeError{Code: 429, Status: "429 Too Many Requests"}, RateLimit, "http_429", DefaultRetryAfter},
		{slack.SlackErrorResponse{Err: "rate_limited"}, RateLimit, "rate_limited", DefaultRetryAfter},
		{slack.SlackErrorResponse{Err: "ratelimited"}, RateLimit, "ratelimited", DefaultRetryAfter},
		{slack.StatusCodeError{Code: 503}, Temporary, "http_503", 0},
		{slack.StatusCodeError{Code: 500}, Temporary, "http_500", 0},
		{slack.StatusCodeError{Code: 404}, Permanent, "http_404", 0},
		{slack.SlackErrorResponse{Err: "fatal_error"}, Temporary, "fatal_error", 0},
		{slack.SlackErrorResponse{Err: "internal_error"}, Temporary, "internal_error", 0},
		{slack.SlackErrorResponse{Err: "service_unavailable"}, Temporary, "service_unavailable", 0},
		{slack.SlackErrorResponse{Err: "request_timeout"}, Temporary, "request_timeout", 0},
		{slack.SlackErrorResponse{Err: "msg_blocks_too_long"}, Permanent, "msg_blocks_too_long", 0},
		{slack.SlackErrorResponse{Err: "message_not_found"}, Permanent, "message_not_found", 0},
		{slack.SlackErrorResponse{Err: "channel_not_found"}, Permanent, "channel_not_found", 0},
		{slack.SlackErrorResponse{Err: "is_archived"}, Permanent, "is_archived", 0},
		{slack.SlackErrorResponse{Err: "cant_update_message"}, Permanent, "cant_update_message", 0},
		{slack.SlackErrorResponse{Err: "edit_window_closed"}, Permanent, "edit_window_closed", 0},
		{slack.SlackErrorResponse{Err: "token_revoked"}, Permanent, "token_revoked", 0},
		{slack.SlackErrorResponse{Err: "something_new"}, Permanent, "something_new", 0},
		{fmt.Errorf("wrapped: %w", slack.SlackErrorResponse{Err: "not_in_channel"}), Permanent, "not_in_channel", 0},
		{context.DeadlineExceeded, Temporary, "timeout", 0},
		{context.Canceled, Temporary, "canceled", 0},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, Temporary, "network", 0},
		{io.ErrUnexpectedEOF, Temporary, "network", 0},
	} {
		e := Classify(c.err)
		if e == nil || e.Class != c.class || e.Code != c.code || e.RetryAfter != c.after || !reflect.DeepEqual(e.Err, c.err) {
			t.Errorf("%#v: %+v", c.err, e)
		}
		if Classify(e) != e {
			t.Errorf("an *Error is classified again")
		}
	}
	if Classify(nil) != nil {
		t.Error("nil")
	}
	if !Classify(slack.SlackErrorResponse{Err: "msg_blocks_too_long"}).TooBig() || Classify(slack.SlackErrorResponse{Err: "is_archived"}).TooBig() {
		t.Error("TooBig")
	}
}
