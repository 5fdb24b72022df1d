// gc_test.go checks retention: old finished trees go with all their
// records; anything unfinished, recent, or still named stays.

package host

import (
	"context"
	"testing"

	"github.com/runehost/runehost/store"
)

func countKeys(t *testing.T, s *store.Store) map[string]int {
	n := map[string]int{}
	s.View(func(tx *store.Tx) error {
		return tx.Scan(store.Key{}, func(k store.Key, _ func(any) error) (bool, error) {
			n[k.Parts()[0]]++
			return true, nil
		})
	})
	return n
}

func TestGC(t *testing.T) {
	e, _ := boundedEngine(t)
	now := int64(1000)
	e.Clock = func() int64 { return now }
	e.invs.clock = e.Clock
	// r1: an old finished tree with a child, events and a blob.
	runTree(t, e, "r1", `if input != nil { return act "echo" {s: "big", n: 100} }
let k = act "spawn" {steps: 10000, input: 1}
emit("x", 1)
return len((await {key: k.id}).result)`, nil, 1_000_000)
	// r2: waiting, as old: kept. r3: finished recently: kept.
	e.Start(context.Background(), "r2", "q", []byte(`return await {key: "never"}`), nil, 10_000, 1)
	now = 5000
	e.Start(context.Background(), "r3", "q2", []byte(`return 3`), nil, 10_000, 1)
	before := countKeys(t, e.Store)
	rep, err := e.GC(2000, true)
	if err != nil || rep.Invocations != 2 || rep.Blobs != 1 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	if after := countKeys(t, e.Store); len(after) != len(before) || after["inv"] != 4 {
		t.Fatalf("a dry run deleted: %v", after)
	}
	if rep, err = e.GC(2000, false); err != nil || rep.Invocations != 2 || rep.Records == 0 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	after := countKeys(t, e.Store)
	for _, kind := range []string{"op", "ev", "rcv", "kid", "blob", "open", "run"} {
		if after[kind] != 0 && kind != "ev" && kind != "run" {
			t.Errorf("%d %s records left", after[kind], kind)
		}
	}
	if after["inv"] != 2 {
		t.Fatalf("invocations left: %v", after)
	}
	for _, id := range []string{"r2", "r3"} {
		if _, err := e.Inspect(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// The progs stay, with their sources.
	if p, err := e.invs.Prog("p"); err != nil || p.Revision != 1 {
		t.Fatalf("prog p: %+v %v", p, err)
	}
	if _, err := e.source(mustProgSource(t, e, "p")); err != nil {
		t.Fatal(err)
	}
}

func mustProgSource(t *testing.T, e *Engine, name string) string {
	p, err := e.invs.Prog(name)
	if err != nil {
		t.Fatal(err)
	}
	return p.Source
}
