// ledger_test.go tables every phase transition of the act ledger.

package host

import (
	"errors"
	"fmt"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

func memStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func reply(t testing.TB, v any) []byte {
	b, err := checkpoint.EncodeReply(checkpoint.Reply{Value: v})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reach drives a fresh operation to a phase through the ledger's own calls.
func reach(t *testing.T, l *Ledger, id OpID, phase Phase) {
	t.Helper()
	op := Operation{Invocation: id.Invocation, Ordinal: id.Ordinal, Tag: "fs.read", Args: []byte{0xa0}}
	steps := map[Phase]func() error{
		Proposed: func() error { _, err := l.Propose(op); return err },
		Attempted: func() error {
			_, err := l.Attempt(id, Attempt{Grant: "fs.read ./", Executor: "fs", Generation: 1})
			return err
		},
		Unresolved: func() error {
			_, err := l.Recover(2)
			return err
		},
		Recorded: func() error { _, err := l.Record(id, Outcome{Reply: reply(t, "text"), Source: "adapter"}); return err },
		Consumed: func() error { _, err := l.Consume(id); return err },
	}
	path := map[Phase][]Phase{
		Proposed:   {Proposed},
		Attempted:  {Proposed, Attempted},
		Unresolved: {Proposed, Attempted, Unresolved},
		Recorded:   {Proposed, Attempted, Recorded},
		Consumed:   {Proposed, Attempted, Recorded, Consumed},
	}
	for _, p := range path[phase] {
		if err := steps[p](); err != nil {
			t.Fatalf("reaching %s: %v", p, err)
		}
	}
}

func TestLedgerTransitions(t *testing.T) {
	type action struct {
		name string
		do   func(t *testing.T, l *Ledger, id OpID) error
	}
	propose := func(tag string) func(*testing.T, *Ledger, OpID) error {
		return func(t *testing.T, l *Ledger, id OpID) error {
			_, err := l.Propose(Operation{Invocation: id.Invocation, Ordinal: id.Ordinal, Tag: tag, Args: []byte{0xa0}})
			return err
		}
	}
	record := func(v string) func(*testing.T, *Ledger, OpID) error {
		return func(t *testing.T, l *Ledger, id OpID) error {
			_, err := l.Record(id, Outcome{Reply: reply(t, v), Source: "adapter"})
			return err
		}
	}
	actions := []action{
		{"propose same", propose("fs.read")},
		{"propose other", propose("fs.write")},
		{"attempt", func(t *testing.T, l *Ledger, id OpID) error {
			_, err := l.Attempt(id, Attempt{Grant: "g", Executor: "fs", Generation: 3})
			return err
		}},
		{"record same", record("text")},
		{"record other", record("other")},
		{"consume", func(t *testing.T, l *Ledger, id OpID) error { _, err := l.Consume(id); return err }},
	}
	// want[start][action] = resulting phase, or the error sentinel.
	type result struct {
		phase Phase
		err   error
	}
	want := map[Phase]map[string]result{
		0: {
			"propose same": {Proposed, nil}, "propose other": {Proposed, nil}, "attempt": {0, ErrUnknownOp},
			"record same": {0, ErrUnknownOp}, "record other": {0, ErrUnknownOp}, "consume": {0, ErrUnknownOp},
		},
		Proposed: {
			"propose same": {Proposed, nil}, "propose other": {Proposed, ErrMismatch}, "attempt": {Attempted, nil},
			"record same": {Proposed, ErrNoAttempt}, "record other": {Proposed, ErrNoAttempt}, "consume": {Proposed, ErrNotRecorded},
		},
		Attempted: {
			"propose same": {Attempted, nil}, "propose other": {Attempted, ErrMismatch}, "attempt": {Attempted, ErrAlreadyAttempted},
			"record same": {Recorded, nil}, "record other": {Recorded, nil}, "consume": {Attempted, ErrNotRecorded},
		},
		Unresolved: {
			"propose same": {Unresolved, nil}, "propose other": {Unresolved, ErrMismatch}, "attempt": {Unresolved, ErrAlreadyAttempted},
			"record same": {Recorded, nil}, "record other": {Recorded, nil}, "consume": {Unresolved, ErrNotRecorded},
		},
		Recorded: {
			"propose same": {Recorded, nil}, "propose other": {Recorded, ErrMismatch}, "attempt": {Recorded, ErrAlreadyAttempted},
			"record same": {Recorded, nil}, "record other": {Recorded, ErrConflictingOutcome}, "consume": {Consumed, nil},
		},
		Consumed: {
			"propose same": {Consumed, nil}, "propose other": {Consumed, ErrMismatch}, "attempt": {Consumed, ErrAlreadyAttempted},
			"record same": {Consumed, nil}, "record other": {Consumed, ErrConflictingOutcome}, "consume": {Consumed, nil},
		},
	}
	for start, row := range want {
		for _, a := range actions {
			w := row[a.name]
			t.Run(fmt.Sprintf("%s/%s", start, a.name), func(t *testing.T) {
				l := NewLedger(memStore(t))
				id := OpID{"inv", 1}
				if start != 0 {
					reach(t, l, id, start)
				}
				err := a.do(t, l, id)
				if !errors.Is(err, w.err) || (w.err == nil && err != nil) {
					t.Fatalf("got %v, want %v", err, w.err)
				}
				var le *LedgerError
				if err != nil && !errors.As(err, &le) {
					t.Fatalf("error %v is not a *LedgerError", err)
				}
				op, gerr := l.Get(id)
				got := Phase(0)
				if gerr == nil {
					got = op.Phase
				}
				if got != w.phase {
					t.Fatalf("phase %s, want %s", got, w.phase)
				}
			})
		}
	}
}

// A duplicate delivery returns the retained receipt, not the new one.
func TestLedgerReceipt(t *testing.T) {
	l := NewLedger(memStore(t))
	id := OpID{"inv", 1}
	reach(t, l, id, Recorded)
	op, err := l.Record(id, Outcome{Reply: reply(t, "text"), Source: "operator", At: 99})
	if err != nil || op.Outcome.Source != "adapter" {
		t.Fatalf("got %+v, %v: want the retained receipt", op.Outcome, err)
	}
}

// Recovery leaves attempts of the current generation alone and never
// re-dispatches: the unresolved are returned, to be reported Unknown.
func TestLedgerRecover(t *testing.T) {
	l := NewLedger(memStore(t))
	old, cur, done := OpID{"a", 1}, OpID{"b", 1}, OpID{"c", 1}
	for _, id := range []OpID{old, cur, done} {
		l.Propose(Operation{Invocation: id.Invocation, Ordinal: id.Ordinal, Tag: "t"})
	}
	l.Attempt(old, Attempt{Generation: 1})
	l.Attempt(cur, Attempt{Generation: 2})
	l.Attempt(done, Attempt{Generation: 1})
	l.Record(done, Outcome{Reply: reply(t, 1)})
	got, err := l.Recover(2)
	if err != nil || len(got) != 1 || got[0].ID() != old || got[0].Phase != Unresolved {
		t.Fatalf("recovered %v, %v", got, err)
	}
	if op, _ := l.Get(cur); op.Phase != Attempted {
		t.Fatalf("current generation's attempt moved to %s", op.Phase)
	}
}

// Settling an act of unknown outcome (recording it, or reopening it to be
// attempted again) makes an invocation that waits on it runnable, in the
// same transaction: a crash right after must not leave it waiting beside an
// act with nothing left to wait for, given no turn ever again.
func TestSettlingUnknownWakesItsInvocation(t *testing.T) {
	for _, settle := range []string{"record", "reopen"} {
		t.Run(settle, func(t *testing.T) {
			s := memStore(t)
			l, invs := NewLedger(s), NewInvocations(s)
			id := OpID{"r1", 1}
			if _, err := invs.Admit("r1", "p"); err != nil {
				t.Fatal(err)
			}
			reach(t, l, id, Unresolved)
			if _, err := invs.Move("r1", Waiting); err != nil { // the drive that met the unknown outcome
				t.Fatal(err)
			}
			var err error
			if settle == "record" {
				_, err = l.Record(id, Outcome{Reply: reply(t, "text"), Source: "operator"})
			} else {
				_, err = l.Reopen(id)
			}
			if err != nil {
				t.Fatal(err)
			}
			inv, err := invs.get("r1")
			if err != nil || !inv.Runnable() {
				t.Fatalf("after %s: %+v %v", settle, inv, err)
			}
			next, err := (&Scheduler{E: NewEngine(s, nil, 1, nil), Scope: "r1"}).Next()
			if err != nil || next != "r1" {
				t.Fatalf("after %s the scheduler's next is %q (%v), not r1", settle, next, err)
			}
		})
	}
	// An operation whose invocation is not there settles as before.
	s := memStore(t)
	l := NewLedger(s)
	reach(t, l, OpID{"gone", 1}, Unresolved)
	if _, err := l.Record(OpID{"gone", 1}, Outcome{Reply: reply(t, 1)}); err != nil {
		t.Fatal(err)
	}
}
