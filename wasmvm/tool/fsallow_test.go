//go:build linux

// fsallow_test.go: a tool reaches only ordinary file systems. A mount of
// /proc, /sys or /dev (real bind mounts: run as root) below a mounted
// directory refuses the run at its start; one made while the tool runs is
// refused at each open, directly, through a symlink inside, and while the
// host swaps a directory for one that leads to it.

package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/internal/fsallow"
	"github.com/runehost/runehost/internal/testtools"
)

const token = "xoxb-tool-fsallow-3317"

func TestForeignMountRefusedAtStart(t *testing.T) {
	testtools.RequireRoot(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	r := runner(t, 0)
	for _, m := range []struct{ src, dir, fstype string }{{"/proc", "wp", "proc"}, {"/sys", "ws", "sysfs"}, {"/dev", "wd", "devtmpfs"}} {
		dir := filepath.Join(base, m.dir)
		testtools.Bind(t, m.src, filepath.Join(dir, "m"))
		for _, c := range []struct{ host, want string }{
			{dir, dir + " holds " + dir + "/m, a mount of " + m.fstype},
			{filepath.Join(dir, "m"), dir + "/m"}, // by the mount table, or by its root's descriptor
		} {
			for _, write := range []bool{false, true} {
				_, err := r.Run(context.Background(), testtools.Build(t, "cat"), Config{Args: []string{"/w/m/self/environ"}, Mounts: []Mount{{Host: c.host, Guest: "/w", Write: write}}})
				if !errors.Is(err, fsallow.ErrNotOrdinary) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), m.fstype) {
					t.Errorf("mount %s: %v, want a refusal saying %q", c.host, err, c.want)
				}
			}
		}
	}
}

// started runs scribble on a mount of w, which holds nothing but ordinary
// files when the run starts; once it has written w/ready, mounts are made
// in w, then ops run.
func started(t *testing.T, mounts func(w string), ops ...string) string {
	return startedWith(t, layers{}, mounts, ops...)
}

