// badinput_test.go feeds the engine bad records: a corrupt or truncated
// record, a checkpoint of another semantics version, an event for an unknown
// invocation, a duplicate or conflicting outcome. Each gets a clear error and
// loses nothing.

package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

const waitProg = `let a = act "calc" {n: 1}
let v = await {key: "go"}
return a + v`

// parked admits waitProg and leaves it waiting for "go".
func parked(t *testing.T) (*Engine, []byte) {
	t.Helper()
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	out, err := e.Start(context.Background(), "r1", "p", []byte(waitProg), nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("got %+v %v", out, err)
	}
	return e, mustCP(t, e, "r1")
}

func putRaw(t *testing.T, e *Engine, k store.Key, b []byte) {
	t.Helper()
	if err := e.Store.Update(store.Synced, func(tx *store.Tx) error { return tx.PutRaw(k, b) }); err != nil {
		t.Fatal(err)
	}
}

// A corrupt checkpoint: a clear error naming the invocation, the invocation
// paused (not retried in a loop), its ledger and allowance intact; putting
// the good checkpoint back lets it finish.
func TestBadCheckpointPauses(t *testing.T) {
	for name, mangle := range map[string]func([]byte) []byte{
		"garbage":   func([]byte) []byte { return []byte("not a checkpoint") },
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"flipped":   func(b []byte) []byte { c := append([]byte(nil), b...); c[len(c)-3] ^= 0xff; return c },
	} {
		t.Run(name, func(t *testing.T) {
			e, good := parked(t)
			putRaw(t, e, cpKey("r1"), mangle(good))
			e.boxes.Deliver("r1", "go", data(t, int64(5)))
			_, err := e.RunTree(context.Background(), "r1")
			if err == nil || !strings.Contains(err.Error(), "r1") {
				t.Fatalf("got %v", err)
			}
			i, _ := e.invs.get("r1")
			if i.Paused == "" || i.Status != Running {
				t.Fatalf("not paused: %+v", i)
			}
			if op, err := e.ledger.Get(OpID{"r1", 1}); err != nil || op.Phase != Consumed {
				t.Fatalf("ledger: %+v %v", op, err)
			}
			if _, err := e.Migrate("r1", good, nil, false); err != nil {
				t.Fatal(err)
			}
			out, err := e.RunTree(context.Background(), "r1")
			if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "15" {
				t.Fatalf("after repair: %+v %v", out, err)
			}
		})
	}
}

// A record that does not decode is ErrCorrupt naming its key; nothing is
// overwritten.
func TestCorruptRecord(t *testing.T) {
	e, _ := parked(t)
	putRaw(t, e, invKey("r1"), []byte{0xa2, 0x01}) // a truncated map
	_, err := e.Resume(context.Background(), "r1")
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "inv/r1") {
		t.Fatalf("got %v", err)
	}
	if in, err := e.Inspect("r1"); err != nil || len(in.Damage) == 0 || !strings.Contains(in.Damage[0], "inv/r1") {
		t.Fatalf("inspect: %+v %v", in, err)
	}
	var raw []byte
	e.Store.View(func(tx *store.Tx) error { raw, _, _ = tx.GetRaw(invKey("r1")); return nil })
	if len(raw) != 2 {
		t.Fatalf("the corrupt record was overwritten: %x", raw)
	}
	putRaw(t, e, OpID{"r1", 1}.key(), []byte{0xff})
	if _, err := e.ledger.Get(OpID{"r1", 1}); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "op/r1/") {
		t.Fatalf("op: %v", err)
	}
}

