// store_import.go holds `runehost store import FILE`: the records of an export written into a new, empty store.

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/store"
)

func storeImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "write the records of the export FILE into the new, empty store --store DIR",
		ArgsUsage: "FILE",
		Description: "Checks that FILE is a whole export (its count, length and checksum) before\n" +
			"writing anything, then writes its records into the store, which must hold\n" +
			"none: a live store is never written over. The records are read back and\n" +
			"compared with the file. Then check it with runehost store verify, and point\n" +
			"RUNEHOST_STORE (or --store) at it.",
		Flags: []cli.Flag{storeFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "store import: want one FILE")
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
			if _, err := os.Stat(c.Args().First()); err != nil {
				return exitf(exitUsage, "store import: %v", err)
			}
			_, serr := os.Stat(dir)
			made := errors.Is(serr, os.ErrNotExist)
			s, err := opts.open()
			if err != nil {
				return storeErr("store import", err)
			}
			info, err := s.ImportFile(c.Args().First(), store.ImportOptions{})
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				if made && info.Records == 0 { // nothing written: the directory made for it goes
					os.RemoveAll(dir)
				}
				if errors.Is(err, store.ErrBadExport) || errors.Is(err, store.ErrNotEmpty) {
					return exitf(exitUsage, "store %v", err)
				}
				return storeErr("store import", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "imported %d records (%d bytes) into %s\n", info.Records, info.Data, dir)
			return nil
		},
	}
}
