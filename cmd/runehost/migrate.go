// migrate.go holds `runehost migrate`: replace the checkpoint of an
// invocation the engine cannot run, after validating the replacement.

package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "replace a paused invocation's checkpoint with a validated one",
		ArgsUsage: "INVOCATION CHECKPOINT",
		Description: "An invocation whose checkpoint this host cannot run (one of older semantics,\n" +
			"say) is paused: inspectable, never run. Save its checkpoint with\n" +
			"`runehost inspect INV --save-checkpoint FILE`, convert it, and give the\n" +
			"result here. It is validated in full (semantics, invocation, program, the\n" +
			"machine restoring from it) before it replaces the stored one; then\n" +
			"`runehost resume INV` runs it. --dry-run only validates.",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.StringFlag{Name: "source", Usage: "the prog source the checkpoint runs, if the store does not have it"},
			&cli.BoolFlag{Name: "dry-run", Usage: "validate, change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exitf(exitUsage, "migrate: want INVOCATION CHECKPOINT")
			}
			if err := refuseServed(c); err != nil {
				return err
			}
			cp, err := os.ReadFile(c.Args().Get(1))
			if err != nil {
				return exitf(exitUsage, "migrate: %v", err)
			}
			var src []byte
			if f := c.String("source"); f != "" {
				if src, err = readProg(f); err != nil {
					return exitf(exitUsage, "migrate: %v", err)
				}
			}
			e, done, err := openEngine(c, false)
			if err != nil {
				return err
			}
			defer done()
			h, err := e.Migrate(c.Args().First(), cp, src, c.Bool("dry-run"))
			if err != nil {
				return exitf(exitFailed, "%v", err)
			}
			verb := "migrated"
			if c.Bool("dry-run") {
				verb = "valid (dry run, nothing changed)"
			}
			fmt.Fprintf(c.App.ErrWriter, "%s: %s, semantics %d, program %.16x, %d steps used, %s\n", verb, c.Args().First(), h.Semantics, h.Program, h.Used, h.Status)
			return nil
		},
	}
}
