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
		Flags:     []cli.Flag{storeFlag(), nativeFlag(), cacheFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "resume: want one INVOCATION")
			}
			e, done, err := openEngine(c, true)
			if err != nil {
				return err
			}
			defer done()
			inv := c.Args().First()
			rs, err := e.Resume(c.Context, inv)
			if err == nil {
				rs, err = e.RunTree(c.Context, inv)
			}
			if err != nil {
				return exitf(exitUsage, "resume: %v", err)
			}
			return report(c.App.Writer, c.App.ErrWriter, inv, inv, rs)
		},
	}
}
