// Command inject meters a wasm module: inject [-safepoint N] IN OUT writes IN
// with fuel injected (package fuel) to OUT. The build uses it on the Rune
// guest.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/runehost/runehost/wasmvm/fuel"
)

func main() {
	safepoint := flag.Uint64("safepoint", 0, "enter the host every N units of fuel (a power of two; 0: never)")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: inject [-safepoint N] IN.wasm OUT.wasm") }
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	in, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "inject:", err)
		os.Exit(1)
	}
	out, err := fuel.InjectWith(in, fuel.Options{Safepoint: *safepoint})
	if err != nil {
		fmt.Fprintln(os.Stderr, "inject:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(flag.Arg(1), out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "inject:", err)
		os.Exit(1)
	}
}
