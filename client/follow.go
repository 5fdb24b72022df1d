// follow.go holds Client.Follow: an invocation's events as the server
// streams them (server-sent events), resumed across dropped connections.

package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
)

// FollowOptions say which stream to follow and from where.
type FollowOptions struct {
	Tree         bool   // the invocation and its descendants
	From         uint64 // the first seq, of a single invocation's stream (1 when 0)
	Cursor       string // where to start, as a server gave it (RunResponse.Cursor, RunState.Cursor); wins over From
	UntilSettled bool   // end at the first state message: when the tree settles
	// Busy, when set, is told each time the server refuses the stream for
	// its cap of live streams (429), before Follow waits to try again.
	Busy func(err *api.Error, wait time.Duration)
}

// Reconnection: a dropped stream is opened again at its last event this
// many times in a row, waiting longer each time, before Follow gives up.
const (
	reconnects = 8
	backoff    = 100 * time.Millisecond
)

// A stream refused for the server's cap of live streams (429) is tried
// again after the Retry-After it names (at most busyWaitMax) this many
// times before Follow gives up with the refusal.
const (
	busyTries   = 4
	busyWaitMax = 30 * time.Second
)

// errDropped is a stream that ended before the server said it was over.
var errDropped = errors.New("client: the event stream ended early")

// Follow reads inv's event stream, calling onEvent with each event in
// order, until the server ends it: with UntilSettled at the first state
// message, otherwise after a terminal state. It returns the last state the
// server sent. A connection dropped midway is opened again from the last
// event seen (Last-Event-ID), so that no event is lost or repeated. When
// ctx ends first, Follow returns nil and ctx's error.
func (c *Client) Follow(ctx context.Context, inv string, opts FollowOptions, onEvent func(events.Event)) (*api.RunState, error) {
	s := &stream{c: c, inv: inv, opts: opts, onEvent: onEvent}
	for failures, busy := 0, 0; ; {
		progressed, err := s.once(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			return s.state, nil
		}
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == api.CodeTooMany {
			if busy++; busy > busyTries {
				return nil, &api.Error{Code: ae.Code, RetryAfter: ae.RetryAfter,
					Message: fmt.Sprintf("following %s: the server refused the event stream %d times (429 Too Many Requests): %s", inv, busyTries+1, ae.Message)}
			}
			wait := min(time.Duration(ae.RetryAfter)*time.Second, busyWaitMax)
			if wait <= 0 {
				wait = backoff
			}
			if s.opts.Busy != nil {
				s.opts.Busy(ae, wait)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			continue
		}
		if errors.As(err, &ae) {
			return nil, err
		}
		if progressed {
			failures = 0
		}
		if failures++; failures > reconnects {
			return nil, fmt.Errorf("client: following %s: %w", inv, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff * time.Duration(failures)):
		}
	}
}

// stream is a Follow in progress: where it is, across connections.
type stream struct {
	c       *Client
	inv     string
	opts    FollowOptions
	onEvent func(events.Event)
	last    string        // the id of the last event handed on
	state   *api.RunState // the last state message
}

// query is the stream's query string.
func (s *stream) query() string {
	q := url.Values{}
	if s.opts.Tree {
		q.Set("tree", "1")
	}
	if s.opts.Cursor != "" {
		q.Set("cursor", s.opts.Cursor)
	} else if s.opts.From > 0 {
		q.Set("from", strconv.FormatUint(s.opts.From, 10))
	}
	if s.opts.UntilSettled {
		q.Set("until", "settled")
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// once reads one connection of the stream. It returns nil when the server
// ended the stream, and whether any message came.
func (s *stream) once(ctx context.Context) (progressed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.base+invPath(s.inv, "/events")+s.query(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.last != "" {
		req.Header.Set("Last-Event-ID", s.last)
	}
	if s.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.token)
	}
	resp, err := s.c.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if err := answerError(resp); err != nil {
		return false, err
	}
	r := bufio.NewReader(resp.Body)
	var id, kind string
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && s.state != nil && (api.Terminal(s.state.Status) || s.opts.UntilSettled) {
				return progressed, nil // the server closed it after the end
			}
			if errors.Is(err, io.EOF) {
				err = errDropped
			}
			return progressed, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line != "" {
			if strings.HasPrefix(line, ":") {
				continue // a keep-alive
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "event":
				kind = value
			case "data":
				data = append(data, value)
			}
			continue
		}
		if len(data) == 0 && kind == "" {
			id = ""
			continue
		}
		progressed = true
		done, err := s.message(id, kind, strings.Join(data, "\n"))
		if err != nil || done {
			return progressed, err
		}
		id, kind, data = "", "", nil
	}
}

// message handles one message; done says the stream is over.
func (s *stream) message(id, kind, data string) (done bool, err error) {
	switch kind {
	case "state":
		var st api.RunState
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			return false, &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("client: a state message: %v", err)}
		}
		s.state = &st
		return s.opts.UntilSettled, nil
	case "", "message":
		var ev events.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return false, &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("client: an event message: %v", err)}
		}
		if s.onEvent != nil {
			s.onEvent(ev)
		}
		if id != "" {
			s.last = id
		}
	}
	return false, nil
}
