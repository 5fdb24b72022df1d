// ask.go holds requests between the processes that share a store (on NATS:
// core request and reply, beside the stream, never stored): one process
// serves a name, another asks it and waits for the answer.

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// ErrNobody is a request no process serves: none that shares the store
// has the name, or it is gone.
var ErrNobody = errors.New("no process on the store serves it")

// MaxAsk bounds a request and an answer (NATS's default max_payload is
// 1 MiB, with room for its headers).
const MaxAsk = 1 << 19

// askSubject is the subject of the requests to name: outside the stream's
// subjects (prefix.k.>, prefix.p.>, the check subject), so never stored.
func (s *jsStore) askSubject(name string) string {
	return s.prefix + ".ask." + string(appendToken(nil, []byte(name)))
}

// Serve answers the requests to name with fn, each in a goroutine of its
// own, until stop is called. A store no other process shares (Badger)
// has nobody to ask it: Serve does nothing there.
func (s *Store) Serve(name string, fn func(req []byte) []byte) (stop func(), err error) {
	if s.js == nil {
		return func() {}, nil
	}
	sub, err := s.js.nc.Subscribe(s.js.askSubject(name), func(m *nats.Msg) {
		go func() {
			ans := fn(m.Data)
			if len(ans) > MaxAsk {
				ans = nil // the asker's decoding says so
			}
			m.Respond(ans)
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("store: serve %s: %w", name, err)
	}
	return func() { sub.Unsubscribe() }, nil
}

// Ask sends req to the process serving name and returns its answer:
// ErrNobody when no process serves it, ctx's error when it did not
// answer in time.
func (s *Store) Ask(ctx context.Context, name string, req []byte) ([]byte, error) {
	if s.js == nil {
		return nil, fmt.Errorf("store: ask %s: %w (the store is this process's alone)", name, ErrNobody)
	}
	if len(req) > MaxAsk {
		return nil, fmt.Errorf("store: ask %s: %w: %d bytes, over %d", name, ErrTooLarge, len(req), MaxAsk)
	}
	m, err := s.js.nc.RequestWithContext(ctx, s.js.askSubject(name), req)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("store: ask %s: %w", name, ErrNobody)
	case err != nil:
		return nil, fmt.Errorf("store: ask %s: %w", name, err)
	}
	return m.Data, nil
}

// tellSubject is the subject of what is told under name.
func (s *jsStore) tellSubject(name string) string {
	return s.prefix + ".tell." + string(appendToken(nil, []byte(name)))
}

// Tell publishes msg to the processes that hear name, if any, and does
// not wait: a wake-up, where a lost one costs a reader's poll. On a store
// of this process alone it does nothing.
func (s *Store) Tell(name string, msg []byte) {
	if s.js != nil {
		s.js.nc.Publish(s.js.tellSubject(name), msg)
	}
}

// Hear calls fn with each message told under name, from any process on
// the store (this one too), until stop is called.
func (s *Store) Hear(name string, fn func(msg []byte)) (stop func(), err error) {
	if s.js == nil {
		return func() {}, nil
	}
	sub, err := s.js.nc.Subscribe(s.js.tellSubject(name), func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("store: hear %s: %w", name, err)
	}
	return func() { sub.Unsubscribe() }, nil
}
