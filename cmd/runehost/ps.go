// ps.go holds `runehost ps`: list the stored invocations.

package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/host"
)

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list invocations",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.StringSliceFlag{Name: "status", Usage: "only these statuses (running, waiting, joining, completed, failed, cancelled, conflict)"},
			jsonOutFlag(),
		},
		Action: func(c *cli.Context) error {
			var statuses []host.Status
			for _, name := range c.StringSlice("status") {
				st, ok := parseStatus(name)
				if !ok {
					return exitf(exitUsage, "ps: unknown status %q", name)
				}
				statuses = append(statuses, st)
			}
			e, done, err := openEngine(c, false)
			if err != nil {
				return err
			}
			defer done()
			invs, err := e.List(statuses...)
			if err != nil {
				return exitf(exitInternal, "ps: %v", err)
			}
			for _, inv := range invs {
				if c.Bool("json") {
					b, _ := json.Marshal(map[string]any{"invocation": inv.ID, "prog": inv.Prog, "revision": inv.Revision, "status": inv.Status.String()})
					fmt.Fprintln(c.App.Writer, string(b))
					continue
				}
				fmt.Fprintf(c.App.Writer, "%-8s %-10s %-20s rev %d\n", inv.ID, inv.Status, inv.Prog, inv.Revision)
			}
			return nil
		},
	}
}

func parseStatus(name string) (host.Status, bool) {
	for st := host.Running; st <= host.Conflict; st++ {
		if st.String() == name {
			return st, true
		}
	}
	return 0, false
}
