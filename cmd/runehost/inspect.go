// inspect.go holds `runehost inspect`: an invocation's records.

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/checkpoint"
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
				if err := os.WriteFile(f, in.Checkpoint, 0o600); err != nil {
					return exitf(exitUsage, "inspect: %v", err)
				}
			}
			type act struct {
				Ordinal uint64  `json:"ordinal"`
				Tag     string  `json:"tag"`
				Args    any     `json:"args"`
				Phase   string  `json:"phase"`
				Grant   *string `json:"grant,omitempty"` // the statement that allowed it; "" when denied
				Outcome string  `json:"outcome,omitempty"`
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
			h := in.Header
			view := map[string]any{
				"invocation": in.Invocation.ID, "status": in.Invocation.Status.String(),
				"prog": in.Prog.Name, "admitted_revision": in.Invocation.Revision, "prog_revision": in.Prog.Revision,
				"allowance":  map[string]uint64{"limit": in.Allowance.Limit, "charged": in.Allowance.Charged, "held": in.Allowance.Held, "lent": in.Allowance.Lent},
				"checkpoint": map[string]any{"format": h.Format, "semantics": h.Semantics, "program": fmt.Sprintf("%x", h.Program), "used": h.Used, "status": h.Status.String()},
				"acts":       acts,
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
			b, _ := json.MarshalIndent(view, "", "  ")
			fmt.Fprintln(c.App.Writer, string(b))
			return nil
		},
	}
}
