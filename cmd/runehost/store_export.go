// store_export.go holds `runehost store export FILE`: every record of a store, to a file any backend can import.

package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func storeExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write every record of the store to FILE, for store import",
		ArgsUsage: "FILE",
		Description: "Writes every record of the store, as of one moment, to FILE (written aside\n" +
			"and renamed into place: whole or absent), framed with a count and a checksum\n" +
			"that import checks. Unlike backup, the file is not Badger's: it can be\n" +
			"imported into a store of any backend with runehost store import FILE.",
		Flags: []cli.Flag{storeFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "store export: want one FILE")
			}
			dir, err := storeDir(c)
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return exitf(exitUsage, "store export: no store at %s", dir)
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
				return storeErr("store export", err)
			}
			info, err := s.ExportFile(c.Args().First())
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return storeErr("store export", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "exported %d records (%d bytes) of %s to %s\n", info.Records, info.Data, dir, c.Args().First())
			return nil
		},
	}
}
