// send.go holds `runehost send`: deliver an event to an invocation.

package main

import (
	"encoding/json"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/machine"
)

func sendCommand() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "deliver an event to an invocation, and go on with it if it waits",
		ArgsUsage: "INVOCATION TAG JSON",
		Description: "The event is kept until an await of the invocation names TAG; an\n" +
			"event sent before the prog reaches its await is not lost.",
		Flags: []cli.Flag{storeFlag(), nativeFlag(), cacheFlag(), quietFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 3 {
				return exitf(exitUsage, "send: want INVOCATION TAG JSON")
			}
			inv, tag := c.Args().Get(0), c.Args().Get(1)
			d, err := checkpoint.DataFromJSON([]byte(c.Args().Get(2)))
			if err == nil {
				err = machine.CheckData(d) // what the prog could not take is refused before delivery
			}
			if err != nil {
				return exitf(exitUsage, "send: %v", err)
			}
			b, err := openBackend(c, true)
			if err != nil {
				return err
			}
			defer b.Close()
			rs, err := b.Send(c.Context, inv, api.Send{Tag: tag, Payload: json.RawMessage(c.Args().Get(2))})
			if err != nil {
				return failed("send", err, exitUsage)
			}
			return drive(c, b, "send", inv, inv, rs.Cursor, exitUsage)
		},
	}
}
