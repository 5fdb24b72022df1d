// ask.go holds the messages between the hosts that share a store (Store's
// Serve, Ask, Tell and Hear): NATS core request and reply and publish,
// beside the stream, never stored.

package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/runehost/runehost/store"
)

// askSubject is the subject of the requests to name: outside the stream's
// subjects (prefix.k.>, prefix.p.>, the check subject), so never stored.
func (s *jsStore) askSubject(name string) string {
	return s.prefix + ".ask." + string(appendToken(nil, []byte(name)))
}

// tellSubject is the subject of what is told under name.
func (s *jsStore) tellSubject(name string) string {
	return s.prefix + ".tell." + string(appendToken(nil, []byte(name)))
}

// Serve answers the requests to name with fn, each in a goroutine of its
// own, until stop is called.
func (s *jsStore) Serve(name string, fn func(req []byte) []byte) (stop func(), err error) {
	sub, err := s.nc.Subscribe(s.askSubject(name), func(m *nats.Msg) {
		go func() {
			ans := fn(m.Data)
			if len(ans) > store.MaxAsk {
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

// Ask sends req to the process serving name and returns its answer.
func (s *jsStore) Ask(ctx context.Context, name string, req []byte) ([]byte, error) {
	m, err := s.nc.RequestWithContext(ctx, s.askSubject(name), req)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("store: ask %s: %w", name, store.ErrNobody)
	case err != nil:
		return nil, fmt.Errorf("store: ask %s: %w", name, err)
	}
	return m.Data, nil
}

// Tell publishes msg under name and does not wait.
func (s *jsStore) Tell(name string, msg []byte) {
	s.nc.Publish(s.tellSubject(name), msg)
}

// Hear calls fn with each message told under name until stop is called.
func (s *jsStore) Hear(name string, fn func(msg []byte)) (stop func(), err error) {
	sub, err := s.nc.Subscribe(s.tellSubject(name), func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("store: hear %s: %w", name, err)
	}
	return func() { sub.Unsubscribe() }, nil
}
