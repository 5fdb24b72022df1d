// store_restore.go holds `runehost store restore FILE`: a new store made
// from a backup, never over a live one.

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/store"
)

func storeRestoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "make a new store in --store DIR from the backup FILE",
		ArgsUsage: "FILE",
		Description: "Checks that FILE is a whole backup (its length and checksum), then loads\n" +
			"it into the store directory, which must not exist or be empty: a live\n" +
			"store is never overwritten. Then point RUNEHOST_STORE (or --store) at it.",
		Flags: []cli.Flag{storeFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "store restore: want one FILE")
			}
			dir, err := storeDir(c)
			if err != nil {
				return err
			}
			if err := refuseServed(c); err != nil {
				return err
			}
			opts, err := storeOptions(dir)
			if err != nil {
				return err
			}
			if opts.nats != nil {
				return exitf(exitUsage, "store restore makes a Badger store from a backup; with RUNEHOST_NATS set the records are on NATS: use runehost store import")
			}
			if err := store.Restore(opts.Options, c.Args().First()); err != nil {
				return exitf(exitUsage, "store %v", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "restored %s into %s\n", c.Args().First(), dir)
			return nil
		},
	}
}
