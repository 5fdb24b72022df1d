// check.go reads the store after every command, killed or not, and checks
// it against what the harness has seen and been told before.

package main

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/crashtest"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

// view is what a check read: the store's invocations and grants, and the
// journal.
type view struct {
	invs    map[string]*invView
	ids     []string // in id order
	grants  map[string]bool
	journal []crashtest.Entry
}

type invView struct {
	*host.Inspection
	awaits string // the key of the await it is parked at, if any
}

// seen is what the harness knows of an invocation from earlier checks: all
// of it was on disk then, so none of it may go.
type seen struct {
	status   host.Status
	root     string
	acts     map[uint64]seenAct
	doneTree bool // its root had ended when last seen: gc may delete it
}

type seenAct struct {
	tag      string
	phase    host.Phase
	outcome  string
	reopened uint64 // times a reconciliation found it never happened
}

// rank orders the phases an act moves through.
func rank(p host.Phase) int {
	switch p {
	case host.Proposed:
		return 0
	case host.Attempted, host.Unresolved:
		return 1
	case host.Recorded:
		return 2
	}
	return 3
}

func terminal(s host.Status) bool {
	return s == host.Completed || s == host.Failed || s == host.Cancelled || s == host.Conflict
}

func rootOf(id string) string { r, _, _ := strings.Cut(id, "."); return r }

// status returns an invocation's status; 0 when it is not in the store.
func (v *view) status(id string) host.Status {
	if iv := v.invs[id]; iv != nil {
		return iv.Invocation.Status
	}
	return 0
}

// read opens the store as a host process would (a new generation, which
// turns earlier processes' open attempts unresolved) and reads it.
func (h *harness) read() (*view, error) {
	s, err := store.Open(store.Options{Dir: h.r.store})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
	if err != nil {
		return nil, err
	}
	v := &view{invs: map[string]*invView{}, grants: map[string]bool{}}
	invs, err := e.List()
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	// The host reports a record it cannot read as damage beside the rest
	// (docs/store.md, corrupt records), not as an error: for the harness
	// either is a store that does not read.
	for _, i := range invs {
		if i.Damage != "" {
			return nil, fmt.Errorf("list: invocation %s is damaged: %s", i.ID, i.Damage)
		}
		in, err := e.Inspect(i.ID)
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", i.ID, err)
		}
		if len(in.Damage) > 0 {
			return nil, fmt.Errorf("inspect %s: damaged: %s", i.ID, strings.Join(in.Damage, "; "))
		}
		if in.Header == nil {
			return nil, fmt.Errorf("inspect %s: no checkpoint", i.ID)
		}
		iv := &invView{Inspection: in}
		if p := in.Header.Pending; p != nil && p.Kind == checkpoint.PendingAwait && i.Status == host.Waiting {
			if d, err := checkpoint.DecodeData(p.Args); err == nil {
				if m, ok := d.(*checkpoint.Map); ok {
					k, _ := m.Get("key")
					iv.awaits, _ = k.(string)
				}
			}
		}
		v.invs[i.ID] = iv
		v.ids = append(v.ids, i.ID)
	}
	gs, err := e.Ward().List("")
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	for _, g := range gs {
		if g.Damage != "" {
			return nil, fmt.Errorf("grants: %s %s is damaged: %s", g.Subject, g.Statement, g.Damage)
		}
		v.grants[g.Subject+" "+g.Statement] = true
	}
	if v.journal, err = h.r.world.Entries(); err != nil {
		return nil, err
	}
	return v, nil
}

