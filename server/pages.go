// pages.go holds what the run page and the operator's index read: runs
// found by their capability links, and their events, from the engine.

package server

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/server/page"
)

// pageSource is the page's view of the server.
type pageSource struct{ s *Server }

// Run resolves a token to its run, or to a descendant of it named by id;
// every failure is the same not-found.
func (p pageSource) Run(ctx context.Context, token, id string) (page.Run, bool) {
	root, ok := p.s.pageRun(token, id)
	if !ok {
		return page.Run{}, false
	}
	inv := cmp.Or(id, root)
	st, err := p.s.svc.State(inv)
	if err != nil {
		return page.Run{}, false
	}
	run := page.Run{ID: inv, Status: st.Status, Answer: st.Answer, Waiting: st.Waiting, WaitCommand: st.Command, Sleeps: st.Sleeps,
		Steps: st.Steps, Tokens: st.Tokens, Started: st.Started, Ended: st.Ended}
	if st.Error != nil {
		run.Error, run.Trace = st.Error.Text, st.Error.Trace
	}
	if inv != root {
		run.Root, run.Parent = root, inv[:strings.LastIndexByte(inv, '.')]
	}
	if ids, err := p.s.svc.E.Tree(inv); err == nil && len(ids) > 1 {
		if invs, err := p.s.svc.E.Invocations(ids[1:]); err == nil {
			for _, c := range invs {
				status := c.Status.String()
				if c.Damage != "" {
					status = host.Damaged
				}
				run.Children = append(run.Children, page.Child{ID: c.ID, Status: status})
			}
		}
	}
	if invs, err := p.s.svc.E.Invocations([]string{inv}); err == nil && len(invs) == 1 {
		run.Prog = invs[0].Prog // a child's log has no run_meta to name it
	}
	if evs, err := p.s.svc.E.Events(inv, 1, 2); err == nil {
		for _, ev := range evs {
			switch {
			case ev.Input != nil:
				run.Input = ev.Input.Text
			case ev.RunMeta != nil:
				run.Prog = ev.RunMeta.Prog
			}
		}
	}
	return run, true
}

// pageRun resolves a page's token to the run it links, and checks that
// id, when given, is that run or one of its descendants (their ids extend
// the run's: r1.2 of r1) that exists.
func (s *Server) pageRun(token, id string) (root string, ok bool) {
	if s.cfg.Links == nil {
		return "", false
	}
	root, err := s.cfg.Links.Resolve(token)
	if err != nil {
		return "", false
	}
	if id == "" || id == root {
		return root, true
	}
	if !strings.HasPrefix(id, root+".") {
		return "", false
	}
	ids, err := s.svc.E.Tree(root)
	if err != nil || !slices.Contains(ids[1:], id) {
		return "", false
	}
	return root, true
}

// Events is the run's tree's events so far, each run's in seq order, runs
// in id order, and the cursor after them.
func (p pageSource) Events(ctx context.Context, run string) ([]events.Event, string, error) {
	ids, err := p.s.svc.E.Tree(run)
	if err != nil {
		return nil, "", err
	}
	c := Cursor{}
	var out []events.Event
	for _, id := range ids {
		evs, err := p.s.svc.E.Events(id, 1, 0)
		if err != nil {
			return nil, "", err
		}
		if len(evs) > 0 {
			c[id] = evs[len(evs)-1].Seq
		}
		out = append(out, evs...)
	}
	// Interleaved by time, as they happened; stable, so each run's order
	// (its seq) is kept.
	slices.SortStableFunc(out, func(a, b events.Event) int { return int(a.At - b.At) })
	return out, c.String(run, true), nil
}

// indexSource lists runs for the operator's index.
type indexSource struct{ s *Server }

// Runs is every invocation, newest first.
func (ix indexSource) Runs(ctx context.Context) ([]page.IndexRun, error) {
	l, err := ix.s.svc.List(nil, "", 0)
	if err != nil {
		return nil, err
	}
	out := make([]page.IndexRun, 0, len(l.Invocations))
	for _, inv := range l.Invocations {
		updated := inv.Ended
		if updated == 0 {
			updated = inv.Admitted
		}
		r := page.IndexRun{ID: inv.ID, Prog: inv.Prog, Status: inv.Status, Parent: inv.Parent, Updated: updated}
		if ix.s.cfg.Links != nil {
			if ls, err := ix.s.cfg.Links.List(inv.ID); err == nil {
				now := ix.s.svc.now()
				for _, l := range ls {
					if l.Live(now) {
						r.Links++
					}
				}
			}
		}
		out = append(out, r)
	}
	slices.Reverse(out)
	return out, nil
}
