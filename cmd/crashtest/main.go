// Command crashtest is the crash harness: it runs every mutating runehost
// command (run, resume, send, resolve, cancel, gc, grant, revoke) against a
// store, kills them at random points, and checks after every command that
// nothing acknowledged or synced was lost and no act was dispatched twice.
//
// It kills three ways. A plain SIGKILL after a random delay, or at a sync,
// keeps the operating system's page cache: every write the process made
// survives. A simulated power cut keeps only what was synced. runehost is
// built with the crashtest tag, in which the store reports every completed
// sync, with the log files it flushed, on a pipe, and waits for an answer
// (store/synchook_crashtest.go). For a power cut at sync N the harness keeps
// a durable image of the store: a copy taken when the command started, and
// at each sync up to N, with the process stopped, a copy of each log file
// the sync flushed. It kills the process at sync N+1, before answering, or
// a short random delay after N, whichever comes first, and then puts the
// image back: each of Badger's logs (the value logs and the memtables'
// write-ahead logs) as it was at its last sync, none if it was never synced;
// the files Badger syncs itself (tables, the manifest) as they are.
//
// The world is a journal outside the store (internal/crashtest), written and
// synced by the test adapters before they answer, and never rolled back:
// test.record, which cannot be looked up (an unknown outcome waits for an
// operator, played by the harness with runehost resolve), and test.lookup,
// which implements the engine's reconciliation contract.
//
// Checked after every command, killed or not: the store opens and reads; no
// act was dispatched twice; every effect in the journal has a durable
// attempt; an act's phase never goes back and its outcome never changes;
// attempts of dead processes are reported unknown; a reconciling adapter
// leaves nothing unknown once its invocation is resumed; charged + held +
// lent never passes the limit; no invocation seen before is gone, except
// ended trees after a gc started, and the invocation left waiting never is;
// acknowledged grants, revocations, sends and cancels hold; nothing is
// paused, failed or in conflict; and the final result is the uninterrupted
// run's.
//
// -break builds a runehost that is wrong on purpose, to show the harness
// notices: nosync (Synced commits do not sync), rotation (a sync reaches
// only what Badger's DB.Sync does), vlog (a sync never flushes the value
// log), dispatch-first (the act is performed before its attempt is
// recorded), reopen-free (an attempt reopened after a crash charges none of
// the model tokens it held). Each must end with violations.
//
// Usage: go run ./cmd/crashtest [-kills N] [-seed S] [-break MODE] [-v]   (make crash)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type harness struct {
	bin, tmp, cache string
	rng             *rand.Rand
	budget          int // kills wanted
	delayMS         int // the test adapters' pause before and after an effect
	verbose         bool

	kills, power, viol int
	perKind            map[string]*kindStats
	settled            int // unknown acts settled by the operator
	reconc, reopened   int // unknown acts the adapter's lookup found, or found never happened
	rounds             int
	r                  *round
	lastCmd            *command // the command just run, for a violation's report
	kept               int      // rounds whose store was kept for a violation
	broken             bool     // -break: violations are expected, their stores not kept
}

// command is a command run and how it ended.
type command struct {
	args []string
	res  result
}

// kindStats counts one command's runs and kills, and learns how long it
// runs and how many syncs it makes, to place kills inside it.
type kindStats struct {
	runs, kills, power int
	maxSyncs           int
	maxTook            time.Duration
}

