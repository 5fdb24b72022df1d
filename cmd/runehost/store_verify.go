// store_verify.go holds `runehost store verify`: every file and record of
// a store checked; the exit status says whether it is sound.

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

func storeVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check every file and record of a store; exit 0 when it is sound, 1 when not",
		Description: "Checks the store's files against its seal (the MANIFEST as it was, every\n" +
			"table there and read in full, the newest synced write there), then reads\n" +
			"every record and decodes it by its kind. Each problem is printed with the\n" +
			"file or record it is in. A store whose files are damaged is not opened, and\n" +
			"its records are not read. --accept seals a damaged store as it now is, so\n" +
			"that it opens again with what it still holds: what was lost stays lost (copy\n" +
			"the directory first; docs/store.md says what else to do).",
		Flags: []cli.Flag{storeFlag(), &cli.BoolFlag{Name: "accept", Usage: "accept the damage found: seal the store as it is now"},
			&cli.BoolFlag{Name: "json", Usage: "as one JSON document: store, sound, records, problems, accepted"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitf(exitUsage, "store verify: takes no arguments")
			}
			dir, err := storeDir(c)
			if err != nil {
				return err
			}
			opts, err := storeOptions(dir)
			if err != nil {
				return err
			}
			onNATS := opts.nats != nil // records only: the files are the servers'
			if _, err := os.Stat(dir); err != nil && !onNATS {
				return exitf(exitUsage, "store verify: no store at %s", dir)
			}
			if err := refuseServed(c); err != nil {
				return err
			}
			w := c.App.Writer
			var found []error
			var problems []*store.RecordError
			if !onNATS {
				if problems, err = store.CheckFiles(dir); err != nil {
					return storeErr("store verify", err)
				}
			}
			for _, p := range problems {
				found = append(found, p)
			}
			records := 0
			if len(found) == 0 {
				s, err := opts.open()
				if errors.Is(err, store.ErrDamaged) {
					found = append(found, err)
				} else if err != nil {
					return storeErr("store verify", err)
				} else {
					var rerr error
					var bad []error
					bad, records, rerr = host.VerifyRecords(s)
					found = append(found, bad...)
					if n, last := s.LoggedErrors(); n > 0 && len(bad) == 0 {
						found = append(found, fmt.Errorf("%s: %w: Badger logged %d errors reading it (the last: %s)", dir, store.ErrDamaged, n, last))
					}
					if cerr := s.Close(); rerr == nil {
						rerr = cerr
					}
					if rerr != nil {
						return storeErr("store verify", rerr)
					}
				}
			}
			where := dir
			if onNATS {
				where = "NATS (" + strings.Join(opts.nats.URLs, ",") + ")"
			}
			if onNATS && c.Bool("accept") && len(found) > 0 {
				return exitf(exitUsage, "store verify --accept: a store on NATS has no seal to accept damage into")
			}
			accepted := false
			if c.Bool("accept") && len(found) > 0 {
				opts.AcceptDamage = true
				s, err := opts.open()
				if err != nil {
					return storeErr("store verify --accept", err)
				}
				if err := s.Close(); err != nil {
					return storeErr("store verify --accept", err)
				}
				accepted = true
			}
			if c.Bool("json") {
				said := make([]string, len(found))
				for i, p := range found {
					said[i] = p.Error()
				}
				writeJSON(w, map[string]any{"store": where, "sound": len(found) == 0, "records": records, "problems": said, "accepted": accepted})
			} else {
				for _, p := range found {
					fmt.Fprintf(w, "damaged: %v\n", p)
				}
				switch {
				case len(found) == 0 && onNATS:
					fmt.Fprintf(w, "store on %s is sound: %d records decoded\n", where, records)
				case len(found) == 0:
					fmt.Fprintf(w, "store %s is sound: every table read in full, %d records decoded\n", dir, records)
				case accepted:
					fmt.Fprintf(w, "store %s: %s accepted; sealed as it is now\n", dir, plural(len(found), "problem"))
				default:
					fmt.Fprintf(w, "store %s: %s (runehost store verify --accept seals it as it is; docs/store.md says what else to do)\n", dir, plural(len(found), "problem"))
				}
			}
			if len(found) > 0 && !accepted {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
}

// storeErr is a store command's failure: a store in use is bad usage, the
// rest the host's.
func storeErr(cmd string, err error) error {
	var le *store.LockedError
	var ee *store.ElsewhereError
	switch {
	case errors.As(err, &le):
		return exitf(exitUsage, "%s: %v", cmd, err)
	case errors.As(err, &ee):
		return exitf(exitUsage, "%s: %v: %s", cmd, err, elsewhereHint(ee))
	}
	return exitf(exitInternal, "%s: %v", cmd, err)
}

// openErr is a failure to open the store: one in use, or whose records
// are kept in another backend, is the user's to resolve (exit 2); the
// rest the host's.
func openErr(err error) error {
	var le *store.LockedError
	var ee *store.ElsewhereError
	switch {
	case errors.As(err, &le):
		return exitf(exitUsage, "%v", err)
	case errors.As(err, &ee):
		return exitf(exitUsage, "%v: %s", err, elsewhereHint(ee))
	}
	return exitf(exitInternal, "%v", err)
}

// elsewhereHint says how to reach records kept in another backend.
func elsewhereHint(e *store.ElsewhereError) string {
	switch {
	case e.Both:
		return fmt.Sprintf("if its records are on the node (it was served with --nats-embedded), move the Badger store's files (MANIFEST, KEYREGISTRY, DISCARD, SEAL, *.sst, *.vlog) out of %s; if they are in Badger, move %s out", e.Dir, filepath.Join(e.Dir, "nats"))
	case e.Badger:
		return "serve it without --nats or --nats-embedded, or give serve a --store directory of its own for its socket and token (runehost store export and store import move records between stores)"
	case e.Err != nil:
		return fmt.Sprintf("look at %s; remove it only if %s never held a JetStream store", filepath.Join(e.Dir, "BACKEND"), e.Dir)
	case e.Kept.Embedded:
		return fmt.Sprintf("serve it again with runehost serve --nats-embedded --store %s (with the --cluster flags it had, if any), and run commands beside it", e.Dir)
	}
	urls := strings.Join(e.Kept.URLs, ",")
	return fmt.Sprintf("reach it with RUNEHOST_NATS=%s (and RUNEHOST_NATS_STREAM=%s), or serve it with runehost serve --nats %s --store %s", urls, e.Kept.Stream, urls, e.Dir)
}

// plural counts: "1 problem", "2 problems".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
