// Package approval holds the act approval: a prog asks a person a question.
// The act records the question (in the run log, where a terminal, a Slack
// card or a web page shows it) and answers at once with the key the answer
// will come under; the prog awaits that key, with a timeout if it likes:
//
//	let req = act "approval" {question: "Deploy to production?"}
//	let ans = await {key: req.key, timeout: 3600000}
//
// A person answers with `runehost send INV KEY JSON` (or from Slack).
package approval

import (
	"context"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
)

// Tag is the act.
const Tag = "approval"

// Adapter is the approval act. It needs a grant (approval) like any act:
// asking people is an effect.
type Adapter struct{}

// Limits declares approval's limits: a question is short.
func (Adapter) Limits() host.Limits { return host.Limits{Args: 16 << 10, Reply: 1 << 10} }

// Key is the event tag an act's answer comes under.
func Key(op *host.Operation) string { return fmt.Sprintf("approval:%d", op.Ordinal) }

// Do checks the question and answers with the key.
func (Adapter) Do(_ context.Context, op *host.Operation) (any, error) {
	d, err := checkpoint.DecodeData(op.Args)
	if err != nil {
		return nil, err
	}
	m, _ := d.(*checkpoint.Map)
	var q any
	if m != nil {
		q, _ = m.Get("question")
	}
	if s, ok := q.(string); !ok || s == "" {
		return nil, &checkpoint.Error{Kind: "value", Msg: "approval wants {question: STRING}"}
	}
	out := &checkpoint.Map{}
	out.Set("key", Key(op))
	out.Set("send", fmt.Sprintf("runehost send %s %s JSON", op.Invocation, Key(op)))
	return out, nil
}

// ObservationKind: an approval is observed as one.
func (Adapter) ObservationKind() string { return "approval" }

// Lookup: asking again is harmless, so an attempt cut short is reopened.
func (Adapter) Lookup(context.Context, *host.Operation) (any, bool, error) { return nil, false, nil }

var (
	_ host.Reconciler = Adapter{}
	_ host.Observed   = Adapter{}
)
