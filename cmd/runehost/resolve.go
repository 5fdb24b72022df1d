// resolve.go holds `runehost resolve`: an operator settles an act whose
// outcome is unknown after a crash.

package main

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
)

func resolveCommand() *cli.Command {
	return &cli.Command{
		Name:      "resolve",
		Usage:     "settle an act of unknown outcome, then go on with its invocation",
		ArgsUsage: "INVOCATION ORDINAL",
		Description: "An act attempted by a process that then died may or may not have\n" +
			"happened; runehost never re-runs it on its own. Look at the world, then\n" +
			"say how it ended: --outcome JSON (it happened, with this result) or\n" +
			"--error KIND:MSG (the prog sees that error, e.g. failed:not sent).",
		Flags: []cli.Flag{
			storeFlag(), nativeFlag(), cacheFlag(), quietFlag(),
			&cli.StringFlag{Name: "outcome", Usage: "the act's result, as JSON"},
			&cli.StringFlag{Name: "error", Usage: "the act's error, as KIND:MSG"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exitf(exitUsage, "resolve: want INVOCATION ORDINAL")
			}
			ord, err := strconv.ParseUint(c.Args().Get(1), 10, 64)
			if err != nil || ord == 0 {
				return exitf(exitUsage, "resolve: ORDINAL must be a positive number (see runehost inspect)")
			}
			var r api.Resolve
			switch {
			case c.IsSet("outcome") == c.IsSet("error"):
				return exitf(exitUsage, "resolve: give exactly one of --outcome and --error")
			case c.IsSet("outcome"):
				if _, err := checkpoint.DataFromJSON([]byte(c.String("outcome"))); err != nil {
					return exitf(exitUsage, "resolve: --outcome: %v", err)
				}
				r.Outcome = json.RawMessage(c.String("outcome"))
			default:
				kind, msg, _ := strings.Cut(c.String("error"), ":")
				if kind == "" || kind == "steps" || kind == "fault" {
					return exitf(exitUsage, "resolve: --error wants KIND:MSG with a kind other than steps or fault")
				}
				r.Error = &api.ActError{Kind: kind, Message: msg}
			}
			b, err := openBackend(c, true)
			if err != nil {
				return err
			}
			defer b.Close()
			inv := c.Args().First()
			rs, err := b.Resolve(c.Context, inv, ord, r)
			if err != nil {
				return failed("resolve", err, exitUsage)
			}
			return drive(c, b, "resolve", inv, inv, rs.Cursor, exitUsage)
		},
	}
}
