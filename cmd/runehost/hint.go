// hint.go holds how a command prints the commands it suggests: with the
// --store it was given, quoted for a shell, so that each works as printed.

package main

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/host"
)

// hintArgs is a runehost command line to suggest: args after the command's
// name, with --store DIR when the store was named by the flag (one named by
// RUNEHOST_STORE is found again by the same variable).
func hintArgs(c *cli.Context, args ...string) string {
	words := make([]string, 0, len(args)+2)
	for i, a := range args {
		words = append(words, host.ShellWord(a))
		if i == 0 {
			if dir := c.String("store"); dir != "" && dir != os.Getenv("RUNEHOST_STORE") {
				words = append(words, "--store", host.ShellWord(dir))
			}
		}
	}
	return strings.Join(words, " ")
}
