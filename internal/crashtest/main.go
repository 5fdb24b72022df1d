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

const prog = `var total = 0
for i in range(24) {
  total += act "test.record" {n: i}
  var j = 0
  while j < 400 { j += 1 }
}
return total`

type harness struct {
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
	Status    string            `json:"status"`
	Allowance map[string]uint64 `json:"allowance"`
	Acts      []act             `json:"acts"`
	Result    json.RawMessage   `json:"result"`
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

// round runs one invocation to its end through kills and restarts.
func (h *harness) round(store, log, progFile, want string, budget int) {
	inv := ""                 // found with ps once a run was admitted
	seen := map[uint64]bool{} // acts seen with a recorded outcome
	for i := 0; ; i++ {
		args := []string{"run", progFile}
		if inv != "" {
			args = []string{"resume", inv}
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
		if inv == "" {
			if inv = h.admitted(store, log); inv == "" {
				continue // killed before the invocation was admitted: run again
			}
		}
		in, ok := h.inspect(store, log, inv)
		if !ok {
			continue
		}
		h.checks(in, log, seen)
		switch in.Status {
		case "completed":
			if got := strings.TrimSpace(string(in.Result)); got != want {
				h.violate("result %s, the uninterrupted run gave %s", got, want)
			}
			return
		case "failed", "cancelled", "conflict":
			h.violate("the invocation ended %s", in.Status)
			return
		}
		var unknown []act
		for _, a := range in.Acts {
			if a.Phase == "unresolved" {
				unknown = append(unknown, a)
			}
		}
		if len(unknown) > 0 {
			// Resuming must stop at the unknown act without running it again.
			before := len(readLines(log))
			if _, code := h.cmd(store, log, 0, "resume", inv); code != 4 {
				h.violate("resume with an unknown act exited %d, want 4 (waiting)", code)
			}
			if after := len(readLines(log)); after != before {
				h.violate("resume with an unknown act dispatched %d acts", after-before)
			}
			for _, a := range unknown {
				h.settle(store, log, inv, a)
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

func (h *harness) checks(in *inspection, log string, seen map[uint64]bool) {
	lines := readLines(log)
	count := map[string]int{}
	for _, l := range lines {
		if count[l]++; count[l] == 2 {
			h.violate("act dispatched twice: %s", l)
		}
	}
	al := in.Allowance
	if al["charged"]+al["held"] > al["limit"] {
		h.violate("charged %d + held %d > limit %d", al["charged"], al["held"], al["limit"])
	}
	phase := map[uint64]string{}
	for _, a := range in.Acts {
		phase[a.Ordinal] = a.Phase
		switch a.Phase {
		case "attempted":
			h.violate("act %d attempted by a dead process and not reported unknown", a.Ordinal)
		case "recorded", "consumed":
			seen[a.Ordinal] = true
		}
	}
	for ord := range seen {
		if p := phase[ord]; p != "recorded" && p != "consumed" {
			h.violate("act %d had a recorded outcome and now is %q", ord, p)
		}
	}
}

// admitted returns the invocation a run admitted in store, if any.
func (h *harness) admitted(store, log string) string {
	out, code := h.cmd(store, log, 0, "ps", "--json")
	if code != 0 {
		return ""
	}
	lines := strings.Fields(out)
	if len(lines) > 1 {
		h.violate("%d invocations admitted for one run", len(lines))
	}
	if len(lines) == 0 {
		return ""
	}
	var row struct {
		Invocation string `json:"invocation"`
	}
	json.Unmarshal([]byte(lines[0]), &row)
	return row.Invocation
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
	if args[0] != "inspect" && args[0] != "ps" {
		args = append(args, "--cache-dir", h.cache)
	}
	c := exec.Command(h.bin, args...)
	c.Env = append(os.Environ(), "RUNEHOST_TEST_ADAPTER="+log, "RUNEHOST_TEST_ADAPTER_DELAY_MS=4")
	var out strings.Builder
	c.Stdout = &out
	if os.Getenv("CRASH_VERBOSE") != "" {
		c.Stderr = &out
	}
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
