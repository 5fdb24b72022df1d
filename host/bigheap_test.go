// bigheap_test.go: a prog whose machine is too large to checkpoint fails
// with a limit error of its own, wherever the checkpoint is taken, and the
// host goes on.

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/wasmvm"
)

// bigHeap holds some 112 MB in fourteen distinct strings of 8 MB (the
// string limit), as cheaply in steps as Rune builds them, then does end.
func bigHeap(end string) []byte {
	return []byte(`let s = "x" * 8000000
let l = [s+"a", s+"b", s+"c", s+"d", s+"e", s+"f", s+"g", s+"h", s+"i", s+"j", s+"k", s+"l", s+"m"]
` + end)
}

// tooLarge says err is the limit error of a checkpoint of bigHeap's size.
func tooLarge(ce *checkpoint.Error) bool {
	return ce != nil && ce.Kind == "limit" && strings.Contains(ce.Msg, fmt.Sprintf("exceeds the limit of %d", checkpoint.MaxSize)) &&
		strings.Contains(ce.Msg, "checkpoint of 112000") // 14 strings of 8,000,001 bytes and the rest
}

func TestHeapTooLargeToCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name, end string
		park      bool
	}{
		{"done", "return len(l)", false},
		{"act", `return act "calc" {n: len(l)}`, false},
		{"await", `return await {key: "go"}`, false},
		{"park", "while true {}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, memStore(t), 1)
			e.Adapters["calc"] = &recorder{}
			e.Cadence = Cadence{Every: time.Hour} // no checkpoint before the end
			if tc.park {
				e.Quantum = 3000 // past the strings, into the loop
			}
			checkTooLarge(t, e, bigHeap(tc.end), tc.park)
		})
	}
}

// TestHeapTooLargeInSandbox is the same in the sandbox: the guest fails the
// machine, and the sandbox's memory holds the heap, not its copy.
func TestHeapTooLargeInSandbox(t *testing.T) {
	rt, err := wasmvm.New(context.Background(), wasmvm.Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	e := engine(t, memStore(t), 1)
	e.Runtime = rt
	e.Cadence = Cadence{Every: time.Hour}
	checkTooLarge(t, e, bigHeap("return len(l)"), false)
}

func checkTooLarge(t *testing.T, e *Engine, src []byte, park bool) {
	t.Helper()
	ctx := context.Background()
	out, err := e.Start(ctx, "r1", "p", src, nil, 10_000_000, 1)
	if err == nil && park {
		if out.Status != Running {
			t.Fatalf("before the park: %+v", out)
		}
		err = e.Park(ctx)
		out, _ = e.State("r1")
	}
	if err != nil || out.Status != Failed || !tooLarge(out.Err) {
		t.Fatalf("got %+v, %v; want failed with the checkpoint's limit", out, err)
	}
	i, err := e.invs.get("r1")
	if err != nil || i.Status != Failed || i.Paused != "" || !tooLarge(i.Err) {
		t.Fatalf("stored: %+v, %v", i, err)
	}
	h, err := checkpoint.DecodeHeader(mustCP(t, e, "r1"))
	if err != nil || h.Status != checkpoint.Failed || !tooLarge(h.Error) {
		t.Fatalf("stored checkpoint: %+v, %v", h, err)
	}
	evs, err := e.Events("r1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var noted bool
	for _, ev := range evs {
		noted = noted || ev.Kind == events.KindRunNote && strings.Contains(ev.RunNote.Summary, "checkpoint of 112000")
	}
	if !noted {
		t.Errorf("no event says why it failed: %+v", evs)
	}
	// Settled: a resume does not run it again.
	ran := false
	e.OnSlice = func(string, uint64) { ran = true }
	out, err = e.Resume(ctx, "r1")
	if err != nil && !errors.Is(err, ErrEnded) || err == nil && out.Status != Failed || ran {
		t.Fatalf("resume: %+v, %v (ran again: %v)", out, err, ran)
	}
	e.OnSlice = nil
	// The host goes on.
	if out, err := e.Start(ctx, "r2", "q", []byte("return 7"), nil, 1000, 1); err != nil || out.Status != Completed {
		t.Fatalf("another run: %+v, %v", out, err)
	}
}
