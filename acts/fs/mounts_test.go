//go:build linux

// mounts_test.go: a bind mount of /proc, /sys or /dev inside a directory
// (real mounts: run as root) makes it as refused as /proc: its grant is
// refused, naming the mount; a grant made before the mount reaches nothing
// on it, by any act, directly, through a symlink inside, or while the host
// swaps a directory for one holding the mount.

package fs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/fsallow"
	"github.com/runehost/runehost/internal/testtools"
)

const token = "xoxb-fsallow-secret-5521"

func TestForeignMountRefusedAtGrant(t *testing.T) {
	testtools.RequireRoot(t)
	base := world(t)
	e := engine(t, base)
	for _, m := range []struct{ src, dir, fstype string }{{"/proc", "wp", "proc"}, {"/sys", "ws", "sysfs"}, {"/dev", "wd", "devtmpfs"}} {
		dir := filepath.Join(base, m.dir)
		testtools.Bind(t, m.src, filepath.Join(dir, "deep", "m"))
		os.Symlink(dir, filepath.Join(base, "to-"+m.dir))
		for _, tag := range []string{fs.Read, fs.Write, fs.List} {
			for _, granted := range []string{dir, filepath.Join(base, "to-"+m.dir), filepath.Join(dir, "deep")} {
				_, err := e.Grant(host.AnyProg, tag+":"+granted+"=/w")
				want := " holds " + dir + "/deep/m, a mount of " + m.fstype
				if !errors.Is(err, fs.ErrPlace) || !errors.Is(err, fsallow.ErrNotOrdinary) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s:%s: %v, want a refusal saying %q", tag, granted, err, want)
				}
			}
		}
		// The mount point itself, and a directory in it.
		_, err := e.Grant(host.AnyProg, fs.Read+":"+filepath.Join(dir, "deep", "m"))
		if !errors.Is(err, fsallow.ErrNotOrdinary) || !strings.Contains(err.Error(), m.fstype) {
			t.Errorf("the mount point of %s: %v", m.fstype, err)
		}
	}
	if gs, _ := e.Ward().List(""); len(gs) != 0 {
		t.Fatalf("recorded: %v", gs)
	}
	if _, err := e.Grant(host.AnyProg, fs.Read+":"+base); err == nil || !strings.Contains(err.Error(), base+" holds "+base+"/w") {
		t.Errorf("their parent: %v", err)
	}
	acttest.Grant(t, e, "fs.read:"+base+"/data") // beside them
}

// opened is a grant of data made before /proc, /sys and /dev were mounted
// in it: only the check at each open stands between the acts and them.
func opened(t *testing.T) (*host.Engine, string) {
	testtools.RequireRoot(t)
	base := world(t)
	e := engine(t, base)
	data := filepath.Join(base, "data")
	acttest.Grant(t, e, "fs.read:"+data, "fs.write:"+data, "fs.list:"+data)
	t.Setenv("FSALLOW_TEST_TOKEN", token)
	testtools.BindWritable(t, "/proc", filepath.Join(data, "p")) // writable: the check, not the mount, refuses a write
	testtools.Bind(t, "/sys", filepath.Join(data, "s"))
	testtools.Bind(t, "/dev", filepath.Join(data, "d"))
	testtools.MountFS(t, "mqueue", filepath.Join(data, "q"))
	os.Symlink("p/self", filepath.Join(data, "self"))
	return e, data
}

