// native_test.go tests what the native port keeps between steps: its live
// machines.

package port

import (
	"context"
	"fmt"
	"testing"
)

// Invocations stepped in turns keep their live machines: keeping one
// never evicts another's while fewer than maxLive are live.
func TestLiveMachinesInTurns(t *testing.T) {
	n := NewNative()
	ctx := context.Background()
	src := []byte(`var i = 0
while i < 1000000 { i += 1 }
return i`)
	var cps [3][]byte
	for k := range cps {
		cp, err := n.Start(ctx, Input{Source: src, Invocation: fmt.Sprint("inv", k)})
		if err != nil {
			t.Fatal(err)
		}
		cps[k] = cp
	}
	for turn := 0; turn < 300; turn++ {
		k := turn % len(cps)
		req := Request{Checkpoint: cps[k], Slice: 10, Lazy: true, Invocation: fmt.Sprint("inv", k)}
		res, err := n.Step(ctx, req)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if res.Kind != Yield || res.Checkpoint != nil {
			t.Fatalf("turn %d: %s, checkpoint %v", turn, res.Kind, res.Checkpoint != nil)
		}
		cps[k] = nil
	}
}
