// stream.go holds what an adapter shows while its act runs: a model's reply
// text as it is generated, coalesced into assistant events. They are the
// run's view only: the act's reply is what Do returns, recorded once, and
// an act answered from its record shows nothing.

package host

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/runehost/runehost/events"
)

// StreamEvery is how often streamed text becomes an event: a few a second,
// whatever the rate of the chunks.
const StreamEvery = 250 * time.Millisecond

type streamKey struct{}

// Stream returns how an adapter shows text as its act produces it: each call
// adds text, the host coalesces it into assistant events. It is never nil:
// outside an act run by an engine it does nothing.
func Stream(ctx context.Context) func(text string) {
	if s, ok := ctx.Value(streamKey{}).(*streamer); ok {
		return s.add
	}
	return func(string) {}
}

// WithStream is ctx with a Stream that calls show with coalesced text, for
// adapters run outside an engine (a test, or a tool that prints).
func WithStream(ctx context.Context, show func(text string)) context.Context {
	return context.WithValue(ctx, streamKey{}, &streamer{show: show, every: StreamEvery})
}

// streamer coalesces text: it shows what came at most every StreamEvery,
// and the rest when the act ends. A piece shown ends at a space or a line
// break, so that a secret (one word, or one PEM block) is never cut in two
// pieces that redaction would each let through.
type streamer struct {
	show  func(text string)
	every time.Duration

	mu      sync.Mutex
	pending strings.Builder
	last    time.Time
	timer   *time.Timer
	done    bool
}

// streamHold is how much text without a break is kept back before it is
// shown anyway.
const streamHold = 4 << 10

func (s *streamer) add(text string) {
	if text == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.pending.WriteString(text)
	if wait := s.every - time.Since(s.last); wait > 0 {
		if s.timer == nil {
			s.timer = time.AfterFunc(wait, s.tick)
		}
		return
	}
	s.flush(false)
}

func (s *streamer) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if !s.done {
		s.flush(false)
	}
}

// end shows what is left; nothing is shown after it.
func (s *streamer) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !s.done {
		s.flush(true)
		s.done = true
	}
}

// flush shows pending text up to its last break (all of it when final),
// keeping an open PEM block back until it closes.
func (s *streamer) flush(final bool) {
	p := s.pending.String()
	cut := len(p)
	if !final {
		cut = strings.LastIndexAny(p, " \t\n") + 1
		if i := strings.LastIndex(p, "-----BEGIN"); i >= 0 && !pemClosed(p[i:]) && len(p)-i < streamHold*4 {
			cut = min(cut, i)
		}
		if cut == 0 && len(p) >= streamHold {
			cut = len(p)
		}
	}
	if cut == 0 {
		return
	}
	s.pending.Reset()
	s.pending.WriteString(p[cut:])
	s.last = time.Now()
	s.show(p[:cut])
}

// pemClosed reports whether a PEM block's END line has come, to its dashes.
func pemClosed(block string) bool {
	_, after, ok := strings.Cut(block, "-----END")
	return ok && strings.Contains(after, "-----")
}

// streamFor is the streamer of an act run by the engine: its text becomes
// assistant events in the run's log.
func (e *Engine) streamFor(ctx context.Context, op *Operation) (context.Context, *streamer) {
	id := events.CallID(op.Invocation, op.Ordinal)
	s := &streamer{every: StreamEvery}
	s.show = func(text string) {
		e.log(op.Invocation, events.Event{At: e.Clock(), Kind: events.KindAssistant,
			Assistant: &events.Assistant{CallID: id, Text: e.clean(text, events.AssistantCap)}})
	}
	return context.WithValue(ctx, streamKey{}, s), s
}
