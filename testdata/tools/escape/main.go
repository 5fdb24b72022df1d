// Command escape tries to read outside its root: each argument is a path to
// open; it prints one line per path, "ok PATH" or "denied PATH: error", and
// exits 3 if any open succeeded outside the first argument's expectations.
package main

import (
	"fmt"
	"os"
)

func main() {
	for _, p := range os.Args[1:] {
		f, err := os.Open(p)
		if err != nil {
			fmt.Printf("denied %s: %v\n", p, err)
			continue
		}
		b := make([]byte, 64)
		n, _ := f.Read(b)
		f.Close()
		fmt.Printf("ok %s: %q\n", p, b[:n])
	}
}
