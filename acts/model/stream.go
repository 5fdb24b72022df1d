// stream.go reads a streamed reply (text/event-stream): each data event is
// a chunk, content and tool calls are put together as they come, content
// is shown as it comes (host.Stream), and the whole message is the reply.

package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// StreamCap is the most a streamed reply may send in all, its events' JSON
// and framing included; the reply itself is capped at 1 MiB as a whole one.
const StreamCap = 8 << 20

// errTruncated is a stream that ended before its finish.
var errTruncated = errors.New("the stream ended before the reply was complete")

// streamError is what a stream's reading stopped on: kind as the prog sees
// it, and the message (not yet redacted).
type streamError struct {
	kind, msg string
}

func (e *streamError) Error() string { return e.msg }

// accumulator puts a streamed reply together.
type accumulator struct {
	model   string
	content bytes.Buffer
	calls   []wireToolCall
	at      map[int]int // a delta's tool call index -> its call in calls
	finish  string
	usage   *wireUsage
}

// add takes one chunk, and returns its content delta.
func (a *accumulator) add(ch *wireResponse) string {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.Usage != nil {
		a.usage = ch.Usage // on the finish chunk (llama.cpp) or one of its own
	}
	var delta string
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue // one choice is asked for
		}
		if c.Delta.Content != nil {
			delta = *c.Delta.Content
			a.content.WriteString(delta)
		}
		for _, tc := range c.Delta.ToolCalls {
			a.call(tc)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finish = *c.FinishReason
		}
	}
	return delta
}

// call adds a tool call fragment: by its index, except that a new id at an
// index already taken opens a new call (ollama sends each call whole, all
// at index 0). A name the same as the call's so far is a repeat, not a
// piece of it.
func (a *accumulator) call(tc wireToolCall) {
	idx := 0
	if tc.Index != nil {
		idx = *tc.Index
	}
	if a.at == nil {
		a.at = map[int]int{}
	}
	pos, ok := a.at[idx]
	if !ok || (tc.ID != "" && a.calls[pos].ID != "" && tc.ID != a.calls[pos].ID) {
		pos = len(a.calls)
		a.at[idx] = pos
		a.calls = append(a.calls, wireToolCall{Type: "function"})
	}
	c := &a.calls[pos]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Function.Name != c.Function.Name { // some servers repeat the name in every fragment
		c.Function.Name += tc.Function.Name
	}
	c.Function.Arguments += tc.Function.Arguments
}

// message is the reply put together.
func (a *accumulator) message() wireMessage {
	s := a.content.String()
	return wireMessage{Role: "assistant", Content: &s, ToolCalls: a.calls}
}

// capped reads at most n bytes from r, then fails.
type capped struct {
	r io.Reader
	n int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, &streamError{kind: "failed", msg: "the stream sent more than its cap"}
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// readStream reads events from body into a, calling show with each content
// delta, until [DONE] or the end of the body. It fails with a streamError
// on an error event, a malformed chunk, an oversized stream, or an end
// before the finish.
func readStream(body io.Reader, a *accumulator, show func(string)) error {
	sc := bufio.NewScanner(&capped{r: body, n: StreamCap})
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var data bytes.Buffer
	event := ""
	dispatch := func() (done bool, err error) {
		defer func() { data.Reset(); event = "" }()
		d := bytes.TrimSpace(data.Bytes())
		if len(d) == 0 {
			return false, nil
		}
		if string(d) == "[DONE]" {
			return true, nil
		}
		if len(a.calls) > 1<<12 || a.content.Len() > 1<<20 {
			return false, &streamError{kind: "failed", msg: "the streamed reply is over 1 MiB"}
		}
		var ch wireResponse
		if err := json.Unmarshal(d, &ch); err != nil {
			return false, &streamError{kind: "model", msg: "a malformed stream chunk: " + err.Error() + ": " + string(d)}
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return false, &streamError{kind: "failed", msg: "the server sent an error mid-stream: " + errorMessage(ch.Error)}
		}
		if event == "error" {
			return false, &streamError{kind: "failed", msg: "the server sent an error mid-stream: " + string(d)}
		}
		if delta := a.add(&ch); delta != "" {
			show(delta)
		}
		return false, nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if done, err := dispatch(); err != nil || done {
				return finished(a, err)
			}
		case line[0] == ':': // a comment, or a keep-alive
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(value)
			case "event":
				event = string(value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		var se *streamError
		if errors.As(err, &se) {
			return se
		}
		return &streamError{kind: "failed", msg: "reading the stream: " + err.Error()}
	}
	// The body ended. An event not closed by a blank line is taken when it
	// is whole (some servers end so); a cut one means the stream was cut.
	if data.Len() > 0 {
		done, err := dispatch()
		var se *streamError
		if errors.As(err, &se) && se.kind == "model" {
			return &streamError{kind: "model", msg: errTruncated.Error()}
		}
		if done {
			err = nil
		}
		return finished(a, err)
	}
	return finished(a, nil)
}

// finished is the stream's end: complete only once a finish_reason came.
func finished(a *accumulator, err error) error {
	if err != nil {
		return err
	}
	if a.finish == "" {
		return &streamError{kind: "model", msg: errTruncated.Error()}
	}
	return nil
}
