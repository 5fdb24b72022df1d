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
			"never deleted. Then the store is compacted (its tables merged, its value\n" +
			"log collected) and its size on disk is reported, before and after.",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.DurationFlag{Name: "older-than", Value: 30 * 24 * time.Hour, Usage: "the retention"},
			&cli.BoolFlag{Name: "dry-run", Usage: "count, delete nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitf(exitUsage, "gc: takes no arguments")
			}
			if err := refuseServed(c); err != nil {
				return err
			}
			e, done, err := openEngine(c, false)
			if err != nil {
				return err
			}
			defer done()
			before, err := e.Store.Size()
			if err != nil {
				return exitf(exitInternal, "gc: %v", err)
			}
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
			if c.Bool("dry-run") {
				return nil
			}
			// The disk space comes back only once Badger's tables are
			// merged and its value log collected: gc has the store to itself.
			if err := e.Store.Compact(); err != nil {
				return exitf(exitInternal, "gc: %v", err)
			}
			after, err := e.Store.Size()
			if err != nil {
				return exitf(exitInternal, "gc: %v", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "gc: store %s before, %s after\n", sizeText(before), sizeText(after))
			return nil
		},
	}
}

// sizeText is a size in bytes as people read it.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
