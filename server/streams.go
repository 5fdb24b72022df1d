// streams.go caps the live event streams a server holds at once: per key
// (a run page's capability link; a run, for the API's streams) and
// overall. Past a cap a stream is refused before it starts, 429 with
// Retry-After; its slot is given back when the stream ends, however it
// ends (the client gone, the run over, the server stopping).

package server

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/runehost/runehost/api"
)

// Stream caps' defaults: a link shared in a channel, opened by a room of
// people, stays under the first; the second bounds what a server's live
// streams hold (a goroutine and a connection each, and a store read per
// run they follow at each change).
const (
	DefaultMaxStreams        = 4096
	DefaultMaxStreamsPerLink = 64
)

// StreamRetryAfter is the seconds a refused stream is told to wait.
const StreamRetryAfter = 5

// slots counts the live streams, overall and per key.
type slots struct {
	max, perMax int // 0: the defaults

	mu    sync.Mutex
	total int
	per   map[string]int
}

// take takes a slot for a stream of key (whom names the key in a refusal:
// "run r1", "this link"), or returns the refusal. release gives it back;
// calling it more than once gives it back once.
func (s *slots) take(key, whom string) (release func(), err *api.Error) {
	max, perMax := s.max, s.perMax
	if max <= 0 {
		max = DefaultMaxStreams
	}
	if perMax <= 0 {
		perMax = DefaultMaxStreamsPerLink
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.per[key] >= perMax:
		err = api.Errorf(api.CodeTooMany, "%s has %d live event streams, the most one run or link may have (serve --max-streams-per-link); close one, or try again in %d s", whom, s.per[key], StreamRetryAfter)
	case s.total >= max:
		err = api.Errorf(api.CodeTooMany, "the server has %d live event streams, the most it holds (serve --max-streams); try again in %d s", s.total, StreamRetryAfter)
	}
	if err != nil {
		err.RetryAfter = StreamRetryAfter
		return nil, err
	}
	if s.per == nil {
		s.per = map[string]int{}
	}
	s.total++
	s.per[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.per[key]--; s.per[key] <= 0 {
				delete(s.per, key)
			}
		})
	}, nil
}

// live is the streams held now, overall and of key.
func (s *slots) live(key string) (total, ofKey int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, s.per[key]
}

// refuse answers a stream refused by a cap: 429, Retry-After, and the
// error's body.
func refuse(w http.ResponseWriter, err *api.Error) {
	w.Header().Set("Retry-After", strconv.Itoa(err.RetryAfter))
	writeError(w, err)
}
