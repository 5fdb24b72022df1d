// keep_test.go tests workers kept after their run: which runs share one,
// that a run in a kept worker sees nothing of the one before and is as
// confined, and that a kept worker goes when it should.

package tool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/testtools"
)

// keptPIDs returns the pids of a runner's kept workers.
func keptPIDs(r *Runner) []int {
	r.workers.mu.Lock()
	defer r.workers.mu.Unlock()
	var pids []int
	for _, ws := range r.workers.kept {
		for _, w := range ws {
			pids = append(pids, w.cmd.Process.Pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// Runs of one kind share a worker; a run that differs in its mounts, a
// mount's mode, its environment or its owner gets a worker of its own.
func TestKeptWorkerServesItsKindOnly(t *testing.T) {
	r := runner(t, 0)
	r.workers.opts.Keep = 8
	dir, other := t.TempDir(), t.TempDir()
	base := Config{Mounts: []Mount{{Host: dir, Guest: "/d"}}, Env: []string{"A=1"}, Owner: "prog p"}
	run(t, r, "cat", base)
	first := keptPIDs(r)
	if len(first) != 1 {
		t.Fatalf("kept after one run: %v", first)
	}
	run(t, r, "cat", base)
	if got := keptPIDs(r); !slices.Equal(got, first) {
		t.Fatalf("a second run of the same kind did not reuse the kept worker: %v then %v", first, got)
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
	}{
		{"another mount", func(c *Config) { c.Mounts = []Mount{{Host: other, Guest: "/d"}} }},
		{"the mount writable", func(c *Config) { c.Mounts = []Mount{{Host: dir, Guest: "/d", Write: true}} }},
		{"mounted elsewhere", func(c *Config) { c.Mounts = []Mount{{Host: dir, Guest: "/e"}} }},
		{"another environment", func(c *Config) { c.Env = []string{"A=2"} }},
		{"another owner", func(c *Config) { c.Owner = "prog q" }},
	} {
		cfg := base
		c.edit(&cfg)
		before := keptPIDs(r)
		run(t, r, "cat", cfg)
		after := keptPIDs(r)
		if len(after) != len(before)+1 {
			t.Errorf("%s: the run was served by a kept worker of another kind (%v, then %v)", c.name, before, after)
		}
	}
}

// A kept worker's next run sees only its own input, arguments and output,
// and starts from a fresh instance of the tool.
func TestKeptWorkerRunsAreSeparate(t *testing.T) {
	r := runner(t, 0)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("file\n"), 0o644)
	cfg := Config{Mounts: []Mount{{Host: dir, Guest: "/d"}}}
	for i := range 5 {
		in := fmt.Sprintf("run %d\n", i)
		c := cfg
		c.Stdin = []byte(in)
		if i%2 == 1 {
			c.Args = []string{"/d/f"}
			in = "file\n"
		}
		res := run(t, r, "cat", c)
		if !res.OK() || string(res.Stdout) != in || len(res.Stderr) != 0 {
			t.Fatalf("run %d: %+v (stdout %q)", i, res, res.Stdout)
		}
	}
	if got := keptPIDs(r); len(got) != 1 {
		t.Fatalf("five runs of one kind left kept workers %v", got)
	}
	// A cancelled run leaves the worker able to serve, and its stop is not
	// the next run's.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := r.Run(ctx, testtools.Build(t, "cat"), Config{StdinFrom: blockingReader{}, Mounts: cfg.Mounts, Timeout: time.Minute})
	if err != nil || res.Stop != TimedOut || res.Detail != "cancelled" {
		t.Fatalf("cancelled: %+v %v", res, err)
	}
	c := cfg
	c.Stdin = []byte("after\n")
	if res := run(t, r, "cat", c); !res.OK() || string(res.Stdout) != "after\n" {
		t.Fatalf("after a cancel: %+v", res)
	}
}

// blockingReader never gives anything: a tool reading it waits.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

// A kept worker stays confined: native code in its second run is refused
// as in its first (the worker confines itself once).
func TestKeptWorkerStaysConfined(t *testing.T) {
	requireLandlock(t)
	r := runner(t, 0)
	secret := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(secret, []byte("the host's"), 0o600)
	mounts := []Mount{{Host: t.TempDir(), Guest: "/w", Write: true}}
	run(t, r, "cat", Config{Mounts: mounts})
	kept := keptPIDs(r)
	for _, p := range []string{"read:" + secret, "write:" + secret, "read:/proc/1/environ", "exec:/bin/true"} {
		if got := runProbe(t, r, p, layers{}, mounts...); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s in a kept worker: %s", p, got)
		}
		run(t, r, "cat", Config{Mounts: mounts}) // kept again, for the next probe
	}
	if len(kept) != 1 {
		t.Fatalf("kept: %v", kept)
	}
}

// A mount replaced since a kept worker's Landlock was set is served by a
// new worker: the run sees the directory as it is now.
func TestKeptWorkerMountReplaced(t *testing.T) {
	r := runner(t, 0)
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "f"), []byte("old\n"), 0o644)
	cfg := Config{Args: []string{"/d/f"}, Mounts: []Mount{{Host: dir, Guest: "/d"}}}
	if res := run(t, r, "cat", cfg); string(res.Stdout) != "old\n" {
		t.Fatalf("%+v", res)
	}
	os.Rename(dir, dir+".old")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "f"), []byte("new\n"), 0o644)
	if res := run(t, r, "cat", cfg); !res.OK() || string(res.Stdout) != "new\n" {
		t.Fatalf("after the mount was replaced: %+v (stdout %q)", res, res.Stdout)
	}
}

