// served_test.go runs the CLI suite with a server: each command goes
// through `runehost serve` started in this process on the test's store, and
// a table of scenarios compares every command's stdout, stderr and exit
// status with and without one.

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/client"
)

// serving, when set, makes invoke start a server on the store it uses
// (once per store) and stop it when the test ends.
var serving struct {
	sync.Mutex
	on   bool
	dirs map[string]bool
}

// served runs f with a server on every store invoke uses.
func served(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	serving.Lock()
	serving.on, serving.dirs = true, map[string]bool{}
	serving.Unlock()
	defer func() {
		serving.Lock()
		serving.on = false
		serving.Unlock()
	}()
	f(t)
}

// syncBuffer is a buffer written by other goroutines (a server's log, a process's stderr) and read meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveStore starts a server on dir, if serving and none runs on it yet.
func serveStore(t *testing.T, dir string) {
	t.Helper()
	serving.Lock()
	defer serving.Unlock()
	if !serving.on || serving.dirs[dir] {
		return
	}
	serving.dirs[dir] = true
	log := &syncBuffer{}
	stop, err := startServe(context.Background(), dir, log)
	if err != nil {
		t.Fatalf("serve %s: %v\n%s", dir, err, log)
	}
	if _, ok, err := client.Find(dir); !ok {
		t.Fatalf("serve %s: not found (%v)", dir, err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve %s stopped: %v\n%s", dir, err, log)
		}
		if t.Failed() {
			t.Logf("the server's log:\n%s", log)
		}
	})
}

// The suite's tests that go through the store, with a server. Those that
// are local by nature (--no-store, check, tool, redact, a store held open
// by the test, crashes, migrate and gc, which refuse a served store) stay
// out; TestServedRefuses checks the refusals.
func TestServedSuite(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"RunHello", TestRunHello},
		{"RunFlagsEitherSide", TestRunFlagsEitherSide},
		{"RunFailure", TestRunFailure},
		{"RunLimit", TestRunLimit},
		{"RunActDenied", TestRunActDenied},
		{"CompileErrorOnRun", TestCompileErrorOnRun},
		{"RunKeepsState", TestRunKeepsState},
		{"RunWaitsThenSend", TestRunWaitsThenSend},
		{"Inspect", TestInspect},
		{"Cancel", TestCancel},
		{"RunSpawns", TestRunSpawns},
		{"GrantsAndPreflight", TestGrantsAndPreflight},
		{"Events", TestEvents},
		{"SentinelSecretNeverLeaks", TestSentinelSecretNeverLeaks},
		{"ToolEnvOfTheHostRefused", TestToolEnvOfTheHostRefused},
		{"ProgIdentity", TestProgIdentity},
		{"DenialHintGrants", TestDenialHintGrants},
		{"WaitingHint", TestWaitingHint},
		{"SpawnHint", TestSpawnHint},
	} {
		t.Run(tc.name, func(t *testing.T) { served(t, tc.f) })
	}
}

// timestamps are what may differ between two runs of the same commands.
var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// outcome is what a command printed and how it exited.
type outcome struct {
	code           int
	stdout, stderr string
}

// scenario runs its steps on a fresh store; a step's arguments may name
// FILE (the scenario's prog) and DATA (a directory).
type scenario struct {
	name  string
	prog  string
	steps [][]string
}

func (sc scenario) run(t *testing.T, file, data string) []outcome {
	t.Helper()
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	var out []outcome
	for _, step := range sc.steps {
		args := make([]string, len(step))
		for i, a := range step {
			args[i] = strings.NewReplacer("FILE", file, "DATA", data).Replace(a)
		}
		code, o, e := invoke(t, args...)
		out = append(out, outcome{code, timestamps.ReplaceAllString(o, "TIME"), timestamps.ReplaceAllString(e, "TIME")})
	}
	return out
}

