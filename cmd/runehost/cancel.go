// cancel.go holds `runehost cancel`: stop an invocation that has not ended.

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "stop an invocation that has not ended (its records stay)",
		ArgsUsage: "INVOCATION",
		Flags:     []cli.Flag{storeFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "cancel: want one INVOCATION")
			}
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.Cancel(c.Context, c.Args().First()); err != nil {
				return failed("cancel", err, exitUsage)
			}
			fmt.Fprintf(c.App.ErrWriter, "cancelled: %s\n", c.Args().First())
			return nil
		},
	}
}