func main() {
	kills := flag.Int("kills", 300, "kills in all")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed of the kill points")
	brk := flag.String("break", "", "build a broken runehost: nosync, rotation, vlog, dispatch-first or reopen-free")
	verbose := flag.Bool("v", false, "print every command")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "crashtest")
	check(err)
	defer os.RemoveAll(tmp)
	cache := filepath.Join(os.TempDir(), "runehost-test-wazero-cache")
	h := &harness{bin: filepath.Join(tmp, "runehost"), tmp: tmp, cache: cache, rng: rand.New(rand.NewSource(*seed)),
		budget: *kills, delayMS: 3, verbose: *verbose, perKind: map[string]*kindStats{}, broken: *brk != ""}
	if err := build(h.bin, tmp, *brk); err != nil {
		fmt.Println("crash:", err)
		os.Exit(2)
	}
	fmt.Printf("crash: seed %d, %d kills, break %q\n", *seed, *kills, *brk)
	start := time.Now()

	// The uninterrupted run gives the results every other round must give.
	want := h.round(nil)
	if h.viol > 0 {
		fmt.Println("crash: the uninterrupted run failed")
		os.Exit(1)
	}
	for h.kills < h.budget {
		h.round(want)
		if *brk != "" && h.viol > 0 {
			break // red, as it must be
		}
	}
	h.report(time.Since(start))
	if h.viol > 0 {
		os.Exit(1)
	}
}

func (h *harness) report(took time.Duration) {
	kinds := make([]string, 0, len(h.perKind))
	for k := range h.perKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		s := h.perKind[k]
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", k, s.runs, s.kills, s.power))
	}
	fmt.Printf("crash: commands (runs/kills/power cuts): %s\n", strings.Join(parts, ", "))
	fmt.Printf("crash: %d rounds, %d unknown acts settled by an operator, %d reconciled by lookup (%d found never to have happened, and redone), in %s\n",
		h.rounds, h.settled, h.reconc, h.reopened, took.Round(time.Second))
	fmt.Printf("crash: %d kills (%d power cuts), %d violations\n", h.kills, h.power, h.viol)
}

// build builds runehost with the crashtest tag into bin, broken as brk says.
func build(bin, tmp, brk string) error {
	args := []string{"build", "-tags", "crashtest", "-o", bin}
	switch brk {
	case "":
	case "nosync", "rotation", "vlog":
		args = append(args, "-ldflags", "-X github.com/runehost/runehost/store.crashBreak="+brk)
	case "dispatch-first", "reopen-free":
		overlay, err := overlays[brk](tmp)
		if err != nil {
			return err
		}
		args = append(args, "-overlay", overlay)
	default:
		return fmt.Errorf("-break %q: want nosync, rotation, vlog, dispatch-first or reopen-free", brk)
	}
	c := exec.Command("go", append(args, "./cmd/runehost")...)
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("build runehost: %w", err)
	}
	return nil
}

// edit is one replacement in a source file of the host, which must hold
// old once.
type edit struct{ file, old, new string }

// overlays are the broken builds made by editing the host's source: each
// writes a build overlay and returns its path.
var overlays = map[string]func(tmp string) (string, error){
	// The engine performs an act before the transaction that records its
	// attempt.
	"dispatch-first": func(tmp string) (string, error) {
		return overlay(tmp, "dispatch-first",
			edit{"host/dispatch.go", "type prepared struct {\n", "type prepared struct {\n\tearly *Outcome // crashtest -break dispatch-first\n"},
			edit{"host/commit.go", "\tattempted := false\n", "\tif act != nil && prep != nil {\n\t\tprep.early = e.perform(context.WithoutCancel(ctx), act, prep)\n\t}\n\tattempted := false\n"},
			edit{"host/dispatch.go", "\t\t\to := e.perform(context.WithoutCancel(ctx), op, fresh)\n", "\t\t\to := fresh.early\n"})
	},
	// An attempt reopened after a crash charges nothing for the model
	// tokens it held, which it may have spent.
	"reopen-free": func(tmp string) (string, error) {
		return overlay(tmp, "reopen-free",
			edit{"host/ledger.go", "chargeTokensTx(tx, id.Invocation, held, held)", "chargeTokensTx(tx, id.Invocation, held, 0)"})
	},
}

