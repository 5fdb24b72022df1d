// sandbox_test.go adds Rune in the WebAssembly sandbox (wasmvm) as an engine.

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm"
)

func init() {
	engines = append(engines, sandboxEngine("rune-wasm", false), sandboxEngine("rune-wasm-interp", true))
	engineExt["rune-wasm-interp"] = "rune"
}

var sandboxes = map[bool]*wasmvm.Runtime{}

// sandboxEngine runs each program to its end in one Step in the sandbox,
// from a fresh Start, on a warm instance: compiled (guest/wasmgen), or with
// interpret in the guest's interpreter alone.
func sandboxEngine(name string, interpret bool) *engine {
	return &engine{name: name, prepare: func(src []byte) (runner, error) {
		ctx := context.Background()
		sandbox := sandboxes[interpret]
		if sandbox == nil {
			var err error
			sandbox, err = wasmvm.New(ctx, wasmvm.Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), Interpret: interpret})
			if err != nil {
				return nil, err
			}
			sandboxes[interpret] = sandbox
		}
		if err := sandbox.Compile(ctx, src); err != nil {
			return nil, err
		}
		return func() (int64, error) {
			cp, err := sandbox.Start(ctx, port.Input{Source: src, Limit: 1 << 62})
			if err != nil {
				return 0, err
			}
			r, err := sandbox.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 62})
			if err != nil {
				return 0, err
			}
			if r.Kind != port.Done {
				return 0, fmt.Errorf("%s: %s %v", name, r.Kind, r.Err)
			}
			d, err := checkpoint.DecodeData(r.Result)
			if err != nil {
				return 0, err
			}
			i, ok := d.(int64)
			if !ok {
				return 0, fmt.Errorf("%s: result %v is not an int", name, d)
			}
			return i, nil
		}, nil
	}}
}

// BenchmarkSliced runs the programs compiled in the sandbox in one Step,
// in lazy 1,000-step slices a Step each (a crossing a slice), and in lazy
// 1,000-step slices as many a crossing as the engine asks for
// (host.Pacer): docs/BENCHMARKS.md, "Many slices a crossing".
func BenchmarkSliced(b *testing.B) {
	ctx := context.Background()
	sandbox, err := wasmvm.New(ctx, wasmvm.Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache")})
	if err != nil {
		b.Fatal(err)
	}
	defer sandbox.Close(ctx)
	for _, prog := range progNames {
		src, err := os.ReadFile(filepath.Join("progs", prog+".rune"))
		if err != nil {
			b.Fatal(err)
		}
		if err := sandbox.Compile(ctx, src); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"one-step", "slice-a-crossing", "paced"} {
			b.Run(prog+"/"+mode, func(b *testing.B) {
				for b.Loop() {
					if err := runSliced(ctx, sandbox, src, mode); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func runSliced(ctx context.Context, sandbox *wasmvm.Runtime, src []byte, mode string) error {
	cp, err := sandbox.Start(ctx, port.Input{Source: src, Limit: 1 << 62, Invocation: "sliced"})
	if err != nil {
		return err
	}
	var pace host.Pacer
	for {
		req := port.Request{Checkpoint: cp, Slice: 1000, Lazy: true}
		switch mode {
		case "one-step":
			req.Slice = 1 << 62
		case "paced":
			req.Slices = pace.Slices()
		}
		if cp == nil {
			req.Invocation = "sliced"
		}
		t0 := time.Now()
		r, err := sandbox.Step(ctx, req)
		if err != nil {
			return err
		}
		pace.Took(max(req.Slices, 1), time.Since(t0), r.Kind == port.Yield && r.Checkpoint == nil)
		switch r.Kind {
		case port.Done:
			return nil
		case port.Yield:
			cp = r.Checkpoint
		default:
			return fmt.Errorf("%s: %v", r.Kind, r.Err)
		}
	}
}
