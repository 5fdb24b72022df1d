// grant.go holds `runehost grant`, `revoke` and `grants`: the ward's grants.

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// hostPlaces are the host's own directories no grant or mount may cover:
// the store (--store, RUNEHOST_STORE or the default) and the compilation
// cache, for a command that may not have opened either.
func hostPlaces(c *cli.Context) []fs.Place {
	dir := c.String("store")
	if dir == "" {
		dir = os.Getenv("RUNEHOST_STORE")
	}
	if dir == "" {
		dir, _ = store.DefaultDir()
	}
	cfg := acts.FromEnv()
	if c.IsSet("cache-dir") {
		cfg.CacheDir = c.String("cache-dir")
	}
	return cfg.Places(dir)
}

func progFlag() cli.Flag {
	return &cli.StringFlag{Name: "prog", Value: host.AnyProg, Usage: "the prog the grant is for (named after its file: hello.rune is hello); * for every prog"}
}

func grantCommand() *cli.Command {
	return &cli.Command{
		Name:      "grant",
		Usage:     "let a prog perform an act",
		ArgsUsage: "STATEMENT...",
		Description: "A statement is an act tag (test.record), allowing it on any target, or a\n" +
			"tag and a target (fs.read:./data) that the act's adapter checks after\n" +
			"resolving the concrete target. Acts are denied unless granted; grants are\n" +
			"read at each attempt, so a revoke denies the next act of a running prog.",
		Flags: []cli.Flag{storeFlag(), progFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitf(exitUsage, "grant: want at least one STATEMENT (usage: runehost grant [--prog NAME] fs.read:./data)")
			}
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			for _, st := range c.Args().Slice() {
				if err := b.Grant(c.Context, c.String("prog"), st); err != nil {
					return failed("grant", err, exitUsage)
				}
				fmt.Fprintf(c.App.ErrWriter, "granted: %s to %s\n", absStatement(st), c.String("prog"))
			}
			return nil
		},
	}
}

func revokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "take a grant back (the next act it would allow is denied)",
		ArgsUsage: "STATEMENT...",
		Flags:     []cli.Flag{storeFlag(), progFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitf(exitUsage, "revoke: want at least one STATEMENT")
			}
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			for _, st := range c.Args().Slice() {
				err := b.Revoke(c.Context, c.String("prog"), st)
				if api.CodeOf(err) == api.CodeNotFound {
					return exitf(exitUsage, "revoke: %s has no grant %q (runehost grants lists them)", c.String("prog"), st)
				}
				if err != nil {
					return failed("revoke", err, exitInternal)
				}
				fmt.Fprintf(c.App.ErrWriter, "revoked: %s from %s\n", st, c.String("prog"))
			}
			return nil
		},
	}
}

func grantsCommand() *cli.Command {
	return &cli.Command{
		Name:  "grants",
		Usage: "list grants",
		Flags: append([]cli.Flag{
			storeFlag(),
			&cli.StringFlag{Name: "prog", Usage: "only this prog's grants (* for those of every prog)"},
		}, jsonFlags(true)...),
		Action: func(c *cli.Context) error {
			form, err := formatOf(c)
			if err != nil {
				return err
			}
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			gs, err := b.Grants(c.Context, c.String("prog"))
			if err != nil {
				return failed("grants", err, exitInternal)
			}
			list := &rows{w: c.App.Writer, form: form}
			defer list.end()
			for _, g := range gs {
				if g.Damage != "" {
					if form != asText {
						list.add(map[string]any{"prog": g.Prog, "statement": g.Statement, "damage": g.Damage})
						continue
					}
					fmt.Fprintf(c.App.Writer, "%-20s %-40s damaged, allows nothing (grant it again, or revoke it): %s\n", g.Prog, g.Statement, g.Damage)
					continue
				}
				at := time.UnixMilli(g.Granted).UTC().Format(time.RFC3339)
				if form != asText {
					list.add(map[string]any{"prog": g.Prog, "statement": g.Statement, "tag": g.Tag, "target": g.Target, "granted": at})
					continue
				}
				fmt.Fprintf(c.App.Writer, "%-20s %-40s %s\n", g.Prog, g.Statement, at)
			}
			return nil
		},
	}
}
