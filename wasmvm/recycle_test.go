// recycle_test.go checks that a run's limits depend on that run alone: an
// instance does not lend one run the memory another grew it to.

package wasmvm

import (
	"context"
	"fmt"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
)

// strBuild builds a string of some 60 KB a piece at a time: little live,
// much garbage (some 400 MB of strings over the run).
const strBuild = `var s = ""
var i = 0
while i < 14000 {
  s = s + str(i)
  i += 1
}
return len(s)
`

// runIn runs strBuild to its end on r in slices of slice steps, each
// checkpointed.
func runIn(t *testing.T, r *Runtime, inv string, slice uint64) *port.Result {
	t.Helper()
	ctx := context.Background()
	cp, err := r.Start(ctx, port.Input{Source: []byte(strBuild), Invocation: inv, Limit: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	for {
		res, err := r.Step(ctx, port.Request{Checkpoint: cp, Slice: slice})
		if err != nil {
			t.Fatalf("%s: %v", inv, err)
		}
		if res.Kind != port.Yield {
			return res
		}
		cp = res.Checkpoint
	}
}

// Two runs of strBuild in one slice each, then one in slices of 1000
// steps, interpreted, on one Runtime: each ends done. The whole-slice runs
// grow an instance's memory with garbage no collection ran on within the
// call; a wasm memory never shrinks, and the third run, given that
// instance, needed more than 512 MiB. Such an instance is let go.
func TestRunsLimitsOwn(t *testing.T) {
	r := runtimeWith(t, Config{Interpret: true})
	want, err := checkpoint.EncodeData(int64(len(makeRange(14000))))
	if err != nil {
		t.Fatal(err)
	}
	for i, slice := range []uint64{1 << 40, 1 << 40, 1000} {
		res := runIn(t, r, fmt.Sprintf("r%d", i), slice)
		if res.Kind != port.Done || string(res.Result) != string(want) {
			t.Fatalf("run %d (slices of %d): %s %v, want done", i, slice, res.Kind, res.Err)
		}
		r.mu.Lock()
		for _, in := range r.pool {
			if r.bloated(in) {
				t.Errorf("run %d: an instance of %d MiB is kept", i, in.mem.Size()>>20)
			}
		}
		r.mu.Unlock()
	}
}

// makeRange is the digits strBuild joins: 0 to n-1.
func makeRange(n int) string {
	var b []byte
	for i := range n {
		b = fmt.Append(b, i)
	}
	return string(b)
}
