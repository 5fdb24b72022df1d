// gc.go holds `runehost gc`: delete finished invocations past retention.

package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "delete finished invocations older than the retention, with all their records",
		Description: "Deletes each invocation tree whose root ended (completed, failed, cancelled\n" +
			"or conflict) more than --older-than ago: the invocations, their ledger,\n" +
			"events, checkpoints and allowances; then the large replies and sources\n" +
			"nothing left names. Progs and their state stay. Unfinished invocations are\n" +
			"never deleted.",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.DurationFlag{Name: "older-than", Value: 30 * 24 * time.Hour, Usage: "the retention"},
			&cli.BoolFlag{Name: "dry-run", Usage: "count, delete nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitf(exitUsage, "gc: takes no arguments")
			}
			e, done, err := openEngine(c, false)
			if err != nil {
				return err
			}
			defer done()
			cutoff := time.Now().Add(-c.Duration("older-than")).UnixMilli()
			rep, err := e.GC(cutoff, c.Bool("dry-run"))
			if err != nil {
				return exitf(exitInternal, "gc: %v", err)
			}
			verb := "deleted"
			if c.Bool("dry-run") {
				verb = "would delete"
			}
			fmt.Fprintf(c.App.ErrWriter, "gc: %s %d invocations (%d records), %d large replies, %d sources\n", verb, rep.Invocations, rep.Records, rep.Blobs, rep.Sources)
			for _, d := range rep.Damaged {
				fmt.Fprintf(c.App.ErrWriter, "gc: kept, unreadable: %s\n", d)
			}
			return nil
		},
	}
}
