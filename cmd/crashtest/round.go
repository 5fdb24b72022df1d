// round.go holds the workload: the progs, and the script of one round,
// which drives a fresh store through every mutating command.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/crashtest"
)

// mainProg spawns two children (lent steps and model tokens) that act on
// their own, acts itself through the three test adapters, computes for a while (lazy slices, checkpoints on the
// cadence only), waits for two events, and adds up everything it was
// answered. Its ballast keeps every checkpoint over Badger's value
// threshold (16 KiB), so that checkpoints go to the value log; some replies
// are as large, and are stored as blobs.
const mainProg = `if input != nil {
  let ballast = "c" * 70000
  var t = 0
  for i in range(4) {
    if i % 2 == 0 {
      t += act "test.record" {n: input + i}
    } else if i == 3 {
      t += (act "test.model" {n: input + i}).v
    } else {
      t += (act "test.lookup" {n: input + i}).v
    }
  }
  return t + len(ballast)
}
let ballast = "x" * 70000
let kids = [act "spawn" {steps: 200000, tokens: 20000, input: 100}, act "spawn" {steps: 200000, tokens: 20000, input: 200}]
var total = 0
for i in range(16) {
  if i % 2 == 0 {
    total += act "test.record" {n: i}
  } else if i % 4 == 3 {
    total += (act "test.model" {n: i}).v
  } else {
    var pad = 0
    if i % 4 == 1 { pad = 70000 }
    let r = act "test.lookup" {n: i, pad: pad}
    total += r.v + len(r.pad)
  }
  var j = 0
  while j < 300 { j += 1 }
}
var c = 0
var acc = 0
while c < 60000 { acc = (acc * 31 + c) % 1000003; c += 1 }
total += acc
total += await {key: "go"}
for k in kids { total += (await {key: k.id}).result }
total += await {key: "early"}
return total + len(ballast)`

// keepProg waits for ever: gc must never delete it.
const keepProg = `return await {key: "never"}`

// stopProg waits for ever with a child that does too, until cancelled.
const stopProg = `if input != nil { return await {key: "never"} }
let kid = act "spawn" {steps: 100000, input: 1}
return await {key: "never"}`

// round is one store driven through the script, and what the harness
// knows of it.
type round struct {
	reference bool // the uninterrupted run: nothing is killed
	store     string
	world     crashtest.Journal
	files     map[string]string // prog name to file

	seen                 map[string]*seen
	granted              map[string]bool // "PROG STATEMENT", acknowledged
	revoked              map[string]bool
	sent                 map[string]bool // events acknowledged to the main invocation
	cancelled            string          // a root whose cancel was acknowledged
	gcStarted            bool
	collected            map[string]bool // ended invocations a gc deleted
	main                 string
	keep                 string // the invocation that waits for ever
	stop                 string
	settled              map[string]bool
	reported             map[string]bool // violations already reported
	reconciled, reopened map[string]bool // acts settled by lookup: found, or found never to have happened
	last                 *view
	dumped               bool // a violation's report was printed, and the store kept
}

// ending is what a round ends with: every round must end as the
// uninterrupted one.
type ending struct {
	main string   // the main invocation's result
	left []string // the progs of the invocations left after gc
}

// round runs the script on a fresh store; want nil makes it the
// uninterrupted run, whose ending it returns.
func (h *harness) round(want *ending) *ending {
	dir := h.tempDir("round")
	defer os.RemoveAll(dir)
	h.rounds++
	r := &round{reference: want == nil, store: filepath.Join(dir, "store"), world: crashtest.Journal{Path: filepath.Join(dir, "journal")},
		files: map[string]string{}, seen: map[string]*seen{}, granted: map[string]bool{}, revoked: map[string]bool{},
		sent: map[string]bool{}, settled: map[string]bool{}, reported: map[string]bool{}, reconciled: map[string]bool{}, reopened: map[string]bool{}, collected: map[string]bool{}, last: &view{invs: map[string]*invView{}}}
	for name, src := range map[string]string{"main": mainProg, "keep": keepProg, "stop": stopProg} {
		r.files[name] = filepath.Join(dir, name+".rune")
		check(os.WriteFile(r.files[name], []byte(src), 0o644))
	}
	h.r = r
	if !h.script() {
		return nil
	}
	end := &ending{main: r.last.result(r.main)}
	for _, id := range r.last.ids {
		end.left = append(end.left, r.last.invs[id].Invocation.Prog)
	}
	if want != nil {
		if end.main != want.main {
			h.violate("the main invocation's result is %s; the uninterrupted run's was %s", end.main, want.main)
		}
		if !slices.Equal(end.left, want.left) {
			h.violate("after gc the store keeps %v; the uninterrupted run's kept %v", end.left, want.left)
		}
	}
	return end
}

