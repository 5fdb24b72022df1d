// sleep_test.go: a run whose only wait is a timer (std/retry's sleep) goes
// on at its deadline under a plain `runehost run`, attached to a server,
// and through Ctrl-C and `resume`; nobody has to send anything.

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ticksProg sleeps twelve ticks of two seconds, as issue 32 has it.
const ticksProg = `import "std/retry.rune" as retry
var i = 0
while i < 12 {
  retry.sleep(2000)
  emit("tick", i)
  i += 1
}
return i
`

func TestSleepingRunGoesOn(t *testing.T) {
	f := writeProg(t, ticksProg)
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "store")
		ticked(t, start(t, dir, nil, "run", f), "(Ctrl-C detaches; runehost resume r1 goes on)")
	})
	t.Run("served", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "store")
		srv := start(t, dir, nil, "serve")
		srv.await(t, `"msg":"serving"`)
		defer func() {
			if t.Failed() {
				t.Log(srv.stderr())
			}
		}()
		ticked(t, start(t, dir, nil, "run", f), "(the server goes on then; Ctrl-C detaches)")
	})
	t.Run("interrupted", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "store")
		p := start(t, dir, nil, "run", f)
		p.await(t, "r1 sleeping until ")
		p.cmd.Process.Signal(os.Interrupt)
		if code := p.wait(t, time.Minute); code != exitInterrupted || !strings.Contains(p.stderr(), "interrupted: r1 sleeps until ") || !strings.Contains(p.stderr(), "(runehost resume r1 goes on)") {
			t.Fatalf("exit %d:\n%s", code, p.stderr())
		}
		r := start(t, dir, nil, "resume", "r1")
		if code := r.wait(t, 3*time.Minute); code != exitOK || !strings.Contains(r.stderr(), "done: r1 completed") {
			t.Fatalf("resume: exit %d:\n%s", code, r.stderr())
		}
	})
}

// ticked checks that p ran ticksProg to its end, saying it slept with
// hint, and ticked twelve times.
func ticked(t *testing.T, p *started, hint string) {
	t.Helper()
	if code := p.wait(t, 3*time.Minute); code != exitOK || !strings.Contains(p.stderr(), "r1 sleeping until ") || !strings.Contains(p.stderr(), hint) || !strings.Contains(p.stderr(), "done: r1 completed") {
		t.Fatalf("exit %d:\n%s", code, p.stderr())
	}
	if n := strings.Count(p.stderr(), "◆"); n != 12 {
		t.Fatalf("%d ticks:\n%s", n, p.stderr())
	}
}

// events --follow on a run that nothing drives (no runehost holds the
// store) says so, and how to drive it on, instead of waiting silently.
func TestFollowSaysNothingDrives(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f := writeProg(t, "import \"std/retry.rune\" as retry\nretry.sleep(600000)\nlet ev = await {key: \"go\"}\nreturn ev\n")
	p := start(t, dir, nil, "run", f)
	p.await(t, "r1 sleeping until ")
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, time.Minute); code != exitInterrupted {
		t.Fatalf("exit %d:\n%s", code, p.stderr())
	}
	ev := start(t, dir, nil, "events", "r1", "--follow")
	ev.await(t, "events: r1 sleeps until ")
	ev.await(t, ", and nothing drives it here (no runehost holds the store): runehost resume r1, or runehost serve, drives it on; following meanwhile")
}

// A closed pipe on stderr (runehost run ... 2>&1 | head) does not kill the
// run: it goes on to its end, and exits with its status.
func TestBrokenPipeKeepsTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f := writeProg(t, "import \"std/retry.rune\" as retry\nvar i = 0\nwhile i < 3 { retry.sleep(200); emit(\"tick\", i); i += 1 }\nreturn i\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody reads: the first line the run prints meets a closed pipe
	cmd := exec.Command(os.Args[0], "run", f)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir, "RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		t.Fatalf("the run: %v", err)
	}
	w.Close()
	if _, _, status := inspectJSON(t, dir, "r1"); status != "completed" {
		t.Fatalf("r1 is %s", status)
	}
}
