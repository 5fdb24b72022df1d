// send.go holds `runehost send`: deliver an event to an invocation.

package main

import (
	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/checkpoint"
)

func sendCommand() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "deliver an event to an invocation, and go on with it if it waits",
		ArgsUsage: "INVOCATION TAG JSON",
		Description: "The event is kept until an await of the invocation names TAG; an\n" +
			"event sent before the prog reaches its await is not lost.",
		Flags: []cli.Flag{storeFlag(), nativeFlag(), cacheFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 3 {
				return exitf(exitUsage, "send: want INVOCATION TAG JSON")
			}
			inv, tag := c.Args().Get(0), c.Args().Get(1)
			d, err := checkpoint.DataFromJSON([]byte(c.Args().Get(2)))
			if err != nil {
				return exitf(exitUsage, "send: %v", err)
			}
			payload, err := checkpoint.EncodeData(d)
			if err != nil {
				return exitf(exitUsage, "send: %v", err)
			}
			e, done, err := openEngine(c, true)
			if err != nil {
				return err
			}
			defer done()
			rs, err := e.Send(c.Context, inv, tag, payload)
			if err == nil {
				rs, err = e.RunTree(c.Context, inv)
			}
			if err != nil {
				return exitf(exitUsage, "send: %v", err)
			}
			return report(c.App.Writer, c.App.ErrWriter, inv, inv, rs)
		},
	}
}
