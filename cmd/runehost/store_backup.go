// store_backup.go holds `runehost store backup FILE`: a consistent
// snapshot of a store, taken while it is open.

package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func storeBackupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "write a consistent snapshot of the store to FILE",
		ArgsUsage: "FILE",
		Description: "Writes every record of the store, as of one moment, to FILE (written aside\n" +
			"and renamed into place: whole or absent), with a checksum that restore\n" +
			"checks. A value that cannot be read fails the backup. Restore it with\n" +
			"runehost store restore FILE --store NEWDIR.",
		Flags: []cli.Flag{storeFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "store backup: want one FILE")
			}
			dir, err := storeDir(c)
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return exitf(exitUsage, "store backup: no store at %s", dir)
			}
			if err := refuseServed(c); err != nil {
				return err
			}
			opts, err := storeOptions(dir)
			if err != nil {
				return err
			}
			if err := storeExists(c); err != nil {
				return err
			}
			s, err := opts.open()
			if err != nil {
				return storeErr("store backup", err)
			}
			info, err := s.Backup(c.Args().First())
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return storeErr("store backup", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "backed up %s to %s: %d bytes, up to version %d\n", dir, c.Args().First(), info.Bytes, info.Version)
			return nil
		},
	}
}
