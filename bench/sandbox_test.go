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
