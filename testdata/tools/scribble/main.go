// Command scribble runs file operations, each argument OP:PATH[:ARG], and
// prints "ok OP PATH" or "denied OP PATH: ERRNO (error)" for each (see
// internal/testtools/fsops, which the tests also run natively to compare).
package main

import (
	"os"

	"github.com/runehost/runehost/internal/testtools/fsops"
)

func main() { fsops.Run(os.Stdout, "", os.Args[1:]) }
