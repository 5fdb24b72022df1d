// do.go sends a chat completion and reads its reply, whole or streamed;
// retries a 429 or 503 as the server asks; and meters the act's tokens.

package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/host"
)

// Retry policy for a 429 or 503: the server did not process the request, so
// asking again is safe; at most RateAttempts attempts, each wait as the
// server asks (RetryWait when it does not say), and only while the wait
// fits the act's remaining time.
const (
	RateAttempts = 3
	RetryWait    = time.Second
	MaxRetryWait = time.Minute // a longer wait is not waited for
)

// prepared is an act ready to send: its endpoint, the request as sent, and
// what assembly admitted.
type prepared struct {
	*chat
	ep                Endpoint
	admitted, dropped []any
	prompt            int64 // estimated prompt tokens
}

// prepare reads op's arguments and fits them to its endpoint (one not
// configured counts as one with the defaults: Authorize denies it).
func (a *Adapter) prepare(op *host.Operation) (*prepared, error) {
	c, err := parse(op.Args)
	if err != nil {
		return nil, err
	}
	ep := a.Endpoints[c.endpoint]
	p := &prepared{chat: c, ep: ep}
	p.req.Model = ep.Model
	p.req.Messages, p.admitted, p.dropped, p.prompt = assemble(&p.req, ep.ContextTokens)
	p.req.MaxTokens = c.maxTokens
	if p.req.MaxTokens == 0 {
		p.req.MaxTokens = ep.MaxTokens
	}
	if p.req.MaxTokens <= 0 {
		p.req.MaxTokens = DefaultMaxTokens
	}
	if p.req.Stream {
		p.req.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	return p, nil
}

// Reserve is the most the act can spend: its prompt as estimated after
// assembly, and the max_tokens it sends.
func (a *Adapter) Reserve(op *host.Operation) (uint64, error) {
	p, err := a.prepare(op)
	if err != nil {
		return 0, err
	}
	return uint64(p.prompt + p.req.MaxTokens), nil
}

// Spent is what a reply says the act spent: usage.total_tokens, or (from a
// server that sent no usage) the admitted prompt's estimate and the reply's.
func (a *Adapter) Spent(reply any) uint64 {
	m, ok := reply.(*checkpoint.Map)
	if !ok {
		return 0
	}
	u, _ := get(m, "usage").(*checkpoint.Map)
	total, _ := get(u, "total_tokens").(int64)
	if total <= 0 {
		p, _ := get(u, "prompt_tokens").(int64)
		c, _ := get(u, "completion_tokens").(int64)
		total = p + c
	}
	if total > 0 {
		return uint64(total)
	}
	ctx, _ := get(m, "context").(*checkpoint.Map)
	admitted, _ := get(ctx, "admitted").([]any)
	for _, b := range admitted {
		bm, _ := b.(*checkpoint.Map) // a record read back: any shape
		n, _ := get(bm, "tokens").(int64)
		total += n
	}
	s, _ := get(m, "content").(string)
	n := len(s)
	calls, _ := get(m, "tool_calls").([]any)
	for _, c := range calls {
		b, _ := checkpoint.DataToJSON(c)
		n += len(b)
	}
	return uint64(total + estimate(n))
}

// Lookup finds nothing: a model call has no effect in the world, so an
// attempt a crash cut short (its reply never recorded, never seen by the
// prog) is asked again, which is safe. It costs the tokens of the lost
// attempt a second time, and the new reply may differ from the lost one.
func (a *Adapter) Lookup(context.Context, *host.Operation) (any, bool, error) {
	return nil, false, nil
}

// Do asks the endpoint for one completion.
func (a *Adapter) Do(ctx context.Context, op *host.Operation) (any, error) {
	p, err := a.prepare(op)
	if err != nil {
		return nil, err
	}
	name, ep := p.endpoint, p.ep
	if _, ok := a.Endpoints[name]; !ok {
		return nil, fmt.Errorf("model.chat: no endpoint %q is configured", name)
	}
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := json.Marshal(&p.req)
	if err != nil {
		return nil, a.failed(ep, "failed", "model.chat %s: %v", name, err)
	}
	resp, err := a.post(ctx, ep, name, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var (
		msg           wireMessage
		finish, model string
		usage         *wireUsage
	)
	if p.req.Stream && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		acc := &accumulator{}
		if err := readStream(resp.Body, acc, host.Stream(ctx)); err != nil {
			if ctx.Err() == context.Canceled {
				return nil, ctx.Err() // the host is stopping: the attempt stays open
			}
			var se *streamError
			errors.As(err, &se)
			return nil, p.spentOn(a.failed(ep, se.kind, "model.chat %s: %s", name, se.msg), acc.usage, acc.content.Len())
		}
		msg, finish, model, usage = acc.message(), acc.finish, acc.model, acc.usage
	} else {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
		if err != nil {
			if ctx.Err() == context.Canceled {
				return nil, ctx.Err()
			}
			return nil, p.spentOn(a.failed(ep, "failed", "model.chat %s: reading the reply: %v", name, err), nil, len(b))
		}
		if len(b) > 1<<20 {
			return nil, p.spentOn(a.failed(ep, "failed", "model.chat %s: the reply is over 1 MiB", name), nil, len(b))
		}
		var r wireResponse
		if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) == 0 {
			return nil, p.spentOn(a.failed(ep, "model", "model.chat %s: not a chat completion: %s", name, b), r.Usage, len(b))
		}
		ch := r.Choices[0]
		msg, model, usage = ch.Message, r.Model, r.Usage
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
		if p.req.Stream && msg.Content != nil {
			host.Stream(ctx)(*msg.Content) // a server that would not stream
		}
	}
	out, err := p.replyOf(msg, finish, model, usage, p.admitted, p.dropped)
	if err != nil {
		var se *streamError
		errors.As(err, &se)
		n := 0
		if msg.Content != nil {
			n = len(*msg.Content)
		}
		return nil, p.spentOn(a.failed(ep, se.kind, "model.chat %s: %s", name, se.msg), usage, n)
	}
	return out, nil
}