// script drives the round's store through every mutating command.
func (h *harness) script() bool {
	r := h.r
	if !h.grant("*", crashtest.RecordTag, crashtest.LookupTag, crashtest.ModelTag) || !h.grant("decoy", crashtest.RecordTag) {
		return false
	}
	if r.keep = h.admit("keep", func(v *view, id string) bool { return v.invs[id].awaits == "never" }); r.keep == "" {
		return false
	}
	r.stop = h.admit("stop", func(v *view, id string) bool {
		kid := v.invs[id+".1"]
		return v.invs[id].awaits == "never" && kid != nil && kid.awaits == "never"
	})
	if r.stop == "" {
		return false
	}
	if r.main = h.admit("main", func(*view, string) bool { return true }); r.main == "" {
		return false
	}
	// An event sent before the prog reaches its await is kept for it.
	if !h.until("send early", func(res result, v *view) bool { return res.acked() && h.mark(r.sent, "early") },
		func() []string { return []string{"send", r.main, "early", "7"} }) {
		return false
	}
	if !h.drive("go") {
		return false
	}
	// With nothing ended, gc must delete nothing.
	r.gcStarted = true
	if !h.until("gc", func(res result, v *view) bool { return res.acked() },
		func() []string { return []string{"gc", "--older-than", "0s"} }) {
		return false
	}
	decoy := "decoy " + crashtest.RecordTag
	delete(r.granted, decoy)
	if !h.until("revoke", func(res result, v *view) bool {
		return (res.code == 0 || res.code == 2 && !v.grants[decoy]) && !res.killed && h.mark(r.revoked, decoy)
	}, func() []string { return []string{"revoke", "--prog", "decoy", crashtest.RecordTag} }) {
		return false
	}
	// A killed send may have delivered the event and driven the run to its end.
	if !h.until("send go", func(res result, v *view) bool {
		return (res.acked() || terminal(v.status(r.main))) && h.mark(r.sent, "go")
	},
		func() []string { return []string{"send", r.main, "go", "5"} }) {
		return false
	}
	if !h.drive("") {
		return false
	}
	if !h.until("cancel", func(res result, v *view) bool {
		if !res.killed && (res.code == 0 || res.code == 2 && v.status(r.stop) == host.Cancelled) {
			r.cancelled = r.stop
			return true
		}
		return false
	}, func() []string { return []string{"cancel", r.stop} }) {
		return false
	}
	r.gcStarted = true
	return h.until("gc", func(res result, v *view) bool {
		if !res.acked() {
			return false
		}
		for _, id := range v.ids {
			if s := r.seen[id]; s != nil && s.doneTree {
				h.violate("gc was acknowledged and the ended invocation %s is still there", id)
			}
		}
		return true
	}, func() []string { return []string{"gc", "--older-than", "0s"} })
}

// mark sets m[k] and returns true.
func (h *harness) mark(m map[string]bool, k string) bool {
	m[k] = true
	return true
}

// until runs the command args gives until done says it is done.
func (h *harness) until(what string, done func(result, *view) bool, args func() []string) bool {
	var res result
	for range 60 {
		var v *view
		res, v = h.exec(args()...)
		if v == nil {
			return false // the store does not read: reported
		}
		h.r.last = v
		if done(res, v) {
			return true
		}
	}
	h.violate("%s: not done after 60 commands; the last ended %s: %s", what, res.how(), lastLine(res.errs))
	return false
}