// A kept worker goes after KeepFor, and no worker outlives its runner.
func TestKeptWorkerGoes(t *testing.T) {
	r := runner(t, 0)
	r.workers.keepFor = 300 * time.Millisecond
	run(t, r, "cat", Config{})
	kept := keptPIDs(r)
	if len(kept) != 1 {
		t.Fatalf("kept: %v", kept)
	}
	for deadline := time.Now().Add(time.Minute); len(keptPIDs(r)) > 0 || childWorker(t) != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a kept worker outlived KeepFor: %v", keptPIDs(r))
		}
	}
	r.workers.keepFor = time.Minute
	run(t, r, "cat", Config{})
	if childWorker(t) == 0 {
		t.Fatal("no kept worker")
	}
	r.Close(context.Background())
	if pid := childWorker(t); pid != 0 {
		t.Fatalf("worker %d outlived its runner", pid)
	}
}

// A worker past its CPU time exits, and the run says so: the backstop
// to fuel and the clock holds in a kept worker's later runs too.
func TestWorkerCPULimit(t *testing.T) {
	r := runner(t, 0)
	r.workers.cpu = 1
	run(t, r, "cat", Config{})
	res, err := r.Run(context.Background(), testtools.Build(t, "spin"), Config{Fuel: MaxFuel, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != Trapped || !strings.Contains(res.Detail, "CPU time") {
		t.Fatalf("%+v", res)
	}
}

// A kept worker that cannot begin a run (its mount replaced since its
// Landlock was set), with others kept alike: the run goes to a new worker
// with all of its stdin, which the kept ones never took.
func TestKeptWorkerRetryKeepsStdin(t *testing.T) {
	r := runner(t, 0)
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o755)
	cfg := Config{Mounts: []Mount{{Host: dir, Guest: "/d"}}}
	done := make(chan struct{})
	for range 2 { // two at once: two workers kept
		go func() { run(t, r, "cat", cfg); done <- struct{}{} }()
	}
	<-done
	<-done
	if got := keptPIDs(r); len(got) != 2 {
		t.Fatalf("kept: %v", got)
	}
	os.Rename(dir, dir+".old")
	os.Mkdir(dir, 0o755)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	inW.Write([]byte("all of it\n"))
	inW.Close() // what it holds stays for whoever reads it
	c := cfg
	c.StdinFile, c.StdinWriter = inR, inW
	if res := run(t, r, "cat", c); !res.OK() || string(res.Stdout) != "all of it\n" {
		t.Fatalf("%+v (stdout %q)", res, res.Stdout)
	}
	if got := keptPIDs(r); len(got) != 1 {
		t.Fatalf("kept after: %v (the stale ones should be gone, the new one kept)", got)
	}
}

// A kept worker that died since its run is not a failed run: the next
// run of its kind goes to a new worker.
func TestKeptWorkerDied(t *testing.T) {
	r := runner(t, 0)
	run(t, r, "cat", Config{})
	kept := keptPIDs(r)
	if len(kept) != 1 {
		t.Fatalf("kept: %v", kept)
	}
	syscall.Kill(kept[0], syscall.SIGKILL)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", kept[0]))
		if len(b) == 0 || strings.Contains(string(b), ") Z ") || time.Now().After(deadline) {
			break
		}
	}
	res, err := r.Run(context.Background(), testtools.Build(t, "cat"), Config{Stdin: []byte("x")})
	if err != nil || !res.OK() || string(res.Stdout) != "x" {
		t.Fatalf("%+v %v", res, err)
	}
}