// A checkpoint of another semantics version stays inspectable and paused;
// migrate refuses a bad replacement and accepts a valid one.
func TestOtherSemantics(t *testing.T) {
	e, good := parked(t)
	c, err := checkpoint.Decode(good, checkpoint.Expect{Semantics: semantics})
	if err != nil {
		t.Fatal(err)
	}
	c.Header.Semantics = semantics + 1
	other, err := checkpoint.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, e, cpKey("r1"), other)
	e.boxes.Deliver("r1", "go", data(t, int64(5)))
	if _, err := e.RunTree(context.Background(), "r1"); !errors.Is(err, checkpoint.ErrSemantics) {
		t.Fatalf("got %v", err)
	}
	in, err := e.Inspect("r1")
	if err != nil || in.Header.Semantics != semantics+1 || in.Invocation.Paused == "" {
		t.Fatalf("inspect: %+v %v", in, err)
	}
	if n, _ := (&Scheduler{E: e}).Next(); n != "" {
		t.Fatalf("a paused invocation is runnable: %s", n)
	}
	c.Header.Semantics = semantics
	c.Header.Invocation = "r2"
	wrongInv, _ := checkpoint.Encode(c)
	for name, bad := range map[string][]byte{"same old": other, "another invocation": wrongInv, "garbage": {0x80}} {
		if _, err := e.Migrate("r1", bad, nil, false); !errors.Is(err, ErrBadReplacement) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := e.Migrate("r1", good, []byte("return 1"), false); !errors.Is(err, ErrBadReplacement) {
		t.Fatalf("wrong source: %v", err)
	}
	if _, err := e.Migrate("r1", good, nil, true); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if i, _ := e.invs.get("r1"); i.Paused == "" {
		t.Fatal("a dry run changed the invocation")
	}
	if _, err := e.Migrate("r1", good, nil, false); err != nil {
		t.Fatal(err)
	}
	out, err := e.RunTree(context.Background(), "r1")
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "15" {
		t.Fatalf("after migrate: %+v %v", out, err)
	}
}

func TestEventForUnknownInvocation(t *testing.T) {
	e, _ := parked(t)
	if _, err := e.Send(context.Background(), "r9", "go", nil); !errors.Is(err, ErrNoSuchInvocation) {
		t.Fatalf("got %v", err)
	}
	if _, err := e.Send(context.Background(), "r1", "go", []byte{0xff}); err == nil || !strings.Contains(err.Error(), "not data") {
		t.Fatalf("bad payload: %v", err)
	}
	out, err := e.Send(context.Background(), "r1", "go", data(t, int64(1)))
	if err != nil || out.Status != Completed {
		t.Fatalf("the good event after the bad: %+v %v", out, err)
	}
}

// An operator's outcome for an act that already has one: refused, and the
// recorded one stays.
func TestDuplicateAndConflictingOutcome(t *testing.T) {
	e, _ := parked(t)
	op, _ := e.ledger.Get(OpID{"r1", 1})
	if _, err := e.Resolve(context.Background(), OpID{"r1", 1}, reply(t, int64(99))); err == nil || !strings.Contains(err.Error(), "only an act of unknown outcome") {
		t.Fatalf("got %v", err)
	}
	if _, err := e.ledger.Record(OpID{"r1", 1}, Outcome{Reply: reply(t, int64(99))}); !errors.Is(err, ErrConflictingOutcome) {
		t.Fatalf("conflicting: %v", err)
	}
	dup, err := e.ledger.Record(OpID{"r1", 1}, *op.Outcome)
	if err != nil || dup.Phase != Consumed {
		t.Fatalf("duplicate: %+v %v", dup, err)
	}
	after, _ := e.ledger.Get(OpID{"r1", 1})
	if string(after.Outcome.Reply) != string(op.Outcome.Reply) {
		t.Fatal("the recorded outcome changed")
	}
}

// An index entry for an invocation whose record is unreadable does not make
// the scheduler spin.
func TestSchedulerSkipsUnreadable(t *testing.T) {
	e, _ := parked(t)
	putRaw(t, e, invKey("r1"), []byte{0xa2, 0x01})
	e.Store.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(runKey("r1"), true) })
	turns := 0
	err := (&Scheduler{E: e}).Run(context.Background(), func(tu Turn) bool {
		turns++
		return turns < 10
	})
	if err != nil || turns != 1 {
		t.Fatalf("%d turns, %v", turns, err)
	}
}
