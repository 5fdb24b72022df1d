// resume.go holds `runehost resume`: drive a stored invocation on.

package main

import (
	"github.com/urfave/cli/v2"
)

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "go on with a stored invocation from its last checkpoint",
		ArgsUsage: "INVOCATION",
		Flags:     []cli.Flag{storeFlag(), nativeFlag(), cacheFlag(), eventBytesFlag(), quietFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "resume: want one INVOCATION")
			}
			b, err := openBackend(c, true)
			if err != nil {
				return err
			}
			defer b.Close()
			inv := c.Args().First()
			rs, err := b.Resume(c.Context, inv)
			if err != nil {
				return failed("resume", err, exitUsage)
			}
			return drive(c, b, "resume", inv, inv, rs.Cursor, exitUsage)
		},
	}
}