// grant grants statements to prog until a grant is acknowledged.
func (h *harness) grant(prog string, statements ...string) bool {
	return h.until("grant", func(res result, v *view) bool {
		if res.code != 0 || res.killed {
			return false
		}
		for _, st := range statements {
			h.r.granted[prog+" "+st] = true
		}
		return true
	}, func() []string { return append([]string{"grant", "--prog", prog}, statements...) })
}

// admit runs prog until it has a root that is ready, resuming the root a
// killed run left.
func (h *harness) admit(prog string, ready func(v *view, id string) bool) string {
	var id string
	ok := h.until("admit "+prog, func(res result, v *view) bool {
		id = v.root(prog)
		return id != "" && ready(v, id)
	}, func() []string {
		if id := h.r.last.root(prog); id != "" {
			return []string{"resume", id}
		}
		return []string{"run", h.r.files[prog]}
	})
	if !ok {
		return ""
	}
	return id
}

// drive runs the main tree until its root waits for the event target (with
// target "": until it completes), settling acts of unknown outcome as an
// operator would.
func (h *harness) drive(target string) bool {
	r := h.r
	var last result
	for range 300 {
		v := r.last
		root := v.invs[r.main]
		if root == nil {
			h.violate("the main invocation %s is gone", r.main)
			return false
		}
		if un := v.unresolved(r.main); len(un) > 0 {
			if !h.settle(un[0]) {
				return false
			}
			continue
		}
		st := root.Invocation.Status
		switch {
		case target != "" && root.awaits == target, target == "" && st == host.Completed:
			return true
		case terminal(st):
			h.violate("the main invocation ended %s", st)
			return false
		}
		res, v := h.exec("resume", r.main)
		if v == nil {
			return false
		}
		r.last, last = v, res
	}
	h.violate("the main invocation made no progress in 300 commands; the last resume ended %s: %s", last.how(), lastLine(last.errs))
	return false
}

// settle settles an act of unknown outcome. An adapter that reconciles
// settles it when its invocation is resumed; otherwise the operator looks at
// the world (the journal), does the effect by hand if it did not happen,
// and resolves the act.
func (h *harness) settle(op *host.Operation) bool {
	r := h.r
	id := crashtest.OpID(op)
	switch op.Tag {
	case crashtest.LookupTag, crashtest.ModelTag, "spawn": // resuming its invocation reconciles it
		res, v := h.exec("resume", op.Invocation)
		if v == nil {
			return false
		}
		r.last = v
		if o := findOp(v.invs[op.Invocation].Operations, op.Ordinal); res.acked() && o != nil && o.Phase == host.Unresolved {
			h.violate("resume %s left act %s (%s) unknown, and its adapter reconciles", op.Invocation, id, op.Tag)
			return false
		}
		return true
	case crashtest.RecordTag:
		n := argN(op)
		_, found, err := r.world.Find(id)
		check(err)
		if !found {
			check(r.world.Append(crashtest.Entry{Op: id, Tag: op.Tag, N: n}))
		}
		if !r.settled[id] {
			r.settled[id] = true
			h.settled++
		}
		_, v := h.exec("resolve", op.Invocation, strconv.FormatUint(op.Ordinal, 10), "--outcome", strconv.FormatInt(2*n, 10))
		if v == nil {
			return false
		}
		r.last = v
		return true
	}
	h.violate("act %s (%s) is unknown, and no one can settle it", id, op.Tag)
	return false
}

// argN reads the n of a test act's arguments.
func argN(op *host.Operation) int64 {
	d, err := checkpoint.DecodeData(op.Args)
	check(err)
	m, ok := d.(*checkpoint.Map)
	if !ok {
		check(fmt.Errorf("act %s: arguments %v", crashtest.OpID(op), d))
	}
	v, _ := m.Get("n")
	n, ok := v.(int64)
	if !ok {
		check(fmt.Errorf("act %s: arguments %v", crashtest.OpID(op), strings.TrimSpace(fmt.Sprint(d))))
	}
	return n
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