// Every command reads the same with and without a server; ps pages
// through the server's list two at a time.
func TestBothWays(t *testing.T) {
	defer func(n int) { remotePage = n }(remotePage)
	remotePage = 2
	for _, sc := range []scenario{
		{"run and its state", "return (state || 0) + 1", [][]string{
			{"run", "FILE", "--seed", "1"}, {"run", "FILE", "--seed", "1"}, {"ps"}, {"ps", "--json"}, {"ps", "--status", "completed"},
			{"inspect", "r2"}, {"inspect", "r2", "--json"}, {"events", "r1"}, {"events", "r2", "--json"}, {"events", "r2", "--from", "3", "--follow"},
			{"ps", "--status", "bogus"}, {"inspect", "r9"}, {"events", "r9"},
		}},
		{"failure and limit", "let x = 1\nif input == 1 { while true {} }\nreturn x / 0", [][]string{
			{"run", "FILE", "--seed", "1"}, {"run", "FILE", "--input", "1", "--limit", "500", "--seed", "1"}, {"inspect", "r2"}, {"ps", "--status", "failed"},
		}},
		{"compile error", "let = 3", [][]string{{"run", "FILE"}, {"ps"}}},
		{"await, send, cancel", "let v = await {key: \"go\"}\nemit(\"got\", v)\nreturn await {key: \"again\"}", [][]string{
			{"run", "FILE", "--seed", "1"}, {"send", "r1", "go", `{"by":"ada"}`}, {"inspect", "r1"}, {"send", "r9", "go", "1"},
			{"send", "r1", "go", "{bad"}, {"resume", "r1"}, {"cancel", "r1"}, {"cancel", "r1"}, {"send", "r1", "again", "1"}, {"events", "r1"},
			{"ps", "--status", "cancelled"}, {"resolve", "r1", "1", "--outcome", "1"}, {"resolve", "r1", "x", "--outcome", "1"},
		}},
		{"grants", `try { return act "fs.read" {path: "x"} } catch e { return e.kind }`, [][]string{
			{"run", "FILE", "--seed", "1"}, {"run", "FILE", "--strict-grants"}, {"grant", "--prog", "p", "fs.read:DATA", "approval"},
			{"grant", "fs.read"}, {"grant", "bad tag"}, {"grants"}, {"grants", "--json"}, {"grants", "--prog", "p"},
			{"run", "FILE", "--strict-grants", "--seed", "1"}, {"inspect", "r2", "--json"}, {"revoke", "--prog", "p", "fs.read:DATA"},
			{"revoke", "--prog", "p", "fs.read:DATA"}, {"grants"},
		}},
		{"spawns", `if input != nil { return input * input }
var kids = []
for i in range(1, 4) { kids = append(kids, act "spawn" {steps: 20000, input: i}) }
var sum = 0
for k in kids { sum += (await {key: k.id}).result }
return sum`, [][]string{{"run", "FILE", "--seed", "1"}, {"ps"}, {"inspect", "r1"}, {"inspect", "r1.1", "--json"}, {"events", "r1.2"}}},
		{"links", "return 1", [][]string{
			{"run", "FILE", "--seed", "1"}, {"link", "r9"}, {"link", "--ttl", "0s", "r1"}, {"link", "--list", "r1"}, {"link", "--revoke", "r1", "abc"}, {"link", "--revoke", "r1"},
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "p.rune")
			os.WriteFile(file, []byte(sc.prog), 0o644)
			data := t.TempDir()
			local := sc.run(t, file, data)
			var remote []outcome
			served(t, func(t *testing.T) { remote = sc.run(t, file, data) })
			for i, step := range sc.steps {
				if local[i] != remote[i] {
					t.Errorf("%v:\nlocal:  exit %d\n%s\n%s\nserved: exit %d\n%s\n%s", step, local[i].code, local[i].stdout, local[i].stderr, remote[i].code, remote[i].stdout, remote[i].stderr)
				}
			}
		})
	}
}

// Commands that need the store to themselves refuse a served one.
func TestServedRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	t.Setenv("RUNEHOST_STORE", dir)
	served(t, func(t *testing.T) {
		invoke(t, "ps")
		for _, args := range [][]string{{"gc", "--older-than", "0s"}, {"migrate", "r1", "x"}, {"store", "verify"}, {"store", "backup", filepath.Join(t.TempDir(), "b")}} {
			code, _, errs := invoke(t, args...)
			if code != exitUsage || !strings.Contains(errs, fmt.Sprintf("runehost: the store %s is served by runehost serve (pid %d); stop it first", dir, os.Getpid())) {
				t.Errorf("%v: exit %d, %q", args, code, errs)
			}
		}
	})
}

// Ctrl-C detaches a served run from its stream: the run goes on, and
// events --follow follows it to its end.
func TestServedRunDetaches(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "while true {}")
	served(t, func(t *testing.T) {
		invoke(t, "ps") // the server starts
		ctx, cancel := context.WithCancel(context.Background())
		errs := &syncBuffer{}
		done := make(chan int)
		go func() {
			done <- realMainContext(ctx, []string{"runehost", "run", f, "--limit", "3000000"}, &bytes.Buffer{}, errs)
		}()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errs.String(), "invocation r1") && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if code := <-done; code != exitDetached || !strings.HasSuffix(errs.String(), "detached: r1 goes on in the server (runehost events --follow r1)\n") {
			t.Fatalf("exit %d, %q", code, errs)
		}
		if code, out, _ := invoke(t, "events", "r1", "--follow"); code != exitOK || !strings.Contains(out, "step limit of 3000000 exceeded") {
			t.Fatalf("follow: %d %s", code, out)
		}
	})
}

// A link made through a server is listed and revoked through it.
func TestServedLink(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	t.Setenv("RUNEHOST_BASE_URL", "")
	served(t, func(t *testing.T) {
		if code, _, errs := invoke(t, "run", writeProg(t, "return 1")); code != exitOK {
			t.Fatalf("run: %d %s", code, errs)
		}
		code, out, errs := invoke(t, "link", "r1", "--base-url", "https://rh.example/")
		if code != exitOK || !strings.HasPrefix(out, "https://rh.example/r/") || len(strings.TrimSpace(out)) != len("https://rh.example/r/")+43 {
			t.Fatalf("link: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		id := strings.Fields(errs)[1]
		if code, out, _ := invoke(t, "link", "--list", "r1"); code != exitOK || !strings.HasPrefix(out, id+"  live") {
			t.Fatalf("list: %d %q", code, out)
		}
		if code, _, errs := invoke(t, "link", "--revoke", "r1", id); code != exitOK || !strings.Contains(errs, "revoked 1 link(s) of r1") {
			t.Fatalf("revoke: %d %q", code, errs)
		}
	})
}
