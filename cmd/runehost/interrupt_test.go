// interrupt_test.go: Ctrl-C (SIGINT to a real runehost process) stops a run
// at a slice boundary with its checkpoint stored and says how to resume it;
// a second one exits at once; what resume will do with an act cut short is
// said per act family; a long run on a terminal shows a progress line.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
	"github.com/runehost/runehost/store"
)

// longProg runs for two seconds of the host's clock (now() is the clock of
// its slice), however fast the machine, and returns longAnswer; longLimit
// is more steps than it can take in that time.
const (
	longProg   = "let t0 = now()\nvar n = 0\nwhile now() - t0 < 2000 { n += 1 }\nreturn 1\n"
	longAnswer = "1\n"
	longLimit  = "1000000000"
)

// started is a runehost process whose stderr is read as it comes.
type started struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	errs bytes.Buffer
	done chan struct{}
}

// start runs runehost as a process on the store dir, with extra env.
func start(t *testing.T, dir string, env []string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir,
		"RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	cmd.Env = append(cmd.Env, env...)
	r, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			s.mu.Lock()
			s.errs.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return s
}

func (s *started) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs.String()
}

// await waits until stderr holds want.
func (s *started) await(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.stderr(), want) {
			return
		}
	}
	t.Fatalf("no %q in stderr:\n%s", want, s.stderr())
}

// wait waits for the process to exit and returns its status.
func (s *started) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	exited := make(chan struct{})
	go func() { <-s.done; s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(within):
		t.Fatalf("still running after %v:\n%s", within, s.stderr())
	}
	return s.cmd.ProcessState.ExitCode()
}