// check reads the store after a command and checks every invariant; it
// returns nil when the store cannot be read (a violation).
func (h *harness) check(what string, res result) *view {
	v, err := h.read()
	if err != nil {
		h.violate("after %s (%s): the store does not read: %v", what, res.how(), err)
		return nil
	}
	r := h.r
	bad := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !r.reported[msg] { // a broken store breaks the same rule at every check
			r.reported[msg] = true
			h.violate("after %s (%s): %s", what, res.how(), msg)
		}
	}

	// Roots: one per prog.
	roots := map[string]string{}
	for _, id := range v.ids {
		in := v.invs[id].Invocation
		if in.Parent != "" {
			continue
		}
		if other, ok := roots[in.Prog]; ok {
			bad("two roots of prog %s: %s and %s", in.Prog, other, id)
		}
		roots[in.Prog] = id
	}

	// What was seen before is still there (gc may delete ended trees).
	for id, s := range r.seen {
		if v.invs[id] != nil {
			continue
		}
		switch {
		case r.gcStarted && s.doneTree:
			r.collected[id] = true
			delete(r.seen, id)
		default:
			bad("invocation %s (%s when last seen) is gone", id, s.status)
			delete(r.seen, id)
		}
	}

	for _, id := range v.ids {
		iv := v.invs[id]
		in, al := iv.Invocation, iv.Allowance
		s := r.seen[id]
		if s == nil {
			s = &seen{status: in.Status, root: rootOf(id), acts: map[uint64]seenAct{}}
			r.seen[id] = s
		}
		if terminal(s.status) && in.Status != s.status {
			bad("%s was %s and is now %s", id, s.status, in.Status)
		}
		s.status = in.Status
		if in.Paused != "" {
			bad("%s is paused: %s", id, in.Paused)
		}
		if in.Status == host.Failed || in.Status == host.Conflict {
			bad("%s ended %s: %v", id, in.Status, in.Err)
		}
		// Nothing waits for an act whose outcome is settled (recorded, or
		// reopened to be attempted again): only runnable invocations get
		// turns, and nothing but its tree's turns drives a child.
		if p := pendingAct(iv); in.Status == host.Waiting && p != nil {
			op := findOp(iv.Operations, p.Seq)
			if op != nil && (op.Phase == host.Proposed || op.Phase == host.Recorded || op.Phase == host.Consumed && al.Lent == 0) {
				bad("%s waits at act #%d (%s), which is %s: it will never be given a turn", id, p.Seq, p.Tag, op.Phase)
			}
		}
		if al.Charged+al.Held+al.Lent > al.Limit {
			bad("%s: charged %d + held %d + lent %d > limit %d", id, al.Charged, al.Held, al.Lent, al.Limit)
		}
		// Steps are leased and charged lazily: whatever a killed process
		// ran is charged, or still held for a recovery to charge.
		if iv.Header != nil && al.Charged+al.Held < iv.Header.Used {
			bad("%s: its checkpoint used %d steps, and only %d are charged and %d held", id, iv.Header.Used, al.Charged, al.Held)
		}
		h.checkTokens(v, id, iv, bad)
		for _, op := range iv.Operations {
			now := seenAct{tag: op.Tag, phase: op.Phase, outcome: outcomeOf(op), reopened: op.Reopened}
			before, ok := s.acts[op.Ordinal]
			name := fmt.Sprintf("%s#%d", id, op.Ordinal)
			if op.Phase == host.Attempted {
				bad("act %s was attempted by a dead process and is not reported unknown", name)
			}
			// The one way back: a reconciling adapter (test.lookup, or
			// spawn) found the attempt never happened, and the ledger
			// reopened it, counting it.
			reopened := before.phase == host.Unresolved && op.Phase == host.Proposed && op.Reopened > before.reopened
			if ok && rank(now.phase) < rank(before.phase) && !reopened {
				bad("act %s was %s and is now %s", name, before.phase, now.phase)
			}
			if ok && before.outcome != "" && now.outcome != before.outcome {
				bad("act %s had the outcome %s and now has %s", name, before.outcome, now.outcome)
			}
			s.acts[op.Ordinal] = now
			if op.Outcome != nil && op.Outcome.Source == "reconciled" && !r.reconciled[name] {
				r.reconciled[name] = true
				h.reconc++
			}
			if op.Reopened > 0 && !r.reopened[name] {
				r.reopened[name] = true
				h.reopened++
			}
		}
		delete(s.acts, 0)
		for ord := range s.acts {
			if !hasOp(iv.Operations, ord) {
				bad("act %s#%d (%s when last seen) is gone", id, ord, s.acts[ord].phase)
				delete(s.acts, ord)
			}
		}
	}
	for id, s := range r.seen {
		root := v.invs[rootOf(id)]
		s.doneTree = root != nil && terminal(root.Invocation.Status)
	}

	// The world: every effect happened once, under a durable attempt.
	count := map[string]int{}
	for _, e := range v.journal {
		count[e.Op]++
		if count[e.Op] == 2 {
			bad("act %s was dispatched twice", e.Op)
		}
	}
	for op := range count {
		inv, ordS, _ := strings.Cut(op, "#")
		ord, _ := strconv.ParseUint(ordS, 10, 64)
		iv := v.invs[inv]
		if iv == nil {
			if !r.collected[inv] {
				bad("act %s happened and its invocation is not in the store", op)
			}
			continue
		}
		if o := findOp(iv.Operations, ord); o == nil || o.Phase == host.Proposed {
			bad("act %s happened and the store has no attempt of it", op)
		}
	}

	// Acknowledged grants and revocations hold.
	for g := range r.granted {
		if !v.grants[g] {
			bad("grant %q was acknowledged and is gone", g)
		}
	}
	for g := range r.revoked {
		if v.grants[g] {
			bad("grant %q was revoked (acknowledged) and is back", g)
		}
	}

	// Acknowledged events were delivered: nothing waits for one again.
	if iv := v.invs[r.main]; iv != nil && r.sent[iv.awaits] {
		bad("%s waits for the event %q, whose send was acknowledged", r.main, iv.awaits)
	}
	// An acknowledged cancel holds for the whole tree.
	if r.cancelled != "" {
		for _, id := range v.ids {
			if rootOf(id) == r.cancelled && v.invs[id].Invocation.Status != host.Cancelled {
				bad("%s is %s after its tree was cancelled (acknowledged)", id, v.invs[id].Invocation.Status)
			}
		}
	}
	// gc never deletes a live invocation.
	if r.keep != "" && v.invs[r.keep] == nil {
		bad("the waiting invocation %s is gone", r.keep)
	}
	return v
}

