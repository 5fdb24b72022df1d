// children.go holds child invocations: `act "spawn"` admits a child with
// steps lent from its parent's allowance; a child that ends returns what it
// did not use, and its report is delivered to the parent as an event named
// after the child; a parent cannot complete while a child is unsettled.

package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// Bounds of children. A spawn past one of them is refused with an error of
// kind "limit" that the prog can catch.
const (
	MaxDepth    = 4  // generations below a root
	MaxChildren = 16 // unsettled children of one invocation
	MaxTree     = 64 // unsettled descendants of one root
)

// SpawnTag is the act that spawns a child. Its arguments are a map:
// "steps" (the allowance lent, required), "tokens" (the model tokens lent;
// none when absent: the child makes no model calls), "input" (data) and
// "prog" (the name of an admitted prog; the parent's own source when
// absent). Its reply
// is {id: "r3.2"}; the child's report arrives as an event tagged with that id:
// {id, status, result} or {id, status, error: {kind, msg}}.
const SpawnTag = "spawn"

func recoverHeld(al *Allowance, found bool) error {
	if !found {
		return ErrNoAllowance
	}
	al.Charged += al.Held
	al.Held = 0
	return nil
}

// settleChild, within tx, returns an ended child's unused steps to its
// parent (what it used, or lost, is charged to the parent), drops it from
// the counts, tells the parent, and completes a parent that was only waiting
// for it.
func (iv *Invocations) settleChild(tx *store.Tx, child *Invocation) error {
	parent, err := getInv(tx, child.Parent)
	if err != nil {
		return err
	}
	var cal Allowance
	if found, err := tx.Get(allowanceKey(child.ID), &cal); err != nil || !found {
		if err == nil {
			err = fmt.Errorf("settling child %s: no allowance: %w", child.ID, store.ErrCorrupt)
		}
		return err
	}
	_, err = changeAllowance(tx, parent.ID, func(al *Allowance, found bool) error {
		if !found || al.Lent < cal.Limit {
			return fmt.Errorf("settling child %s: its parent lent %d, not %d: %w", child.ID, al.Lent, cal.Limit, store.ErrCorrupt)
		}
		al.Lent -= cal.Limit
		al.Charged += cal.Charged + cal.Held
		return nil
	})
	if err != nil {
		return err
	}
	// Its model tokens return the same way: what it held for an attempt
	// left open is charged, as it may have been spent.
	var ctk Allowance
	if found, err := tx.Get(tokenKey(child.ID), &ctk); err != nil {
		return err
	} else if found {
		_, err = changeTokens(tx, parent.ID, func(al *Allowance) error {
			if al.Lent < ctk.Limit {
				return fmt.Errorf("settling child %s: its parent lent %d tokens, not %d: %w", child.ID, al.Lent, ctk.Limit, store.ErrCorrupt)
			}
			al.Lent -= ctk.Limit
			al.Charged += ctk.Charged + ctk.Held
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := tx.Delete(kidKey(parent.ID, child.ID)); err != nil {
		return err
	}
	parent.Live--
	if root := rootOf(child.ID); root == parent.ID {
		parent.Tree--
	} else {
		r, err := getInv(tx, root)
		if err != nil {
			return err
		}
		r.Tree--
		if err := putInv(tx, r); err != nil {
			return err
		}
	}
	if parent.Status.Terminal() {
		return putInv(tx, parent)
	}
	report, err := childReport(child)
	if err != nil {
		return err
	}
	if _, err := appendEvent(tx, Event{Invocation: parent.ID, Tag: child.ID, Payload: report}); err != nil {
		return err
	}
	switch {
	case parent.Status == Joining && parent.Live == 0:
		return iv.end(tx, parent, Completed)
	case parent.Status == Waiting:
		parent.Status = Running // it may be awaiting this report
	}
	return putInv(tx, parent)
}

// childReport is the event a parent receives when a child ends.
func childReport(c *Invocation) ([]byte, error) {
	m := &checkpoint.Map{}
	m.Set("id", c.ID)
	m.Set("status", c.Status.String())
	if c.Status == Completed {
		v, err := checkpoint.DecodeData(c.Result)
		if err != nil {
			return nil, fmt.Errorf("result of %s: %w", c.ID, err)
		}
		m.Set("result", v)
	}
	if c.Err != nil {
		e := &checkpoint.Map{}
		e.Set("kind", c.Err.Kind)
		e.Set("msg", c.Err.Msg)
		m.Set("error", e)
	}
	return checkpoint.EncodeData(m)
}

// spawner is the adapter of SpawnTag. Its effect (the child, admitted with
// its allowance) is one transaction named by the operation, so it can be
// looked up after a crash: it reconciles.
type spawner struct{ e *Engine }

func childID(op *Operation) string { return fmt.Sprintf("%s.%d", op.Invocation, op.Ordinal) }

func (sp spawner) Lookup(_ context.Context, op *Operation) (any, bool, error) {
	_, err := sp.e.invs.get(childID(op))
	if errors.Is(err, ErrNoSuchInvocation) {
		return nil, false, nil
	}
	return spawned(childID(op)), err == nil, err
}

func spawned(id string) *checkpoint.Map {
	m := &checkpoint.Map{}
	m.Set("id", id)
	return m
}

func limitErr(format string, args ...any) error {
	return &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf(format, args...)}
}

func (sp spawner) Do(ctx context.Context, op *Operation) (any, error) {
	for tries := 0; ; tries++ {
		out, err := sp.do(ctx, op)
		if !errors.Is(err, errGrantsChanged) || tries == maxRegrants {
			return out, err
		}
		sp.e.ward.changed() // a grant or revoke came between the check and the spawn: decided again
	}
}

func (sp spawner) do(ctx context.Context, op *Operation) (any, error) {
	e := sp.e
	id := childID(op)
	args, err := checkpoint.DecodeData(op.Args)
	if err != nil {
		return nil, err
	}
	m, ok := args.(*checkpoint.Map)
	if !ok {
		return nil, &checkpoint.Error{Kind: "value", Msg: "spawn wants a map {steps, input, prog}"}
	}
	st, _ := m.Get("steps")
	steps, ok := st.(int64)
	if !ok || steps <= 0 {
		return nil, &checkpoint.Error{Kind: "value", Msg: "spawn: steps must be a positive int"}
	}
	var tokens uint64
	if tk, ok := m.Get("tokens"); ok {
		n, ok := tk.(int64)
		if !ok || n < 0 {
			return nil, &checkpoint.Error{Kind: "value", Msg: "spawn: tokens must be an int, 0 or more"}
		}
		tokens = uint64(n)
	}
	var input []byte
	if in, ok := m.Get("input"); ok {
		if input, err = checkpoint.EncodeData(in); err != nil {
			return nil, err
		}
	}
	parent, err := e.invs.get(op.Invocation)
	if err != nil {
		return nil, err
	}
	progName, source := parent.Prog, ""
	if p, ok := m.Get("prog"); ok && p != parent.Prog {
		if progName, ok = p.(string); !ok || progName == "" || len(progName) > 200 || strings.ContainsRune(progName, 0) {
			return nil, &checkpoint.Error{Kind: "value", Msg: "spawn: prog must be the name of a prog"}
		}
	} else {
		cp, err := e.checkpoint(op.Invocation)
		if err != nil {
			return nil, err
		}
		h, err := checkpoint.DecodeHeader(cp)
		if err != nil {
			return nil, err
		}
		source = fmt.Sprintf("%x", h.Program)
	}
	stamped, stamp := false, uint64(0)
	if progName != parent.Prog {
		// Another prog runs with its own grants: the parent needs a grant
		// to start it (spawn:NAME, or spawn:* for any), checked again by
		// the spawn's transaction (checkGrantsTx).
		gs, st, err := e.ward.forStamped(parent.Prog, SpawnTag)
		if err != nil {
			return nil, err
		}
		stamped, stamp = true, st
		allowed := false
		for _, g := range gs {
			if t := g.Target(); t == progName || t == "*" {
				allowed = true
			}
		}
		if !allowed {
			return nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("spawn: %s may not start prog %q (runehost grant --prog %s %s)", parent.Prog, progName, ShellWord(parent.Prog), ShellWord(SpawnTag+":"+progName))}
		}
	}
	prog, err := e.invs.Prog(progName)
	if errors.Is(err, ErrNoSuchProg) {
		return nil, &checkpoint.Error{Kind: "value", Msg: fmt.Sprintf("spawn: no prog %q is admitted", progName)}
	}
	if err != nil {
		return nil, err
	}
	if source == "" {
		source = prog.Source
	}
	src, err := e.source(source)
	if err != nil {
		return nil, err
	}
	if _, err := e.Runtime.Load(ctx, src); err != nil {
		return nil, fmt.Errorf("spawn: prog %s: %w", progName, err)
	}
	cp, err := e.Runtime.Start(ctx, port.Input{Source: src, Input: input, State: prog.State, Invocation: id, Seed: uint64(e.Clock()), Limit: uint64(steps)})
	if err != nil {
		return nil, err
	}
	err = e.Store.Retry(store.Synced, func(tx *store.Tx) error {
		if _, err := getInv(tx, id); err == nil {
			return nil // spawned already
		}
		if stamped {
			if err := checkGrantsTx(tx, stamp); err != nil {
				return err
			}
		}
		parent, err := getInv(tx, op.Invocation)
		if err != nil {
			return err
		}
		root := parent
		if parent.Parent != "" {
			if root, err = getInv(tx, rootOf(parent.ID)); err != nil {
				return err
			}
		}
		switch {
		case parent.Depth+1 > MaxDepth:
			return limitErr("spawn: a child of %s would be %d generations deep (at most %d)", parent.ID, parent.Depth+1, MaxDepth)
		case parent.Live >= MaxChildren:
			return limitErr("spawn: %s has %d unsettled children (at most %d)", parent.ID, parent.Live, MaxChildren)
		case root.Tree >= MaxTree:
			return limitErr("spawn: the tree of %s has %d unsettled invocations (at most %d)", root.ID, root.Tree, MaxTree)
		}
		_, err = changeAllowance(tx, parent.ID, func(al *Allowance, _ bool) error {
			// The parent is suspended at this act: the steps its lease
			// holds are not running, and are its to lend (drive.go).
			if need := uint64(steps); al.Available() < need {
				al.Held -= min(al.Held, need-al.Available())
			}
			if al.Available() < uint64(steps) {
				return limitErr("spawn: %s has %d steps to lend, not %d", parent.ID, al.Available(), steps)
			}
			al.Lent += uint64(steps)
			return nil
		})
		if err != nil {
			return err
		}
		_, err = changeTokens(tx, parent.ID, func(al *Allowance) error {
			if al.Available() < tokens {
				return limitErr("spawn: %s has %d model tokens to lend, not %d", parent.ID, al.Available(), tokens)
			}
			al.Lent += tokens
			return nil
		})
		if err != nil {
			return err
		}
		child, err := e.invs.admit(tx, id, progName, "", Binding{})
		if err != nil {
			return err
		}
		child.Parent, child.Depth = parent.ID, parent.Depth+1
		if err := putInv(tx, child); err != nil {
			return err
		}
		if err := tx.Put(allowanceKey(id), Allowance{Limit: uint64(steps)}); err != nil {
			return err
		}
		if err := tx.Put(tokenKey(id), Allowance{Limit: tokens}); err != nil {
			return err
		}
		if err := tx.Put(kidKey(parent.ID, id), true); err != nil {
			return err
		}
		parent.Live++
		if root == parent {
			parent.Tree++
		} else {
			root.Tree++
			if err := putInv(tx, root); err != nil {
				return err
			}
		}
		if err := putInv(tx, parent); err != nil {
			return err
		}
		_, err = e.putCheckpointTx(tx, id, cp, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	return spawned(id), nil
}
