// carry_test.go tests one transaction an act: an act's outcome is written
// with the checkpoint of the slice after it, and never held in memory past
// a crossing that stores none.

package host

import (
	"context"
	"sync"
	"testing"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// In a steady run of acts, each act costs one update transaction: its
// attempt, the last act's outcome and the checkpoint together.
func TestOneTransactionAnAct(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Adapters["calc"] = &recorder{}
	var mu sync.Mutex
	commits := 0
	s.SetCheck(func(*store.Tx, []store.Key) error {
		mu.Lock()
		commits++
		mu.Unlock()
		return nil
	})
	const acts = 40
	src := []byte("var i = 0\nwhile i < 40 { act \"calc\" {n: i}; i += 1 }\nreturn i")
	got, err := e.Start(context.Background(), "inv", "p", src, nil, 10_000_000, 1)
	if err != nil || got.Status != Completed {
		t.Fatalf("%+v %v", got, err)
	}
	// The start, a few reservations and the end are the rest.
	if commits > acts+12 {
		t.Fatalf("%d update transactions for %d acts: want about one an act", commits, acts)
	}
	for n := uint64(1); n <= acts; n++ {
		op, err := e.ledger.Get(OpID{"inv", n})
		if err != nil || op.Phase != Consumed {
			t.Fatalf("act %d: %+v %v", n, op, err)
		}
	}
}

// carryPort checks, at every slice that continues a live machine (the last
// crossing stored no checkpoint), that the act before it is in the ledger
// with its outcome.
type carryPort struct {
	port.RuntimePort
	l      *Ledger
	seen   int
	failed []string
}

func (p *carryPort) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	if req.Invocation != "" {
		op, err := p.l.Get(OpID{req.Invocation, 1})
		switch {
		case err != nil:
			// Not proposed yet: the slices before the act.
		case op.Phase == Recorded || op.Phase == Consumed:
			p.seen++
		default:
			p.failed = append(p.failed, op.Phase.String())
		}
	}
	return p.RuntimePort.Step(ctx, req)
}

// An act followed by long pure work: its outcome is written at the first
// crossing after it that stores no checkpoint, not kept until the next act.
func TestCarriedOutcomeWrittenAtLazyCrossing(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Adapters["calc"] = &recorder{}
	p := &carryPort{RuntimePort: e.Runtime, l: e.ledger}
	e.Runtime = p
	src := []byte("var t = act \"calc\" {n: 1}\nvar j = 0\nwhile j < 200000 { t = (t * 31 + j) % 10007; j += 1 }\nreturn t")
	got, err := e.Start(context.Background(), "inv", "p", src, nil, 100_000_000, 1)
	if err != nil || got.Status != Completed {
		t.Fatalf("%+v %v", got, err)
	}
	if len(p.failed) > 0 || p.seen == 0 {
		t.Fatalf("the act's outcome at the crossings after it: %d written, not yet at %d (%v)", p.seen, len(p.failed), p.failed)
	}
}

// An await takes its event, or leaves the invocation waiting, in the
// transaction that stores the checkpoint reaching it, with the status line
// that says so: parking costs the admission and that one transaction.
func TestAwaitTakesWithItsCheckpoint(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	var mu sync.Mutex
	var synced []string
	s.SetCheck(func(_ *store.Tx, written []store.Key) error {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range written {
			if parts := k.Parts(); len(parts) > 0 {
				synced = append(synced, parts[0])
			}
		}
		synced = append(synced, "|")
		return nil
	})
	src := []byte("let ev = await {key: \"go\"}\nreturn ev + 1")
	got, err := e.Start(context.Background(), "inv", "p", src, nil, 1_000_000, 1)
	if err != nil || got.Status != Waiting {
		t.Fatalf("%+v %v", got, err)
	}
	commits := 0
	for _, k := range synced {
		if k == "|" {
			commits++
		}
	}
	if commits > 2 {
		t.Fatalf("%d update transactions to park (%v): want the admission, and the checkpoint with its await and status line", commits, synced)
	}
	evs, err := e.Events("inv", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, ev := range evs {
		if ev.RunNote != nil && ev.RunNote.Note == events.NoteWaiting {
			notes = append(notes, ev.RunNote.Summary)
		}
	}
	if len(notes) != 1 || notes[0] != "waiting for an event [go]" {
		t.Fatalf("the run's waiting lines: %q, want one", notes)
	}
	got, err = e.Send(context.Background(), "inv", "go", data(t, int64(41)))
	if err != nil || got.Status != Completed || porttestJSON(t, got.Result) != "42" {
		t.Fatalf("%+v %v", got, err)
	}
}