func inspectJSON(t *testing.T, dir, inv string) (used, charged uint64, status string) {
	t.Helper()
	code, out, errs := process(t, dir, "inspect", "--json", inv)
	if code != exitOK {
		t.Fatalf("inspect: exit %d, %s", code, errs)
	}
	var in struct {
		Status     string `json:"status"`
		Checkpoint struct {
			Used uint64 `json:"used"`
		} `json:"checkpoint"`
		Allowance struct {
			Charged uint64 `json:"charged"`
		} `json:"allowance"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return in.Checkpoint.Used, in.Allowance.Charged, in.Status
}

// The first Ctrl-C stops the run at a slice with its checkpoint stored:
// everything charged is in the checkpoint, the printed command resumes it
// to the result an uninterrupted run gives, and a run meanwhile points it
// out.
func TestInterruptStopsAtASlice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f := writeProg(t, longProg)
	for i, after := range []time.Duration{0, 300 * time.Millisecond} {
		inv := "r" + string(rune('1'+2*i))
		p := start(t, dir, nil, "run", "--limit", longLimit, f)
		p.await(t, inv+" ℹ")
		time.Sleep(after)
		p.cmd.Process.Signal(os.Interrupt)
		code := p.wait(t, 30*time.Second)
		errs := p.stderr()
		if code != exitInterrupted || !strings.Contains(errs, "interrupted: "+inv+" stopped after") {
			t.Fatalf("after %v: exit %d, stderr:\n%s", after, code, errs)
		}
		used, charged, status := inspectJSON(t, dir, inv)
		if status != "running" || used != charged {
			t.Fatalf("after %v: %s with %d steps in its checkpoint and %d charged: work was lost\n%s", after, status, used, charged, errs)
		}
		// The next run says it is there.
		next := "r" + string(rune('2'+2*i))
		code, _, e := process(t, dir, "run", f, "--limit", "10")
		if code != exitFailed || !strings.Contains(e, "note: "+inv+", an earlier run of p, was stopped before it ended (runehost resume "+inv+")") || !strings.Contains(e, "invocation "+next) {
			t.Fatalf("next run: exit %d, %s", code, e)
		}
		hs := hints(errs)
		last := hs[len(hs)-1]
		if strings.Join(last, " ") != "resume "+inv {
			t.Fatalf("hint %q in:\n%s", last, errs)
		}
		if code, out, e := process(t, dir, last...); code != exitOK || out != longAnswer {
			t.Fatalf("%q: exit %d, %q, %s", last, code, out, e)
		}
	}
}

// A second Ctrl-C exits at once, even with an act in flight; the next
// command says what resume will do with the act cut short, and resume
// does it.
func TestSecondInterruptExits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "spin.wasm"), testtools.Build(t, "spin"), 0o644)
	f := writeProg(t, `let r = act "tool.run" {tool: "spin", fuel: 1000000000}`+"\nreturn r.stop\n")
	env := []string{"RUNEHOST_TOOLS=" + tools}
	if code, _, e := process(t, dir, "grant", "--prog", "p", "tool.run:spin,fuel=1000000000"); code != exitOK {
		t.Fatal(e)
	}
	p := start(t, dir, env, "run", f)
	p.await(t, "→")
	time.Sleep(200 * time.Millisecond) // the tool is running
	p.cmd.Process.Signal(os.Interrupt)
	p.await(t, "interrupt: stopping r1")
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, 10*time.Second); code != exitInterrupted || !strings.Contains(p.stderr(), "interrupt: exiting at once; r1 goes on from its last stored checkpoint (runehost resume r1)") {
		t.Fatalf("exit %d:\n%s", code, p.stderr())
	}
	code, _, errs := processEnv(t, dir, env, "ps")
	if code != exitOK || !strings.Contains(errs, "cut short: act tool.run (#1 of r1) was attempted and has no outcome; doing it again has the same effect, so runehost resume r1 will do it again") {
		t.Fatalf("ps: exit %d, %s", code, errs)
	}
	if code, out, e := processEnv(t, dir, env, "resume", "r1"); code != exitOK || out != "\"fuel\"\n" {
		t.Fatalf("resume: exit %d, %q, %s", code, out, e)
	}
}

// processEnv is process with extra environment.
func processEnv(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return process(t, dir, args...)
}

// What resume will do with an act an earlier process left with no outcome
// is said for each act family, from its adapter.
func TestRecoveryWording(t *testing.T) {
	s, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, _, err := host.Open(s, port.NewNative(), nowMillis)
	if err != nil {
		t.Fatal(err)
	}
	defer acts.Register(e, acts.Config{})()
	args := func(kv ...any) []byte {
		m := &checkpoint.Map{}
		for i := 0; i < len(kv); i += 2 {
			m.Set(kv[i], kv[i+1])
		}
		b, _ := checkpoint.EncodeData(m)
		return b
	}
	hint := func(a ...string) string { return "runehost " + strings.Join(a, " ") }
	for _, c := range []struct {
		tag  string
		args []byte
		want string
	}{
		{"fs.read", args("path", "x"), "doing it again has the same effect, so runehost resume r1 will do it again"},
		{"fs.write", args("path", "x", "content", "y"), "doing it again has the same effect"},
		{"fs.write", args("path", "x", "content", "y", "append", true), "may or may not have taken effect (an append cannot be repeated safely); it will not be done again: say how it ended (runehost resolve r1 3 --outcome JSON if it did, with its reply as JSON, or runehost resolve r1 3 --error KIND:MSG if it did not)"},
		{"http.get", args("url", "https://example.com/"), "so runehost resume r1 will do it again"},
		{"http.post", args("url", "https://example.com/"), "may or may not have taken effect (a POST cannot be looked up)"},
		{"approval", args("question", "ok?"), "so runehost resume r1 will do it again"},
		{"model.chat", args("messages", []any{}), "so runehost resume r1 will do it again"}, // a model call has no effect in the world
	} {
		got := recovery(context.Background(), e, &host.Operation{Invocation: "r1", Ordinal: 3, Tag: c.tag, Args: c.args}, hint)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %x:\n got %s\nwant %s", c.tag, c.args, got, c.want)
		}
	}
}

// A long run on a terminal shows the progress line, redrawn in place; with
// --quiet, or when stderr is not a terminal, there is none.
func TestProgressLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f := writeProg(t, longProg)
	onPTY := func(args ...string) string {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir, "TERM=xterm",
			"RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty here: %v", err)
		}
		defer ptmx.Close()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = &out, tty, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		var screen bytes.Buffer
		copied := make(chan struct{})
		go func() { io.Copy(&screen, ptmx); close(copied) }()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, screen.String())
		}
		<-copied // EIO once the last writer closed
		if out.String() != longAnswer {
			t.Fatalf("%v: stdout %q", args, out.String())
		}
		return screen.String()
	}
	screen := onPTY("run", "--limit", longLimit, f)
	if !strings.Contains(screen, "\r\x1b[K… ") || !strings.Contains(screen, " steps · ") || !strings.Contains(screen, " slices · 0 acts · ") {
		t.Fatalf("no progress line:\n%q", screen)
	}
	if i := strings.LastIndex(screen, "\r\x1b[K… "); !strings.Contains(screen[i+4:], "\r\x1b[K") {
		t.Fatalf("the last progress line was not cleared:\n%q", screen[i:])
	}
	if screen := onPTY("run", "--quiet", "--limit", longLimit, f); strings.Contains(screen, " steps · ") {
		t.Fatalf("--quiet:\n%q", screen)
	}
	if _, _, errs := process(t, dir, "run", "--limit", longLimit, f); strings.Contains(errs, " steps · ") {
		t.Fatalf("not a terminal:\n%q", errs)
	}
}
