// handbacks_test.go profiles where the bench programs' compiled code hands
// back to the interpreter (wasmvm.Config.Profile).

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/wasmvm"
)

// handBacksPer1000 bounds each program's hand-backs per 1,000 steps: a
// change that makes compiled code hand back more turns this red.
// strbuild builds strings past the pool's longest.
var handBacksPer1000 = map[string]float64{"strbuild": 6}

// TestHandBacks runs each bench program compiled with the profile on,
// prints its hand-backs (go test -run TestHandBacks -v), and checks them
// against handBacksPer1000 (1 where it says nothing).
func TestHandBacks(t *testing.T) {
	ctx := context.Background()
	files, _ := filepath.Glob("progs/*.rune")
	classic, _ := filepath.Glob("progs/classic/*.rune")
	for _, file := range append(files, classic...) {
		prog := strings.TrimSuffix(strings.TrimPrefix(file, "progs/"), ".rune")
		t.Run(prog, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sandbox, err := wasmvm.New(ctx, wasmvm.Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), Profile: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sandbox.Close(ctx)
			if err := sandbox.Compile(ctx, src); err != nil {
				t.Fatal(err)
			}
			cp, err := sandbox.Start(ctx, port.Input{Source: src, Limit: 1 << 62})
			if err != nil {
				t.Fatal(err)
			}
			r, err := sandbox.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 62})
			if err != nil || r.Kind != port.Done {
				t.Fatalf("%v %v", r, err)
			}
			h, err := checkpoint.DecodeHeader(r.Checkpoint)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			total := 0
			for _, hb := range sandbox.HandBacks() {
				total += hb.N
				if len(b.String()) < 2000 {
					fmt.Fprintf(&b, "\n  %8d  fn %d pc %d %s %s", hb.N, hb.Fn, hb.PC, hb.Op, hb.Builtin)
				}
			}
			per := float64(total) * 1000 / float64(h.Used)
			t.Logf("%s: %d steps, %d hand-backs (%.1f per 1,000 steps)%s", prog, h.Used, total, per, b.String())
			bound, ok := handBacksPer1000[filepath.Base(prog)]
			if !ok {
				bound = 1
			}
			if per > bound {
				t.Errorf("%s: %.2f hand-backs per 1,000 steps, over %v:%s", prog, per, bound, b.String())
			}
		})
	}
}
