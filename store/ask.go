// ask.go holds requests between the processes that share a store (on NATS:
// core request and reply, beside the stream, never stored): one process
// serves a name, another asks it and waits for the answer.

package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNobody is a request no process serves: none that shares the store
// has the name, or it is gone.
var ErrNobody = errors.New("no process on the store serves it")

// MaxAsk bounds a request and an answer (NATS's default max_payload is
// 1 MiB, with room for its headers).
const MaxAsk = 1 << 19

// messenger is a Backend that carries messages between the processes that
// share it. Store checks MaxAsk before it asks.
type messenger interface {
	Serve(name string, fn func(req []byte) []byte) (stop func(), err error)
	Ask(ctx context.Context, name string, req []byte) ([]byte, error)
	Tell(name string, msg []byte)
	Hear(name string, fn func(msg []byte)) (stop func(), err error)
}

// Serve answers the requests to name with fn, each in a goroutine of its
// own, until stop is called. A store no other process shares (Badger)
// has nobody to ask it: Serve does nothing there.
func (s *Store) Serve(name string, fn func(req []byte) []byte) (stop func(), err error) {
	m, ok := s.be.(messenger)
	if !ok {
		return func() {}, nil
	}
	return m.Serve(name, fn)
}

// Ask sends req to the process serving name and returns its answer:
// ErrNobody when no process serves it, ctx's error when it did not
// answer in time.
func (s *Store) Ask(ctx context.Context, name string, req []byte) ([]byte, error) {
	m, ok := s.be.(messenger)
	if !ok {
		return nil, fmt.Errorf("store: ask %s: %w (the store is this process's alone)", name, ErrNobody)
	}
	if len(req) > MaxAsk {
		return nil, fmt.Errorf("store: ask %s: %w: %d bytes, over %d", name, ErrTooLarge, len(req), MaxAsk)
	}
	return m.Ask(ctx, name, req)
}

// Tell publishes msg to the processes that hear name, if any, and does
// not wait: a wake-up, where a lost one costs a reader's poll. On a store
// of this process alone it does nothing.
func (s *Store) Tell(name string, msg []byte) {
	if m, ok := s.be.(messenger); ok {
		m.Tell(name, msg)
	}
}

// Hear calls fn with each message told under name, from any process on
// the store (this one too), until stop is called.
func (s *Store) Hear(name string, fn func(msg []byte)) (stop func(), err error) {
	m, ok := s.be.(messenger)
	if !ok {
		return func() {}, nil
	}
	return m.Hear(name, fn)
}
