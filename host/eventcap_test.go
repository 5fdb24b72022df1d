// eventcap_test.go checks Bounds.Events: a run that floods its log fails
// with a limit error naming the cap, its invocation failed (not running,
// not paused), every event before the cap readable, the count kept with
// the run across engines, and the host able to run the next prog.

package host

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/store"
)

// floodSrc emits n events of about 8 KB (what an emit's text is capped at,
// events.OutputCap), each numbered, and then returns "done".
func floodSrc(n int) []byte {
	return []byte(fmt.Sprintf(`let pad = "x" * 7900
for i in range(%d) { emit("flood", str(i) + ":" + pad) }
return "done"`, n))
}

// checkFlood checks that inv failed at the cap with its events intact:
// every flood event in order, numbered from 0, then the failure's note and
// outcome.
func checkFlood(t *testing.T, e *Engine, inv string, out *RunState, cap int64, want string) {
	t.Helper()
	if out.Status != Failed || out.Err == nil || out.Err.Kind != "limit" || out.Err.Msg != want {
		t.Fatalf("got status %v, error %+v; want failed with limit: %s", out.Status, out.Err, want)
	}
	i, err := e.invs.get(inv)
	if err != nil || i.Status != Failed {
		t.Fatalf("stored invocation %+v %v, want failed", i, err)
	}
	if st, err := e.State(inv); err != nil || st.Status != Failed || st.Paused != "" {
		t.Fatalf("state %+v %v, want failed and not paused", st, err)
	}
	evs, err := e.Events(inv, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	floods, stored := 0, int64(0)
	for k, ev := range evs {
		if ev.Seq != uint64(k+1) {
			t.Fatalf("event %d has seq %d", k, ev.Seq)
		}
		if ev.Emit != nil && ev.Emit.Name == "flood" {
			if p := fmt.Sprintf(`"%d:xxx`, floods); !strings.HasPrefix(ev.Emit.Data, p) {
				t.Fatalf("flood event %d: %.20s…, want %s…", floods, ev.Emit.Data, p)
			}
			floods++
		}
	}
	var c logCounter
	if err := e.Store.View(func(tx *store.Tx) error { _, err := tx.Get(store.K("evn", inv), &c); return err }); err != nil {
		t.Fatal(err)
	}
	stored = int64(c.Bytes)
	// The cap was met within the last slice's events: what is kept is
	// under it, and within one event of it (the failure's own events,
	// small, are past it).
	t.Logf("%d flood events, %d bytes stored", floods, stored)
	if floods == 0 || stored < cap-64<<10 || stored > cap+4096 {
		t.Fatalf("%d flood events, %d bytes stored, cap %d", floods, stored, cap)
	}
	last := evs[len(evs)-1]
	if last.Outcome == nil || last.Outcome.Status != events.OutcomeFailed {
		t.Fatalf("last event %+v, want a failed outcome", last)
	}
	noted := false
	for _, ev := range evs[len(evs)-4:] {
		noted = noted || ev.RunNote != nil && strings.Contains(ev.RunNote.Summary, want)
	}
	if !noted {
		t.Fatalf("no note of the failure among the last events")
	}
}

// checkHealthy runs another prog on e to its end.
func checkHealthy(t *testing.T, e *Engine, inv string) {
	t.Helper()
	out, err := e.Start(context.Background(), inv, "q", []byte(`emit("ok", 1)
return 42`), nil, 100_000, 1)
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "42" {
		t.Fatalf("the next run: %+v %v", out, err)
	}
}

func TestEventsCap(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Bounds.Events = 256 << 10
	var warnings []string
	e.OnWarn = func(inv, msg string) { warnings = append(warnings, msg) }
	out, err := e.Start(context.Background(), "r1", "p", floodSrc(100), nil, 100_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkFlood(t, e, "r1", out, 256<<10, "events: the run stored more than 256 KiB of events (262144 bytes)")
	if !strings.Contains(strings.Join(warnings, "\n"), "near the cap of 256 KiB") {
		t.Fatalf("warnings %q", warnings)
	}
	// Ended: driving it again changes nothing.
	if again, err := e.Drive(context.Background(), "r1"); err != nil || again.Status != Failed {
		t.Fatalf("driven again: %+v %v", again, err)
	}
	checkHealthy(t, e, "r2")
	// Under the cap, the same prog completes.
	e.Bounds.Events = 2 << 20
	if out, err := e.Start(context.Background(), "r3", "p", floodSrc(100), nil, 100_000_000, 1); err != nil || out.Status != Completed {
		t.Fatalf("under the cap: %+v %v", out, err)
	}
}

// The count is kept with the run: a run resumed by another engine (a new
// process) goes on from it, with no fresh allowance.
func TestEventsCapKeptAcrossEngines(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Bounds.Events = 256 << 10
	src := []byte(`let pad = "x" * 7900
for i in range(20) { emit("flood", str(i) + ":" + pad) }
await {key: "go"}
for i in range(20, 40) { emit("flood", str(i) + ":" + pad) }
return "done"`) // 40 events of 8 KB: each half under the cap, both over it
	out, err := e.Start(context.Background(), "r1", "p", src, nil, 100_000_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("got %+v %v", out, err)
	}
	e2 := engine(t, s, 2)
	e2.Bounds.Events = 256 << 10
	if _, err := e2.boxes.Deliver("r1", "go", nil); err != nil {
		t.Fatal(err)
	}
	out, err = e2.Drive(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	checkFlood(t, e2, "r1", out, 256<<10, "events: the run stored more than 256 KiB of events (262144 bytes)")
	checkHealthy(t, e2, "r2")
}

// At the default cap, 64 MiB: a flood of about 70 MiB of 8 KB events.
func TestEventsCapDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 64 MiB")
	}
	e := engine(t, memStore(t), 1)
	if e.Bounds.Events != 64<<20 {
		t.Fatalf("default cap %d", e.Bounds.Events)
	}
	t0 := time.Now()
	out, err := e.Start(context.Background(), "r1", "p", floodSrc(9000), nil, 1_000_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flood failed after %v", time.Since(t0))
	checkFlood(t, e, "r1", out, 64<<20, "events: the run stored more than 64 MiB of events (67108864 bytes)")
	checkHealthy(t, e, "r2")
}
