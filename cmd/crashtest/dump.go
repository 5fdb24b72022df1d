// dump.go reports what a violation needs to be diagnosed: the main
// invocation's tree as the store holds it (each invocation's status, pause,
// what it awaits, its acts' phases, its mailbox), the command that broke
// the rule, and a copy of the round's store and journal, kept.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// maxKept is how many rounds' stores one run keeps, at most (none with
// -break, whose violations are expected).
const maxKept = 5

// dump prints the round's state and keeps a copy of its store, once per
// round: the first violation of a round is the one to look at.
func (h *harness) dump() {
	r := h.r
	if r == nil || r.dumped {
		return
	}
	r.dumped = true
	if c := h.lastCmd; c != nil {
		fmt.Printf("crash:   the last command: %s: %s, %d syncs\n", strings.Join(c.args, " "), c.res.how(), c.res.syncs)
		for _, l := range tail(c.res.errs, 12) {
			fmt.Printf("crash:     | %s\n", l)
		}
	}
	if !h.broken && h.kept < maxKept {
		h.kept++
		dir, err := os.MkdirTemp("", fmt.Sprintf("crashtest-round%d-", h.rounds))
		if err == nil {
			err = copyTree(filepath.Dir(r.store), dir)
		}
		if err != nil {
			fmt.Printf("crash:   the store could not be kept: %v\n", err)
		} else {
			fmt.Printf("crash:   the round's store is kept in %s (store/, journal; runehost inspect --store %s ID)\n", dir, filepath.Join(dir, "store"))
		}
	}
	lines, err := h.tree()
	if err != nil {
		fmt.Printf("crash:   the tree could not be read: %v\n", err)
	}
	for _, l := range lines {
		fmt.Printf("crash:   %s\n", l)
	}
}

// copyTree copies the regular files of src and of its directories into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case d.Type().IsRegular():
			if err := copyFile(p, to); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		return nil
	})
}

// waitRec is the store's wait record (host's own, unexported).
type waitRec struct {
	Seq      uint64 `cbor:"1,keyasint"`
	Deadline int64  `cbor:"2,keyasint,omitempty"`
}