// spentOn gives an error that came once the server had begun to answer
// the tokens that answer spent, as its data {spent_tokens}: the usage, when
// the server sent it, else the prompt's estimate and that of the n bytes
// that came. The engine charges them (host.Metered); an error before the
// server answered (refused, rate-limited, unreachable) spent none.
func (p *prepared) spentOn(err error, usage *wireUsage, n int) error {
	ce, ok := err.(*checkpoint.Error)
	if !ok {
		return err
	}
	spent := p.prompt + estimate(n)
	if usage != nil && usage.TotalTokens > 0 {
		spent = usage.TotalTokens
	}
	m := &checkpoint.Map{}
	m.Set("spent_tokens", spent)
	ce.Data, _ = checkpoint.EncodeData(m)
	return ce
}

// post sends the request: a 3xx is an error (no redirect is followed, so
// the key goes nowhere else), and a 429 or 503 is retried as the server
// asks (Retry-After-Ms, or Retry-After in seconds or as a date), within
// RateAttempts and the act's time; then it is an error of kind "rate".
func (a *Adapter) post(ctx context.Context, ep Endpoint, name string, body []byte) (*http.Response, error) {
	c := a.Client
	if c == nil {
		c = defaultClient
	}
	for attempt := 1; ; attempt++ {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return nil, a.failed(ep, "failed", "model.chat %s: %v", name, err)
		}
		hr.Header.Set("Content-Type", "application/json")
		if ep.Key != "" {
			hr.Header.Set("Authorization", "Bearer "+ep.Key)
		}
		resp, err := c.Do(hr)
		if err != nil {
			if ctx.Err() == context.Canceled {
				return nil, ctx.Err() // the host is stopping: the attempt stays open
			}
			return nil, a.failed(ep, "failed", "model.chat %s: %v", name, err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return nil, a.failed(ep, "failed", "model.chat %s: HTTP %d: %s", name, resp.StatusCode, b)
		}
		wait, said := retryAfter(resp.Header, time.Now())
		if !said {
			wait = RetryWait << (attempt - 1)
		}
		if attempt >= RateAttempts || wait > MaxRetryWait || !fits(ctx, wait) {
			asked := "did not say how long to wait"
			if said {
				asked = "asked to wait " + wait.String()
			}
			err := a.failed(ep, "rate", "model.chat %s: HTTP %d after %s: the server %s: %s", name, resp.StatusCode, attempts(attempt), asked, b)
			if said {
				err.(*checkpoint.Error).Data = retryData(wait) // for the prog's own retry (std/retry.rune)
			}
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if ctx.Err() == context.Canceled {
				return nil, ctx.Err() // the host is stopping: the attempt stays open
			}
			return nil, a.failed(ep, "rate", "model.chat %s: HTTP %d: the act's time ran out waiting %s to ask again", name, resp.StatusCode, wait)
		}
	}
}

// retryData is a rate error's data: the wait the server asked for.
func retryData(wait time.Duration) checkpoint.RawData {
	m := &checkpoint.Map{}
	m.Set("retry_after_ms", wait.Milliseconds())
	b, _ := checkpoint.EncodeData(m)
	return b
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// retryAfter is the wait a response asks for, and whether it asked.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	// A day at most, so that no number overflows a Duration.
	const day = float64(24 * time.Hour)
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms >= 0 {
		return time.Duration(min(ms*float64(time.Millisecond), day)), true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(min(s*float64(time.Second), day)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// fits says whether waiting d leaves the act time for another attempt.
func fits(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > d+time.Second
}

// failed is an error the prog sees, of kind, with the endpoint's key taken
// out whatever the server echoed, raw or encoded.
func (a *Adapter) failed(ep Endpoint, kind, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if ep.Key != "" {
		msg = redact.New(ep.Key).Known(msg) // before the cut, so no part of it is left
	}
	if r := []rune(msg); len(r) > 400 {
		msg = string(r[:400]) + "…"
	}
	return &checkpoint.Error{Kind: kind, Msg: msg}
}

var (
	_ host.Metered    = (*Adapter)(nil)
	_ host.Reconciler = (*Adapter)(nil)
)