// startedWith is started with some of the worker's layers off.
func startedWith(t *testing.T, off layers, mounts func(w string), ops ...string) string {
	testtools.RequireRoot(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(base, "w")
	os.Mkdir(w, 0o755)
	t.Setenv("TOOL_FSALLOW_TOKEN", token)
	r := runner(t, 0)
	r.workers.off = off
	done := make(chan string, 1)
	go func() {
		res, err := r.Run(context.Background(), testtools.Build(t, "scribble"), Config{
			Timeout: 2 * time.Minute, Mounts: []Mount{{Host: w, Guest: "/w", Write: true}},
			Args: append([]string{"write:/w/ready", "wait:/w/go"}, ops...)})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- string(res.Stdout) + string(res.Stderr)
	}()
	for {
		if _, err := os.Stat(filepath.Join(w, "ready")); err == nil {
			break
		}
		select {
		case out := <-done:
			t.Fatalf("the tool ended early: %s", out)
		case <-time.After(time.Millisecond):
		}
	}
	mounts(w)
	must(t, os.WriteFile(filepath.Join(w, "go"), nil, 0o644))
	out := <-done
	if strings.Contains(out, token) || strings.Contains(out, "TOOL_FSALLOW") {
		t.Fatalf("the tool read the host's environment:\n%s", out)
	}
	return out
}

func TestForeignMountRefusedAtOpen(t *testing.T) {
	comm, _ := os.ReadFile("/proc/self/comm")
	// Every mount of mqueue is the one IPC namespace's queues: a name of
	// this run's own.
	queue := fmt.Sprintf("runehost-test-%d", os.Getpid())
	var q string
	out := started(t, func(w string) {
		q = filepath.Join(w, "q")
		testtools.BindWritable(t, "/proc", filepath.Join(w, "p")) // writable: the check, not the mount, refuses a write
		testtools.Bind(t, "/sys", filepath.Join(w, "s"))
		testtools.Bind(t, "/dev", filepath.Join(w, "d"))
		testtools.MountFS(t, "mqueue", q)
		must(t, os.Symlink("p/self", filepath.Join(w, "self")))
	}, "write:/w/q/"+queue, "read:/w/p/self/environ", "read:/w/self/environ", "read:/w/p/self/status", "readdir:/w/p", "readdir:/w/self",
		"write:/w/p/self/comm", "append:/w/self/comm", "chtimes:/w/p/self/comm", "mkdir:/w/p/self/x", "unlink:/w/p/self/comm",
		"rename:/w/p/self/comm:/w/stolen", "readlink:/w/p/self", "read:/w/s/kernel/uevent_seqnum", "readdir:/w/s/kernel",
		"read:/w/d/null", "write:/w/d/null", "read:/w/ready")
	for _, want := range []string{
		"denied write /w/q/" + queue + ": EACCES", "denied read /w/p/self/environ: EACCES", "denied read /w/self/environ: EACCES", "denied read /w/p/self/status: EACCES",
		"denied readdir /w/p: EACCES", "denied readdir /w/self: EACCES", "denied write /w/p/self/comm: EACCES",
		"denied append /w/self/comm: EACCES", "denied chtimes /w/p/self/comm: EACCES", "denied mkdir /w/p/self/x: EACCES",
		"denied unlink /w/p/self/comm: EACCES", "denied rename /w/p/self/comm: EACCES", "denied readlink /w/p/self: EACCES",
		"denied read /w/s/kernel/uevent_seqnum: EACCES", "denied readdir /w/s/kernel: EACCES",
		"denied read /w/d/null: EACCES", "denied write /w/d/null: EACCES", `ok read /w/ready "scribbled"`,
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want+" (") {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(q, queue)); !errors.Is(err, os.ErrNotExist) {
		os.Remove(filepath.Join(q, queue))
		t.Errorf("a file was made on a file system that is not an ordinary one (mqueue): %v", err)
	}
	if now, _ := os.ReadFile("/proc/self/comm"); string(now) != string(comm) {
		t.Errorf("written: the process is now %q", now)
	}
}

// While racer reads and writes through rw/d, the host swaps rw/d with rw/x,
// whose f is a symlink into a mount of /proc made once the tool runs: the
// tool never reads it, and writes nothing into it.
func TestForeignMountSwapRace(t *testing.T) {
	testtools.RequireRoot(t)
	t.Setenv("TOOL_FSALLOW_TOKEN", token)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	rw, ctl := filepath.Join(base, "rw"), filepath.Join(base, "ctl")
	d, x := filepath.Join(rw, "d"), filepath.Join(rw, "x")
	for _, dir := range []string{d, x, ctl} {
		must(t, os.MkdirAll(dir, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("inside"), 0o644))
	must(t, os.Symlink("pm/self/environ", filepath.Join(x, "f")))
	r := runner(t, 0)
	type result struct {
		res *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := r.Run(context.Background(), testtools.Build(t, "racer"), Config{
			Timeout: 5 * time.Minute, Fuel: MaxFuel, Args: []string{"/rw/d", "/ctl/stop"},
			Mounts: []Mount{{Host: rw, Guest: "/rw", Write: true}, {Host: ctl, Guest: "/ctl", Write: true}},
		})
		done <- result{res, err}
	}()
	for {
		if _, err := os.Stat(filepath.Join(ctl, "stop.ready")); err == nil {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the tool ended before the race: %+v %v", r.res, r.err)
		case <-time.After(time.Millisecond):
		}
	}
	testtools.Bind(t, "/proc", filepath.Join(x, "pm"))
	start, n := time.Now(), 0
	for ; n < 2000 || time.Since(start) < 2*time.Second; n++ {
		i := n
		must(t, unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, x, unix.RENAME_EXCHANGE))
		if i%64 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	must(t, os.WriteFile(filepath.Join(ctl, "stop"), nil, 0o644))
	res := <-done
	if res.err != nil || !res.res.OK() {
		t.Fatalf("racer: %+v %v %s", res.res, res.err, res.res.Stderr)
	}
	out := string(res.res.Stdout)
	if strings.Contains(out, token) || strings.Contains(out, "TOOL_FSALLOW") {
		t.Fatalf("the tool read the host's environment (%d bytes of output)", len(out))
	}
	t.Logf("%d swaps while the tool ran:\n%s", n, out)
	if !strings.Contains(out, `"read error"`) {
		t.Errorf("the race never led to /proc's mount:\n%s", out)
	}
}

// Each layer holds alone against a /proc mount inside a granted directory.
// With the file-system check and seccomp off, the worker cannot read the
// host's environment or memory (it lacks CAP_SYS_PTRACE and the host is
// not dumpable; Landlock refuses the memory too), natively either; with
// Landlock and seccomp off, the check refuses every open.
func TestProcMountLayersHoldAlone(t *testing.T) {
	testtools.RequireRoot(t)
	if LandlockABI() < 1 {
		t.Skip("no Landlock")
	}
	host := strconv.Itoa(os.Getpid())
	t.Run("without the check", func(t *testing.T) {
		out := startedWith(t, layers{FSCheck: true, Seccomp: true}, func(w string) {
			testtools.Bind(t, "/proc", filepath.Join(w, "p"))
		}, "read:/w/p/"+host+"/environ", "read:/w/p/"+host+"/cmdline", "read:/w/p/"+host+"/mem", "read:/w/p/1/environ", "read:/w/p/self/environ")
		for _, want := range []string{"denied read /w/p/" + host + "/environ: EACCES", "denied read /w/p/" + host + "/mem: EACCES", "denied read /w/p/1/environ: EACCES"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in\n%s", want, out)
			}
		}
		// Natively, as a tool out of wasm would.
		base, _ := filepath.EvalSymlinks(t.TempDir())
		testtools.Bind(t, "/proc", filepath.Join(base, "p"))
		r := runner(t, 0)
		for _, p := range []string{"read:" + base + "/p/" + host + "/environ", "open:" + base + "/p/" + host + "/mem"} {
			if got := runProbe(t, r, p, layers{FSCheck: true, Seccomp: true}, Mount{Host: base, Guest: "/w"}); !strings.HasPrefix(got, "refused") {
				t.Errorf("%s: %s", p, got)
			}
		}
	})
	t.Run("the check alone", func(t *testing.T) {
		out := startedWith(t, layers{Landlock: true, Seccomp: true}, func(w string) {
			testtools.Bind(t, "/proc", filepath.Join(w, "p"))
		}, "read:/w/p/"+host+"/environ", "read:/w/p/self/status")
		for _, want := range []string{"denied read /w/p/" + host + "/environ: EACCES", "denied read /w/p/self/status: EACCES"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in\n%s", want, out)
			}
		}
	})
}
