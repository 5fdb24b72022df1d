// Command flood writes to stdout and stderr without end, in large lines.
package main

import (
	"os"
	"strings"
)

func main() {
	line := []byte(strings.Repeat("flood ", 1000) + "\n")
	for {
		os.Stdout.Write(line)
		os.Stderr.Write(line[:100])
	}
}
