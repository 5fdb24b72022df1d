// Command crashtest kills runehost with SIGKILL at random points while it
// runs a prog that performs many acts against the recording test adapter,
// restarts it, and checks after every restart that no act was dispatched
// twice, no recorded outcome was lost, every attempt without an outcome is
// reported Unknown (unresolved), charged + held never passes the limit, and
// the final result equals an uninterrupted run's. Acts left Unknown are
// settled as an operator would: by looking at the world (the adapter's log)
// and completing the effect by hand where it did not happen.
//
// Usage: go run ./internal/crashtest [-kills N] [-seed S]   (make crash)
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prog spawns two children that act on their own, acts itself, and adds up
// what everyone's acts answered.
const prog = `if input != nil {
  var t = 0
  for i in range(4) { t += act "test.record" {n: input + i} }
  return t
}
let kids = [act "spawn" {steps: 100000, input: 100}, act "spawn" {steps: 100000, input: 200}]
var total = 0
for i in range(20) {
  total += act "test.record" {n: i}
  var j = 0
  while j < 400 { j += 1 }
}
for k in kids { total += (await {key: k.id}).result }
return total`

type harness struct {
	lastErr         string // the last command's stderr
	bin, dir, cache string
	rng             *rand.Rand
	kills, viol     int
	settled         int // unknown acts settled by hand
}

type act struct {
	Ordinal uint64         `json:"ordinal"`
	Tag     string         `json:"tag"`
	Args    map[string]int `json:"args"`
	Phase   string         `json:"phase"`
}

type inspection struct {
	Invocation string            `json:"invocation"`
	Status     string            `json:"status"`
	Allowance  map[string]uint64 `json:"allowance"`
	Acts       []act             `json:"acts"`
	Result     json.RawMessage   `json:"result"`
}

func main() {
	kills := flag.Int("kills", envInt("CRASH_KILLS", 200), "SIGKILLs in all")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed of the kill points")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "crashtest")
	check(err)
	defer os.RemoveAll(tmp)
	h := &harness{bin: filepath.Join(tmp, "runehost"), dir: tmp, cache: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), rng: rand.New(rand.NewSource(*seed))}
	build := exec.Command("go", "build", "-o", h.bin, "./cmd/runehost")
	build.Stderr = os.Stderr
	check(build.Run())
	progFile := filepath.Join(tmp, "acts.rune")
	check(os.WriteFile(progFile, []byte(prog), 0o644))
	fmt.Printf("crash: seed %d, %d kills\n", *seed, *kills)

	// The uninterrupted run.
	refStore, refLog := filepath.Join(tmp, "ref"), filepath.Join(tmp, "ref.log")
	h.grant(refStore, refLog)
	out, code := h.cmd(refStore, refLog, 0, "run", progFile)
	if code != 0 {
		fmt.Println("crash: the uninterrupted run failed:", out)
		os.Exit(1)
	}
	want := strings.TrimSpace(out)

	for round := 1; h.kills < *kills; round++ {
		store, log := filepath.Join(tmp, fmt.Sprintf("s%d", round)), filepath.Join(tmp, fmt.Sprintf("s%d.log", round))
		h.round(store, log, progFile, want, *kills)
	}
	fmt.Printf("crash: %d unknown acts settled as an operator would\n", h.settled)
	fmt.Printf("crash: %d kills, %d violations\n", h.kills, h.viol)
	if h.viol > 0 {
		os.Exit(1)
	}
}

// grant lets the prog use the test adapter on a fresh store.
func (h *harness) grant(store, log string) {
	if out, code := h.cmd(store, log, 0, "grant", "test.record"); code != 0 {
		fmt.Println("crash: grant failed:", out)
		os.Exit(1)
	}
}

// round runs one invocation tree to its end through kills and restarts.
func (h *harness) round(store, log, progFile, want string, budget int) {
	h.grant(store, log)
	root := ""                // found with ps once a run was admitted
	seen := map[string]bool{} // acts (inv#ord) seen with a recorded outcome
	for i := 0; ; i++ {
		args := []string{"run", progFile}
		if root != "" {
			args = []string{"resume", root}
		}
		kill := 0
		if h.kills < budget && i < 40 {
			kill = 1 + h.rng.Intn(400) // ms
		}
		if i > 300 {
			h.violate("no progress after %d restarts (last: %v)", i, args)
			return
		}
		out, code := h.cmd(store, log, kill, args...)
		if code > 0 && code != 4 && os.Getenv("CRASH_VERBOSE") != "" {
			fmt.Printf("crash: %v exited %d: %s\n", args, code, out)
		}
		invs := h.admitted(store, log)
		if len(invs) == 0 {
			continue // killed before the invocation was admitted: run again
		}
		root = invs[0]
		var tree []*inspection
		for _, id := range invs {
			in, ok := h.inspect(store, log, id)
			if !ok {
				tree = nil
				break
			}
			h.checks(in, log, seen)
			tree = append(tree, in)
		}
		if tree == nil {
			continue
		}
		switch tree[0].Status {
		case "completed":
			if got := strings.TrimSpace(string(tree[0].Result)); got != want {
				h.violate("result %s, the uninterrupted run gave %s", got, want)
			}
			return
		case "failed", "cancelled", "conflict":
			h.violate("the invocation ended %s", tree[0].Status)
			return
		}
		type unknownAct struct {
			inv string
			a   act
		}
		var unknown []unknownAct
		for _, in := range tree {
			for _, a := range in.Acts {
				if a.Phase == "unresolved" && a.Tag == "test.record" {
					unknown = append(unknown, unknownAct{in.Invocation, a})
				}
			}
		}
		if len(unknown) > 0 {
			// Resuming must leave each unknown act unknown: never run again.
			h.cmd(store, log, 0, "resume", root)
			for _, u := range unknown {
				in, ok := h.inspect(store, log, u.inv)
				if !ok {
					continue
				}
				h.checks(in, log, seen)
				for _, a := range in.Acts {
					if a.Ordinal == u.a.Ordinal && a.Phase != "unresolved" {
						h.violate("unknown act %s#%d became %s without an operator", u.inv, a.Ordinal, a.Phase)
					}
				}
			}
			for _, u := range unknown {
				h.settle(store, log, u.inv, u.a)
			}
		}
	}
}