// pendingAct returns the act an invocation's checkpoint is suspended at, if any.
func pendingAct(iv *invView) *checkpoint.Pending {
	if iv.Header == nil || iv.Header.Pending == nil || iv.Header.Pending.Kind != checkpoint.PendingAct {
		return nil
	}
	return iv.Header.Pending
}

func outcomeOf(op *host.Operation) string {
	if op.Outcome == nil {
		return ""
	}
	if op.Outcome.Ref != "" {
		return "blob/" + op.Outcome.Ref
	}
	return fmt.Sprintf("%x", op.Outcome.Reply)
}

func hasOp(ops []*host.Operation, ord uint64) bool { return findOp(ops, ord) != nil }

func findOp(ops []*host.Operation, ord uint64) *host.Operation {
	for _, op := range ops {
		if op.Ordinal == ord {
			return op
		}
	}
	return nil
}

// unresolved lists the acts of the tree of root whose outcome is unknown.
func (v *view) unresolved(root string) []*host.Operation {
	var out []*host.Operation
	for _, id := range v.ids {
		if rootOf(id) != root {
			continue
		}
		for _, op := range v.invs[id].Operations {
			if op.Phase == host.Unresolved {
				out = append(out, op)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Invocation < out[j].Invocation })
	return out
}

// result returns a completed invocation's result as JSON.
func (v *view) result(id string) string {
	iv := v.invs[id]
	if iv == nil || len(iv.Invocation.Result) == 0 {
		return ""
	}
	d, err := checkpoint.DecodeData(iv.Invocation.Result)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%v", d)
	return b.String()
}

// root returns the root invocation of prog.
func (v *view) root(prog string) string {
	for _, id := range v.ids {
		if in := v.invs[id].Invocation; in.Parent == "" && in.Prog == prog {
			return id
		}
	}
	return ""
}

// checkTokens checks an invocation's model tokens: charged + held + lent <=
// limit; what is held is the reservation of its attempt left open (held
// with the attempt, released with the outcome, in the same transactions),
// or less once it has ended (a cancel charges it); what it lent is the
// limits of its children that have not ended; and what it charged covers
// what its test.model acts spent, and in full each reservation a crash cut
// short (reopened: it may have been spent).
func (h *harness) checkTokens(v *view, id string, iv *invView, bad func(string, ...any)) {
	tk := iv.Tokens
	if tk.Charged+tk.Held+tk.Lent > tk.Limit {
		bad("%s: model tokens charged %d + held %d + lent %d > limit %d", id, tk.Charged, tk.Held, tk.Lent, tk.Limit)
	}
	var open, spent uint64
	for _, op := range iv.Operations {
		if (op.Phase == host.Attempted || op.Phase == host.Unresolved) && op.Attempt != nil {
			open += op.Attempt.Tokens
		}
		if op.Tag != crashtest.ModelTag {
			continue
		}
		spent += op.Reopened * crashtest.ModelReserve
		if op.Outcome != nil && len(op.Outcome.Reply) > 0 {
			if rp, err := checkpoint.DecodeReply(op.Outcome.Reply); err == nil && rp.Err == nil {
				spent += uint64(argN(op)) + 1
			}
		}
	}
	if tk.Charged+tk.Held < spent {
		bad("%s: %d model tokens charged and %d held; its model acts spent %d (lost reservations included)", id, tk.Charged, tk.Held, spent)
	}
	if ended := terminal(iv.Invocation.Status); tk.Held != open && !(ended && tk.Held < open) {
		bad("%s: %d model tokens held, and its open attempts reserved %d", id, tk.Held, open)
	}
	var lent uint64
	for _, kid := range v.ids {
		if k := v.invs[kid]; k.Invocation.Parent == id && !terminal(k.Invocation.Status) {
			lent += k.Tokens.Limit
		}
	}
	if tk.Lent != lent {
		bad("%s: %d model tokens lent, and its unsettled children have %d", id, tk.Lent, lent)
	}
}