// overlay writes a build overlay replacing each file edited with a copy
// of it, edited.
func overlay(tmp, brk string, edits ...edit) (string, error) {
	texts := map[string]string{}
	for _, e := range edits {
		s, ok := texts[e.file]
		if !ok {
			b, err := os.ReadFile(e.file)
			if err != nil {
				return "", err
			}
			s = string(b)
		}
		if strings.Count(s, e.old) != 1 {
			return "", fmt.Errorf("-break %s: %s no longer has %q once; update cmd/crashtest's overlay", brk, e.file, e.old)
		}
		texts[e.file] = strings.Replace(s, e.old, e.new, 1)
	}
	replace := map[string]string{}
	for file, s := range texts {
		src, err := filepath.Abs(file)
		if err != nil {
			return "", err
		}
		patched := filepath.Join(tmp, filepath.Base(file))
		if err := os.WriteFile(patched, []byte(s), 0o644); err != nil {
			return "", err
		}
		replace[src] = patched
	}
	j, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
	path := filepath.Join(tmp, "overlay.json")
	return path, os.WriteFile(path, j, 0o644)
}

// plan decides how the next command of kind is killed, if at all.
func (h *harness) plan(kind string) plan {
	// Most kills go to the commands that run progs and their acts.
	p := 0.35
	switch kind {
	case "run", "resume", "send", "resolve":
		p = 0.85
	}
	if h.r.reference || h.kills >= h.budget || h.rng.Float64() >= p {
		return plan{}
	}
	ks := h.kind(kind)
	syncs := max(ks.maxSyncs, 2)
	// A delay anywhere in the command's run: after sync n of a power cut
	// it is mostly cut short by sync n+1, but not where the command goes
	// long without a sync (or, broken, never syncs).
	delay := time.Duration(h.rng.Int63n(int64(max(ks.maxTook, 200*time.Millisecond))))
	switch x := h.rng.Intn(4); {
	case x < 2:
		return plan{mode: killPower, n: h.rng.Intn(syncs + 1), delay: delay}
	case x == 2:
		return plan{mode: killSync, n: 1 + h.rng.Intn(syncs)}
	default:
		return plan{mode: killDelay, delay: delay}
	}
}

func (h *harness) kind(k string) *kindStats {
	s := h.perKind[k]
	if s == nil {
		s = &kindStats{}
		h.perKind[k] = s
	}
	return s
}

// exec runs a command, maybe killed, then checks the store.
func (h *harness) exec(args ...string) (result, *view) {
	kind := args[0]
	p := h.plan(kind)
	res := h.run(p, args...)
	res.plan = p
	ks := h.kind(kind)
	ks.runs++
	switch {
	case res.killed:
		h.kills++
		ks.kills++
		if res.power {
			h.power++
			ks.power++
		}
	case res.syncs > ks.maxSyncs:
		ks.maxSyncs = res.syncs
	}
	if !res.killed && res.took > ks.maxTook {
		ks.maxTook = res.took
	}
	h.lastCmd = &command{args: args, res: res}
	if h.verbose {
		fmt.Printf("crash: %v: %s, %d syncs, exit %d %s\n", args, res.how(), res.syncs, res.code, firstLine(res.errs))
	}
	return res, h.check(strings.Join(args, " "), res)
}

// how describes how a command ended, for messages.
func (r result) how() string {
	switch {
	case r.power && r.plan.n == 0:
		return "power cut before its first sync"
	case r.power:
		return fmt.Sprintf("power cut after sync %d", r.plan.n)
	case r.killed && r.plan.mode == killSync:
		return fmt.Sprintf("killed at sync %d", r.plan.n)
	case r.killed:
		return fmt.Sprintf("killed after %s", r.plan.delay.Round(time.Millisecond))
	}
	return fmt.Sprintf("exit %d", r.code)
}

func (h *harness) violate(format string, args ...any) {
	h.viol++
	fmt.Printf("crash: violation (round %d): "+format+"\n", append([]any{h.rounds}, args...)...)
	h.dump()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func check(err error) {
	if err != nil {
		fmt.Println("crash:", err)
		os.Exit(2)
	}
}

// tempDir makes a fresh directory under the harness's own.
func (h *harness) tempDir(name string) string {
	d, err := os.MkdirTemp(h.tmp, name)
	check(err)
	return d
}