// settle resolves an Unknown act as an operator would: if the adapter's log
// shows the effect, it happened; if not, the operator performs it by hand.
func (h *harness) settle(store, log, inv string, a act) {
	line := fmt.Sprintf("%s#%d %d", inv, a.Ordinal, a.Args["n"])
	h.settled++
	if !contains(readLines(log), line) {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		check(err)
		fmt.Fprintln(f, line)
		f.Close()
	}
	h.cmd(store, log, 0, "resolve", inv, strconv.FormatUint(a.Ordinal, 10), "--outcome", strconv.Itoa(2*a.Args["n"]))
}

func (h *harness) checks(in *inspection, log string, seen map[string]bool) {
	lines := readLines(log)
	count := map[string]int{}
	for _, l := range lines {
		if count[l]++; count[l] == 2 {
			h.violate("act dispatched twice: %s", l)
		}
	}
	al := in.Allowance
	if al["charged"]+al["held"]+al["lent"] > al["limit"] {
		h.violate("%s: charged %d + held %d + lent %d > limit %d", in.Invocation, al["charged"], al["held"], al["lent"], al["limit"])
	}
	phase := map[string]string{}
	for _, a := range in.Acts {
		id := fmt.Sprintf("%s#%d", in.Invocation, a.Ordinal)
		phase[id] = a.Phase
		switch a.Phase {
		case "attempted":
			h.violate("act %s attempted by a dead process and not reported unknown", id)
		case "recorded", "consumed":
			seen[id] = true
		}
	}
	for id := range seen {
		if p, ok := phase[id]; ok && p != "recorded" && p != "consumed" {
			h.violate("act %s had a recorded outcome and now is %q", id, p)
		}
	}
}

// admitted returns the invocations a run admitted in store, the root first.
func (h *harness) admitted(store, log string) []string {
	out, code := h.cmd(store, log, 0, "ps", "--json")
	for try := 0; code != 0 && try < 3; try++ {
		time.Sleep(100 * time.Millisecond)
		out, code = h.cmd(store, log, 0, "ps", "--json")
	}
	if code != 0 {
		// Not "nothing admitted": the store must open after any kill.
		h.violate("ps exited %d after a kill: %s", code, strings.TrimSpace(h.lastErr))
		return nil
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row struct {
			Invocation string `json:"invocation"`
			Paused     string `json:"paused"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil || row.Invocation == "" {
			h.violate("ps --json line %q: %v", line, err)
			continue
		}
		if row.Paused != "" {
			// The engine could not go on with it after a kill.
			h.violate("%s is paused: %s", row.Invocation, row.Paused)
		}
		if !strings.Contains(row.Invocation, ".") {
			if len(ids) > 0 && !strings.Contains(ids[0], ".") {
				h.violate("two roots admitted for one run: %s and %s", ids[0], row.Invocation)
			}
			ids = append([]string{row.Invocation}, ids...)
			continue
		}
		ids = append(ids, row.Invocation)
	}
	if len(ids) > 0 && strings.Contains(ids[0], ".") {
		h.violate("children without a root: %v", ids)
	}
	return ids
}

func (h *harness) inspect(store, log, inv string) (*inspection, bool) {
	out, code := h.cmd(store, log, 0, "inspect", "--json", inv)
	if code != 0 {
		if os.Getenv("CRASH_VERBOSE") != "" {
			fmt.Printf("crash: inspect exited %d: %s\n", code, out)
		}
		return nil, false
	}
	var in inspection
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		h.violate("inspect output: %v: %s", err, out)
		return nil, false
	}
	return &in, true
}

// cmd runs runehost; with kill > 0 it sends SIGKILL after that many ms.
func (h *harness) cmd(store, log string, kill int, args ...string) (string, int) {
	args = append(args, "--store", store)
	if args[0] != "inspect" && args[0] != "ps" && args[0] != "grant" {
		args = append(args, "--cache-dir", h.cache)
	}
	c := exec.Command(h.bin, args...)
	c.Env = append(os.Environ(), "RUNEHOST_TEST_ADAPTER="+log, "RUNEHOST_TEST_ADAPTER_DELAY_MS=4")
	var out, errs strings.Builder
	c.Stdout = &out
	c.Stderr = &errs
	if os.Getenv("CRASH_VERBOSE") != "" {
		c.Stderr = &out
	}
	defer func() { h.lastErr = errs.String() }()
	check(c.Start())
	if kill > 0 {
		t := time.AfterFunc(time.Duration(kill)*time.Millisecond, func() { c.Process.Signal(syscall.SIGKILL) })
		defer t.Stop()
	}
	err := c.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			h.kills++
			return out.String(), -1
		}
		return out.String(), ee.ExitCode()
	}
	check(err)
	return out.String(), 0
}

func (h *harness) violate(format string, args ...any) {
	h.viol++
	fmt.Printf("crash: violation: "+format+"\n", args...)
}

func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	return lines
}

func contains(lines []string, l string) bool {
	for _, x := range lines {
		if x == l {
			return true
		}
	}
	return false
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func check(err error) {
	if err != nil {
		fmt.Println("crash:", err)
		os.Exit(2)
	}
}