func TestForeignMountRefusedAtOpen(t *testing.T) {
	e, data := opened(t)
	// Every mount of mqueue is the one IPC namespace's queues: a name of
	// this run's own.
	queue := fmt.Sprintf("runehost-test-%d", os.Getpid())
	comm, _ := os.ReadFile("/proc/self/comm")
	for _, c := range []struct{ name, expr, want string }{
		{"read environ", `act "fs.read" {path: "data/p/self/environ", base64: true}`, "on the proc file system"},
		{"read through a symlink", `act "fs.read" {path: "data/self/environ", base64: true}`, "on the proc file system"},
		{"read status", `act "fs.read" {path: "data/p/self/status"}`, "on the proc file system"},
		{"list", `act "fs.list" {path: "data/p/self"}`, "on the proc file system"},
		{"list the mount", `act "fs.list" {path: "data/p"}`, "on the proc file system"},
		{"write", `act "fs.write" {path: "data/p/self/comm", content: "pwned"}`, "on the proc file system"},
		{"append", `act "fs.write" {path: "data/self/comm", content: "pwned", append: true}`, "on the proc file system"},
		{"read sysfs", `act "fs.read" {path: "data/s/kernel/uevent_seqnum"}`, "on the sysfs file system"},
		{"list sysfs", `act "fs.list" {path: "data/s/kernel"}`, "on the sysfs file system"},
		// devtmpfs has tmpfs's magic: its devices are refused as devices.
		{"read a device", `act "fs.read" {path: "data/d/null"}`, "a character device"},
		{"write a device", `act "fs.write" {path: "data/d/null", content: "x"}`, "a character device"},
		// mqueue makes a queue for a file: refused before anything is made.
		{"make a file", `act "fs.write" {path: "data/q/` + queue + `", content: "x"}`, "on the mqueue file system"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := acttest.Run(t, e, acttest.Catch(c.expr), nil)
			if !strings.HasPrefix(got, `["denied",`) || !strings.Contains(got, c.want) {
				t.Fatalf("got %.300s, want denied: …%s", got, c.want)
			}
			if strings.Contains(got, "FSALLOW_TEST") || strings.Contains(got, "eGFiLW") || strings.Contains(got, token) {
				t.Fatalf("leaked: %s", got)
			}
		})
	}
	if now, _ := os.ReadFile("/proc/self/comm"); string(now) != string(comm) {
		t.Fatalf("written: the process is now %q", now)
	}
	if _, err := os.Stat(filepath.Join(data, "q", queue)); !errors.Is(err, os.ErrNotExist) {
		os.Remove(filepath.Join(data, "q", queue))
		t.Fatalf("a file was made on mqueue: %v", err)
	}
	if got, _ := acttest.Run(t, e, `return act "fs.read" {path: "data/a.txt"}`, nil); got != `"alpha"` {
		t.Fatalf("beside them: %s", got)
	}
}

// While fs.read reads data/y/m/self/environ again and again, the host swaps
// data/y with data/x, which holds /proc's mount at m: every read is of the
// ordinary file or refused.
func TestForeignMountSwapRace(t *testing.T) {
	_, data := opened(t)
	x, y := filepath.Join(data, "x"), filepath.Join(data, "y")
	testtools.Bind(t, "/proc", filepath.Join(x, "m"))
	os.MkdirAll(filepath.Join(y, "m", "self"), 0o755)
	os.WriteFile(filepath.Join(y, "m", "self", "environ"), []byte("ordinary"), 0o644)
	a := &fs.Adapter{Tag: fs.Read}
	op := &host.Operation{Tag: fs.Read, Args: acttest.Data(t, `{"path": "`+y+`/m/self/environ"}`), Attempt: &host.Attempt{Grant: "fs.read:" + data}}
	var stop atomic.Bool
	swapped := make(chan int)
	go func() {
		n := 0
		for ; !stop.Load(); n++ {
			if err := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, y, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				break
			}
		}
		swapped <- n
	}()
	seen := map[string]int{}
	for range 3000 {
		v, err := a.Do(context.Background(), op)
		switch {
		case err == nil:
			seen[v.(string)]++
		case strings.Contains(err.Error(), "on the proc file system"):
			seen["refused: proc"]++
		default:
			seen["other: "+err.Error()]++
		}
	}
	stop.Store(true)
	n := <-swapped
	t.Logf("%d swaps while reading: %v", n, seen)
	for k := range seen {
		if k != "ordinary" && !strings.HasPrefix(k, "refused") && !strings.HasPrefix(k, "other") || strings.Contains(k, token) {
			t.Fatalf("read %d bytes that are not the ordinary file (the token among them: %v)", len(k), strings.Contains(k, token))
		}
	}
	if seen["refused: proc"] == 0 {
		t.Fatalf("the race never reached /proc's mount: %v", seen)
	}
}
