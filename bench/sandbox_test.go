// sandbox_test.go adds Rune in the WebAssembly sandbox (wasmvm) as an engine.

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/wasmvm"
)

func init() { engines = append(engines, sandboxEngine) }

var sandbox *wasmvm.Runtime

// sandboxEngine runs each program to its end in one Step in the sandbox,
// from a fresh Start, on a warm instance.
var sandboxEngine = &engine{
	name: "rune-wasm",
	prepare: func(src []byte) (runner, error) {
		ctx := context.Background()
		if sandbox == nil {
			var err error
			sandbox, err = wasmvm.New(ctx, wasmvm.Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache")})
			if err != nil {
				return nil, err
			}
		}
		if _, err := sandbox.Load(ctx, src); err != nil {
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
				return 0, fmt.Errorf("rune-wasm: %s %v", r.Kind, r.Err)
			}
			d, err := checkpoint.DecodeData(r.Result)
			if err != nil {
				return 0, err
			}
			i, ok := d.(int64)
			if !ok {
				return 0, fmt.Errorf("rune-wasm: result %v is not an int", d)
			}
			return i, nil
		}, nil
	},
}
