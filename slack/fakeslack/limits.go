// limits.go: Slack's rate limits on the fake's clock: calls per method in a
// rolling minute, chat.postMessage per channel, refused as HTTP 429 with
// Retry-After or as HTTP 200 rate_limited.

package fakeslack

import (
	"math"
	"net/http"
	"time"
)

// bucket is a token bucket: burst tokens, one more every period.
type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token at now, or reports how long until there is one.
func (b *bucket) take(now time.Time, burst int, period time.Duration) (time.Duration, bool) {
	if b.at.IsZero() {
		b.tokens, b.at = float64(burst), now
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(float64(burst), b.tokens+float64(d)/float64(period))
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) * float64(period)), false
}

// limit applies the limits of method (and, for a post, of its channel) at
// the fake's now: it reports true with the refusal to answer. A call that
// passes counts against the limits whatever its answer turns out to be.
func (s *Server) limit(method, channel string) (answer, bool) {
	now := s.Clock.Now()
	most := s.cfg.PerMinute[method]
	if method == "chat.update" && s.UpdatesPerMinute > 0 {
		most = s.UpdatesPerMinute
	}
	limited := most > 0 || method == "chat.postMessage" && s.cfg.PostEvery > 0
	if limited && s.cfg.RandomRateLimited > 0 && s.rng.Float64() < s.cfg.RandomRateLimited {
		return fail("rate_limited"), true
	}
	var wait time.Duration
	if most > 0 {
		kept := s.calls[method][:0]
		for _, t := range s.calls[method] {
			if now.Sub(t) < time.Minute {
				kept = append(kept, t)
			}
		}
		s.calls[method] = kept
		if len(kept) >= most {
			// Until the oldest call in the window leaves it.
			wait = kept[0].Add(time.Minute).Sub(now)
		}
	}
	if wait == 0 && method == "chat.postMessage" && s.cfg.PostEvery > 0 && channel != "" {
		b := s.posts[channel]
		if b == nil {
			b = &bucket{}
			s.posts[channel] = b
		}
		if d, ok := b.take(now, max(1, s.cfg.PostBurst), s.cfg.PostEvery); !ok {
			wait = d
		}
	}
	if wait > 0 {
		if s.cfg.RateLimitedAs200 {
			return fail("rate_limited"), true
		}
		a := fail("ratelimited")
		a.status, a.retry = http.StatusTooManyRequests, max(1, int(math.Ceil(wait.Seconds())))
		return a, true
	}
	if most > 0 {
		s.calls[method] = append(s.calls[method], now)
	}
	return answer{}, false
}
