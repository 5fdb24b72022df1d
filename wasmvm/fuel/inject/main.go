// Command inject meters a wasm module: inject IN OUT writes IN with fuel
// injected (package fuel) to OUT. The build uses it on the Rune guest.
package main

import (
	"fmt"
	"os"

	"github.com/runehost/runehost/wasmvm/fuel"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: inject IN.wasm OUT.wasm")
		os.Exit(2)
	}
	in, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "inject:", err)
		os.Exit(1)
	}
	out, err := fuel.Inject(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inject:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "inject:", err)
		os.Exit(1)
	}
}
