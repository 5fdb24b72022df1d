// handbacks_test.go checks the hand-back profile against a prog whose
// hand-backs are known.

package wasmvm

import (
	"context"
	"testing"

	"github.com/runehost/runehost/guest/port"
)

// TestHandBackProfile: with Profile on, each hand-back of compiled code is
// counted at its instruction, a builtin call by the builtin's name; the
// end of a slice is not a hand-back; with Profile off nothing is counted.
func TestHandBackProfile(t *testing.T) {
	src := []byte(`var t = 0
var l = [3, 1, 2]
for i in range(10) {
  sort(l)
  t += len(l) + i
}
return t`)
	for _, profile := range []bool{true, false} {
		r := runtimeWith(t, Config{jitSync: true, Profile: profile})
		ctx := context.Background()
		cp, err := r.Start(ctx, port.Input{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		for {
			res, err := r.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if res.Kind == port.Done {
				break
			}
			cp = res.Checkpoint
		}
		hbs := r.HandBacks()
		if !profile {
			if len(hbs) != 0 {
				t.Fatalf("profile off, got %v", hbs)
			}
			continue
		}
		sorts := 0
		for _, hb := range hbs {
			if hb.Builtin == "sort" {
				sorts += hb.N
				if hb.Op != "call" || hb.Fn != 0 {
					t.Errorf("sort's hand-back: %+v", hb)
				}
			} else if hb.Builtin != "" {
				t.Errorf("unexpected builtin hand-back %+v", hb)
			}
		}
		if sorts != 10 {
			t.Errorf("sort handed back %d times, want 10: %+v", sorts, hbs)
		}
	}
}