// tree describes the main invocation's tree (every invocation, before there
// is one) as the store holds it, read without opening a new generation.
func (h *harness) tree() ([]string, error) {
	r := h.r
	s, err := store.Open(store.Options{Dir: r.store})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	e := host.NewEngine(s, port.NewNative(), 0, func() int64 { return time.Now().UnixMilli() })
	invs, err := e.List()
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if r.main == "" {
		add("the store's invocations (no main invocation yet):")
	} else {
		add("the tree of %s:", r.main)
	}
	for _, i := range invs {
		if r.main != "" && rootOf(i.ID) != r.main {
			continue
		}
		if i.Damage != "" {
			add("%s: damaged: %s", i.ID, i.Damage)
			continue
		}
		in, err := e.Inspect(i.ID)
		if err != nil {
			add("%s: inspect: %v", i.ID, err)
			continue
		}
		var runnable, open bool
		var w waitRec
		var haveWait bool
		var box []host.Event
		var kids []string
		err = s.View(func(tx *store.Tx) error {
			runnable, open, w, haveWait, box, kids = false, false, waitRec{}, false, nil, nil // a View may run again
			var err error
			if _, runnable, err = tx.GetRaw(store.K("run", rootOf(i.ID), i.ID)); err != nil {
				return err
			}
			if haveWait, err = tx.Get(store.K("wait", i.ID), &w); err != nil {
				return err
			}
			if err := tx.Scan(store.K("open", i.ID), func(store.Key, func(any) error) (bool, error) {
				open = true
				return false, nil
			}); err != nil {
				return err
			}
			if err := tx.Scan(store.K("kid", i.ID), func(k store.Key, _ func(any) error) (bool, error) {
				p := k.Parts()
				kids = append(kids, p[len(p)-1])
				return true, nil
			}); err != nil {
				return err
			}
			return tx.Scan(store.K("rcv", i.ID), func(_ store.Key, decode func(any) error) (bool, error) {
				var ev host.Event
				if err := decode(&ev); err != nil {
					return false, err
				}
				box = append(box, ev)
				return true, nil
			})
		})
		if err != nil {
			add("%s: records: %v", i.ID, err)
		}
		paused := ""
		if i.Paused != "" {
			paused = fmt.Sprintf(", paused: %q", i.Paused)
		}
		add("%s (%s): %s%s; runnable index %v, open attempts %v, live children %d %v, tree %d; allowance charged %d held %d lent %d of %d; tokens charged %d held %d lent %d of %d",
			i.ID, i.Prog, i.Status, paused, runnable, open, i.Live, kids, i.Tree, in.Allowance.Charged, in.Allowance.Held, in.Allowance.Lent, in.Allowance.Limit,
			in.Tokens.Charged, in.Tokens.Held, in.Tokens.Lent, in.Tokens.Limit)
		if i.Err != nil {
			add("  error: %s: %s", i.Err.Kind, i.Err.Msg)
		}
		if len(i.Result) > 0 {
			add("  result: %s", dataString(i.Result))
		}
		switch {
		case in.Header == nil:
			add("  checkpoint: unreadable")
		case in.Header.Pending == nil:
			add("  checkpoint: %d steps used, not suspended", in.Header.Used)
		default:
			p := in.Header.Pending
			kind := "act " + p.Tag
			if p.Kind == checkpoint.PendingAwait {
				kind = "await"
			}
			add("  checkpoint: %d steps used, suspended at #%d, %s %s", in.Header.Used, p.Seq, kind, dataString(p.Args))
		}
		if haveWait {
			add("  wait: at #%d, deadline %d", w.Seq, w.Deadline)
		}
		for _, op := range in.Operations {
			l := fmt.Sprintf("  act #%d %s %s: %s", op.Ordinal, op.Tag, dataString(op.Args), op.Phase)
			if a := op.Attempt; a != nil {
				l += fmt.Sprintf(", attempted by generation %d (executor %s, contract %q)", a.Generation, a.Executor, a.Contract)
			}
			if o := op.Outcome; o != nil {
				l += ", outcome from " + o.Source
				if o.Ref == "" {
					l += " " + replyString(o.Reply)
				}
			}
			if op.Reopened > 0 {
				l += fmt.Sprintf(", reopened %d times", op.Reopened)
			}
			add("%s", l)
		}
		for _, ev := range box {
			taken := "untaken"
			if ev.TakenBy != 0 {
				taken = fmt.Sprintf("taken by #%d", ev.TakenBy)
			}
			if ev.Timeout {
				add("  event %d: a timeout, %s", ev.Seq, taken)
				continue
			}
			add("  event %d %q %s: %s", ev.Seq, ev.Tag, dataString(ev.Payload), taken)
		}
		for _, d := range in.Damage {
			add("  damaged: %s", d)
		}
	}
	if r.main != "" {
		var n []string
		ents, _ := r.world.Entries()
		for _, en := range ents {
			if rootOf(en.Op) == r.main {
				n = append(n, en.Op)
			}
		}
		sort.Strings(n)
		add("the journal's effects of the tree: %s", strings.Join(n, " "))
	}
	return out, nil
}

// dataString shows a data value briefly.
func dataString(b []byte) string {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		return fmt.Sprintf("(undecodable: %v)", err)
	}
	return short(fmt.Sprintf("%v", d))
}

func replyString(b []byte) string {
	rp, err := checkpoint.DecodeReply(b)
	switch {
	case err != nil:
		return fmt.Sprintf("(undecodable: %v)", err)
	case rp.Err != nil:
		return short(fmt.Sprintf("error %s: %s", rp.Err.Kind, rp.Err.Msg))
	}
	return short(fmt.Sprintf("%v", rp.Value))
}

func short(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// tail returns the last n lines of s.
func tail(s string, n int) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	l := strings.Split(s, "\n")
	return l[max(0, len(l)-n):]
}
