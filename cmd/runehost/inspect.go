// inspect.go holds `runehost inspect`: an invocation's records.

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/api"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show an invocation: status, prog, allowance, checkpoint header, acts",
		ArgsUsage: "INVOCATION",
		Flags: []cli.Flag{storeFlag(), &cli.BoolFlag{Name: "json", Usage: "as one JSON object"},
			&cli.StringFlag{Name: "save-checkpoint", Usage: "also write the stored checkpoint to this file (for runehost migrate)"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "inspect: want one INVOCATION")
			}
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			in, err := b.Inspect(c.Context, c.Args().First())
			if err != nil {
				return failed("inspect", err, exitUsage)
			}
			if f := c.String("save-checkpoint"); f != "" {
				cp, err := b.Checkpoint(c.Context, in.Invocation)
				if err != nil {
					return failed("inspect", err, exitUsage)
				}
				if err := os.WriteFile(f, cp, 0o600); err != nil {
					return exitf(exitUsage, "inspect: %v", err)
				}
			}
			if c.Bool("json") {
				view := *in
				view.Text = nil
				j, _ := json.Marshal(view)
				fmt.Fprintln(c.App.Writer, string(j))
				return nil
			}
			printInspection(c, in)
			return nil
		},
	}
}

// printInspection writes an invocation for a person: its state, its acts,
// and the work pane of its run's objects, newest first.
func printInspection(c *cli.Context, in *api.Inspection) {
	w, t := c.App.Writer, in.Text
	if t == nil {
		t = &api.InspectionText{}
	}
	switch {
	case in.AdmittedRevision == nil:
		fmt.Fprintf(w, "%s  %s\n", in.Invocation, in.Status)
	case in.Prog == nil:
		fmt.Fprintf(w, "%s  %s  prog %s (admitted at revision %d)\n", in.Invocation, in.Status, t.Prog, *in.AdmittedRevision)
	default:
		fmt.Fprintf(w, "%s  %s  prog %s (admitted at revision %d, now %d)\n", in.Invocation, in.Status, *in.Prog, *in.AdmittedRevision, *in.ProgRevision)
	}
	for _, d := range t.Damage {
		fmt.Fprintf(w, "  damaged: %s\n", d)
	}
	if in.Parent != nil {
		fmt.Fprintf(w, "  parent %q, depth %d, %d children unsettled\n", *in.Parent, *in.Depth, *in.Children)
	}
	if in.Paused != "" {
		fmt.Fprintf(w, "  paused: %s\n", in.Paused)
	}
	if in.Error != nil {
		at := ""
		if in.Error.Pos != "" {
			at = " at " + in.Error.Pos
		}
		fmt.Fprintf(w, "  error %s: %s%s\n", in.Error.Kind, in.Error.Msg, at)
		for _, t := range in.Error.Trace {
			fmt.Fprintf(w, "    at %s\n", t)
		}
	}
	if len(in.Result) > 0 {
		fmt.Fprintf(w, "  result %s\n", t.Result)
	}
	al := in.Allowance
	fmt.Fprintf(w, "  allowance: %d limit, %d charged, %d held, %d lent\n", al.Limit, al.Charged, al.Held, al.Lent)
	if tk := in.Tokens; tk != nil {
		fmt.Fprintf(w, "  model tokens: %d limit, %d charged, %d held, %d lent\n", tk.Limit, tk.Charged, tk.Held, tk.Lent)
	}
	if h := in.Checkpoint; h != nil {
		fmt.Fprintf(w, "  checkpoint: format %d, semantics %d, program %.32s, %d steps, %s\n", h.Format, h.Semantics, h.Program, h.Used, h.Status)
	}
	if len(t.Acts) > 0 {
		fmt.Fprintln(w, "\nActs")
		for _, line := range t.Acts {
			fmt.Fprintln(w, line)
		}
	}
	if t.WorkDamage != "" {
		fmt.Fprintf(w, "  damaged: %s (the run log is shown no further)\n", t.WorkDamage)
	}
	for _, sec := range t.Work {
		fmt.Fprintf(w, "\n%s\n", sec.Title)
		for _, l := range sec.Lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
}
