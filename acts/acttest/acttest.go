// Package acttest runs progs through an engine with real adapters, for the
// act families' tests.
package acttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/guest/port/porttest"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

// Engine returns an engine on a fresh store with the given adapters.
func Engine(t testing.TB, adapters map[string]host.Adapter) *host.Engine {
	t.Helper()
	s, err := store.Open(store.Options{Dir: t.TempDir()}) // on disk: large replies, as in use
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := host.NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	for tag, a := range adapters {
		e.Adapters[tag] = a
	}
	return e
}

// Grant grants statements to every prog, failing the test on an error.
func Grant(t testing.TB, e *host.Engine, statements ...string) {
	t.Helper()
	for _, st := range statements {
		if _, err := e.Grant(host.AnyProg, st); err != nil {
			t.Fatal(err)
		}
	}
}

var n int

// Last is the invocation of the last Run.
func Last() string { return fmt.Sprintf("t%d", n) }

// Run runs src to its end (or suspension) as a new invocation and returns
// its result as JSON, or "error KIND: MSG" when it failed.
func Run(t testing.TB, e *host.Engine, src string, input any) (string, *host.RunState) {
	t.Helper()
	var in []byte
	if input != nil {
		var err error
		if in, err = checkpoint.EncodeData(input); err != nil {
			t.Fatal(err)
		}
	}
	n++
	inv := fmt.Sprintf("t%d", n)
	out, err := e.Start(context.Background(), inv, "p", []byte(src), in, 10_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Err != nil {
		return "error " + out.Err.Kind + ": " + out.Err.Msg, out
	}
	if out.Result == nil {
		return out.Status.String(), out
	}
	return JSON(t, out.Result), out
}

// JSON renders a data value.
func JSON(t testing.TB, b []byte) string { t.Helper(); return porttest.JSONOf(t, b) }

// Catch wraps an expression so that the prog returns its value, or
// [kind, msg] of the error it raised.
func Catch(expr string) string {
	return `try { return ` + expr + ` } catch err { return [err.kind, err.msg] }`
}

// Data encodes a JSON text as a data value.
func Data(t testing.TB, jsonText string) []byte { t.Helper(); return porttest.EncodeJSON(t, jsonText) }

// Open opens the store in dir and an engine on it as a host process does
// when it starts (host.Open: the next generation, its recovery run), for
// tests that crash a host and start another on the same store; done closes
// the store.
func Open(t testing.TB, dir string) (e *host.Engine, done func()) {
	t.Helper()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e, _, err = host.Open(s, port.NewNative(), func() int64 { return 1 })
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	return e, func() { s.Close() }
}
