// hint.go holds how a command prints the commands it suggests: with the
// --store it was given, quoted for a shell, so that each works as printed.

package main

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/host"
)

// hintArgs is a runehost command line to suggest: "runehost", then args,
// with --store DIR after the command's name when the store was named by the flag (one named by
// RUNEHOST_STORE is found again by the same variable).
func hintArgs(c *cli.Context, args ...string) string {
	words := make([]string, 1, len(args)+3)
	words[0] = "runehost"
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
