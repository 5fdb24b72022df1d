// inspect.go holds `runehost inspect`: an invocation's records.

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// act is an act as inspect shows it.
type act struct {
	Ordinal uint64  `json:"ordinal"`
	Tag     string  `json:"tag"`
	Args    any     `json:"args"`
	Phase   string  `json:"phase"`
	Grant   *string `json:"grant,omitempty"` // the statement that allowed it; "" when denied
	Outcome string  `json:"outcome,omitempty"`
}

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
			e, done, err := openEngine(c, false)
			if err != nil {
				return err
			}
			defer done()
			in, err := e.Inspect(c.Args().First())
			if err != nil {
				return exitf(exitUsage, "inspect: %v", err)
			}
			if f := c.String("save-checkpoint"); f != "" {
				if len(in.Checkpoint) == 0 {
					return exitf(exitUsage, "inspect: %s has no readable checkpoint to save", in.Invocation.ID)
				}
				if err := os.WriteFile(f, in.Checkpoint, 0o600); err != nil {
					return exitf(exitUsage, "inspect: %v", err)
				}
			}
			var acts []act
			for _, op := range in.Operations {
				a := act{Ordinal: op.Ordinal, Tag: op.Tag, Args: json.RawMessage(dataJSON(op.Args)), Phase: op.Phase.String()}
				if op.Attempt != nil {
					a.Grant = &op.Attempt.Grant
				}
				if op.Outcome != nil && op.Outcome.Ref != "" {
					a.Outcome = fmt.Sprintf("reply of %d bytes, stored as blob/%.16s", op.Outcome.Size, op.Outcome.Ref)
				} else if op.Outcome != nil {
					if r, err := checkpoint.DecodeReply(op.Outcome.Reply); err == nil && r.Err != nil {
						a.Outcome = r.Err.Kind + ": " + r.Err.Msg
					} else if err == nil {
						b, _ := checkpoint.EncodeData(r.Value)
						a.Outcome = dataJSON(b)
					}
				}
				acts = append(acts, a)
			}
			view := map[string]any{
				"invocation": in.Invocation.ID,
				"allowance":  map[string]uint64{"limit": in.Allowance.Limit, "charged": in.Allowance.Charged, "held": in.Allowance.Held, "lent": in.Allowance.Lent},
				"acts":       acts,
			}
			if in.Invocation.Damage == "" {
				view["status"], view["admitted_revision"] = in.Invocation.Status.String(), in.Invocation.Revision
			} else {
				view["status"] = host.Damaged
			}
			if in.Prog != nil {
				view["prog"], view["prog_revision"] = in.Prog.Name, in.Prog.Revision
			}
			if h := in.Header; h != nil {
				view["checkpoint"] = map[string]any{"format": h.Format, "semantics": h.Semantics, "program": fmt.Sprintf("%x", h.Program), "used": h.Used, "status": h.Status.String()}
			}
			if len(in.Damage) > 0 {
				view["damage"] = in.Damage
			}
			if i := in.Invocation; i.Parent != "" || i.Live > 0 {
				view["parent"], view["depth"], view["children_unsettled"] = i.Parent, i.Depth, i.Live
			}
			if in.Invocation.Paused != "" {
				view["paused"] = in.Invocation.Paused
			}
			if in.Invocation.Err != nil {
				view["error"] = map[string]string{"kind": in.Invocation.Err.Kind, "msg": in.Invocation.Err.Msg}
			}
			if len(in.Invocation.Result) > 0 {
				view["result"] = json.RawMessage(dataJSON(in.Invocation.Result))
			}
			if c.Bool("json") {
				b, _ := json.Marshal(view)
				fmt.Fprintln(c.App.Writer, string(b))
				return nil
			}
			return printInspection(c, e, in, acts)
		},
	}
}

// printInspection writes an invocation for a person: its state, its acts,
// and the work pane of its run's objects, newest first.
func printInspection(c *cli.Context, e *host.Engine, in *host.Inspection, acts []act) error {
	w := c.App.Writer
	i, h, al := in.Invocation, in.Header, in.Allowance
	switch {
	case i.Damage != "":
		fmt.Fprintf(w, "%s  %s\n", i.ID, host.Damaged)
	case in.Prog == nil:
		fmt.Fprintf(w, "%s  %s  prog %s (admitted at revision %d)\n", i.ID, i.Status, i.Prog, i.Revision)
	default:
		fmt.Fprintf(w, "%s  %s  prog %s (admitted at revision %d, now %d)\n", i.ID, i.Status, in.Prog.Name, i.Revision, in.Prog.Revision)
	}
	for _, d := range in.Damage {
		fmt.Fprintf(w, "  damaged: %s\n", e.Redactor.String(d))
	}
	if i.Parent != "" || i.Live > 0 {
		fmt.Fprintf(w, "  parent %q, depth %d, %d children unsettled\n", i.Parent, i.Depth, i.Live)
	}
	if i.Paused != "" {
		fmt.Fprintf(w, "  paused: %s\n", i.Paused)
	}
	if i.Err != nil {
		fmt.Fprintf(w, "  error %s: %s\n", i.Err.Kind, i.Err.Msg)
	}
	if len(i.Result) > 0 {
		fmt.Fprintf(w, "  result %s\n", e.Redactor.String(dataJSON(i.Result)))
	}
	fmt.Fprintf(w, "  allowance: %d limit, %d charged, %d held, %d lent\n", al.Limit, al.Charged, al.Held, al.Lent)
	if h != nil {
		fmt.Fprintf(w, "  checkpoint: format %d, semantics %d, program %.16x, %d steps, %s\n", h.Format, h.Semantics, h.Program, h.Used, h.Status)
	}
	if len(acts) > 0 {
		fmt.Fprintln(w, "\nActs")
		for _, a := range acts {
			grant := ""
			if a.Grant != nil {
				grant = " grant " + *a.Grant
				if *a.Grant == "" {
					grant = " not granted"
				}
			}
			line := fmt.Sprintf("  #%d %s %s %s%s", a.Ordinal, a.Tag, a.Phase, string(a.Args.(json.RawMessage)), grant)
			if a.Outcome != "" {
				line += " -> " + a.Outcome
			}
			fmt.Fprintln(w, events.Cap(e.Redactor.String(line), 300))
		}
	}
	if i.Damage != "" {
		return nil // no run log without the invocation's record
	}
	evs, err := e.Events(i.ID, 1, 0)
	if errors.Is(err, store.ErrCorrupt) {
		fmt.Fprintf(w, "  damaged: %s (the run log is shown no further)\n", e.Redactor.String(err.Error()))
	} else if err != nil {
		return exitf(exitInternal, "inspect: %v", err)
	}
	for _, sec := range events.WorkPane(evs) {
		if len(sec.Lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", sec.Title)
		for _, l := range sec.Lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}
