// inspect.go holds Service.Inspect and Service.Checkpoint: an invocation's
// records, as `runehost inspect` shows them, and its stored checkpoint.

package server

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// actLineCap bounds an act's line in the text form.
const actLineCap = 300

// redactor is the engine's redactor, or the known formats' without one.
func (s *Service) redactor() *redact.Redactor {
	if s.E.Redactor != nil {
		return s.E.Redactor
	}
	return redact.Default
}

// Inspect gathers an invocation's records. Only an invocation that does
// not exist is an error; a record that cannot be read is listed in Damage.
func (s *Service) Inspect(inv string) (*api.Inspection, error) {
	in, err := s.E.Inspect(inv)
	if err != nil {
		return nil, engineError(err)
	}
	r := s.redactor()
	i, al, tk := in.Invocation, in.Allowance, in.Tokens
	out := &api.Inspection{
		Invocation: i.ID,
		Allowance:  api.Allowance{Limit: al.Limit, Charged: al.Charged, Held: al.Held, Lent: al.Lent},
		Tokens:     &api.Allowance{Limit: tk.Limit, Charged: tk.Charged, Held: tk.Held, Lent: tk.Lent},
		Damage:     in.Damage,
		Paused:     i.Paused,
		Text:       &api.InspectionText{Prog: i.Prog},
	}
	for _, op := range in.Operations {
		a := api.Act{Ordinal: op.Ordinal, Tag: op.Tag, Args: json.RawMessage(jsonText(op.Args)), Phase: op.Phase.String()}
		if op.Attempt != nil {
			g := op.Attempt.Grant
			a.Grant = &g
		}
		if op.Outcome != nil && op.Outcome.Ref != "" {
			a.Outcome = fmt.Sprintf("reply of %d bytes, stored as blob/%.16s", op.Outcome.Size, op.Outcome.Ref)
		} else if op.Outcome != nil {
			if rep, err := checkpoint.DecodeReply(op.Outcome.Reply); err == nil && rep.Err != nil {
				a.Outcome = rep.Err.Kind + ": " + rep.Err.Msg
			} else if err == nil {
				b, _ := checkpoint.EncodeData(rep.Value)
				a.Outcome = jsonText(b)
			}
		}
		out.Acts = append(out.Acts, a)
		out.Text.Acts = append(out.Text.Acts, events.Cap(r.String(actLine(a)), actLineCap))
	}
	if i.Damage == "" {
		rev := i.Revision
		out.Status, out.AdmittedRevision = i.Status.String(), &rev
	} else {
		out.Status = host.Damaged
	}
	if in.Prog != nil {
		name, rev := in.Prog.Name, in.Prog.Revision
		out.Prog, out.ProgRevision = &name, &rev
	}
	if h := in.Header; h != nil {
		out.Checkpoint = &api.CheckpointInfo{Format: h.Format, Semantics: h.Semantics, Program: fmt.Sprintf("%x", h.Program), Used: h.Used, Status: h.Status.String()}
	}
	for _, d := range in.Damage {
		out.Text.Damage = append(out.Text.Damage, r.String(d))
	}
	if i.Parent != "" || i.Live > 0 {
		parent, depth, live := i.Parent, i.Depth, i.Live
		out.Parent, out.Depth, out.Children = &parent, &depth, &live
	}
	if i.Err != nil {
		out.Error = &api.InspectionError{Kind: i.Err.Kind, Msg: r.String(i.Err.Msg), Pos: i.Err.Pos, Trace: i.Err.Trace}
	}
	if len(i.Result) > 0 {
		j := jsonText(i.Result)
		out.Result, out.Text.Result = json.RawMessage(j), r.String(j)
	}
	if i.Damage != "" {
		return out, nil // no run log without the invocation's record
	}
	evs, err := s.E.Events(i.ID, 1, 0)
	if errors.Is(err, store.ErrCorrupt) {
		out.Text.WorkDamage = r.String(err.Error())
	} else if err != nil {
		return nil, engineError(err)
	}
	for _, sec := range events.WorkPane(evs) {
		if len(sec.Lines) > 0 {
			out.Text.Work = append(out.Text.Work, api.Section{Title: sec.Title, Lines: sec.Lines})
		}
	}
	return out, nil
}

// actLine is an act as the text form lists it.
func actLine(a api.Act) string {
	grant := ""
	if a.Grant != nil {
		grant = " grant " + *a.Grant
		if *a.Grant == "" {
			grant = " not granted"
		}
	}
	line := fmt.Sprintf("  #%d %s %s %s%s", a.Ordinal, a.Tag, a.Phase, string(a.Args), grant)
	if a.Outcome != "" {
		line += " -> " + a.Outcome
	}
	return line
}

// jsonText is a data value as JSON text, or why it cannot be.
func jsonText(b []byte) string {
	j, err := dataJSON(b)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(j)
}

// Checkpoint is an invocation's stored checkpoint, as stored (for
// `runehost migrate` to take a fixed copy of).
func (s *Service) Checkpoint(inv string) ([]byte, error) {
	in, err := s.E.Inspect(inv)
	if err != nil {
		return nil, engineError(err)
	}
	if len(in.Checkpoint) == 0 {
		return nil, api.Errorf(api.CodeNotFound, "%s has no readable checkpoint to save", in.Invocation.ID)
	}
	return in.Checkpoint, nil
}
