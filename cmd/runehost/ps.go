// ps.go holds `runehost ps`: list the stored invocations.

package main

import (
	"bufio"
	"cmp"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/host"
)

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list invocations",
		Description: "Lists invocations in id order (r2 before r10) with their status: a persisted one (running,\n" +
			"waiting, joining, completed, failed, cancelled, conflict) or a projection:\n" +
			"queued (admitted, no slice run yet) or unknown (waiting on an act whose\n" +
			"outcome is unknown: settle it with runehost resolve), or damaged (a record\n" +
			"of it cannot be read: the reason is shown; see runehost inspect and\n" +
			"runehost store verify). A paused invocation (one the host cannot run; see\n" +
			"runehost inspect) is marked so.",
		Flags: append([]cli.Flag{
			storeFlag(),
			&cli.StringSliceFlag{Name: "status", Usage: "only these statuses, persisted or projected"},
		}, jsonFlags(true)...),
		Action: func(c *cli.Context) error {
			form, err := formatOf(c)
			if err != nil {
				return err
			}
			want := c.StringSlice("status")
			for _, name := range want {
				if _, ok := parseStatus(name); !ok && name != host.Queued && name != host.Unknown && name != host.Damaged {
					return exitf(exitUsage, "ps: unknown status %q (want running, waiting, joining, completed, failed, cancelled, conflict, queued, unknown or damaged)", name)
				}
			}
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			// Buffered: a line a write was a sixth of ps over 300,000.
			// Flushed after each page of rows, so the first shows at once.
			out := bufio.NewWriterSize(c.App.Writer, 64<<10)
			defer out.Flush()
			n, list := 0, &rows{w: out, form: form}
			err = b.Each(c.Context, want, func(inv api.Invocation) error {
				if n++; n%1024 == 0 {
					out.Flush()
				}
				st := inv.Status
				if form != asText && inv.Damage != "" {
					list.add(map[string]any{"invocation": inv.ID, "status": st, "damage": inv.Damage})
					return nil
				}
				if inv.Damage != "" {
					prog := inv.Prog
					if prog == "" {
						prog = "?"
					}
					fmt.Fprintf(out, "%-10s %-18s %-20s %s\n", inv.ID, st, prog, inv.Damage)
					return nil
				}
				if form != asText {
					row := map[string]any{"invocation": inv.ID, "prog": inv.Prog, "revision": inv.Revision, "status": st}
					if inv.Parent != "" {
						row["parent"] = inv.Parent
					}
					if inv.Paused != "" {
						row["paused"] = inv.Paused
					}
					list.add(row)
					return nil
				}
				if inv.Paused != "" {
					st += " (paused)"
				}
				fmt.Fprintf(out, "%-10s %-18s %-20s rev %d\n", inv.ID, st, inv.Prog, inv.Revision)
				return nil
			})
			if err != nil {
				return failed("ps", err, exitInternal)
			}
			list.end()
			return nil
		},
	}
}

// naturalCompare orders strings with their runs of digits as numbers:
// r2 < r10 < r10.1 < r10.2 < r11.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

func parseStatus(name string) (host.Status, bool) {
	for st := host.Running; st <= host.Conflict; st++ {
		if st.String() == name {
			return st, true
		}
	}
	return 0, false
}
