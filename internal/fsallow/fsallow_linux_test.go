// fsallow_linux_test.go: real files and real mounts. The kernel's own files
// are refused by their descriptor; a directory holding a bind mount of
// /proc, /sys or /dev (devtmpfs, whose magic is tmpfs's: only its name in
// the mount table tells it) is refused, naming the mount point; an ordinary
// directory and one whose name needs escaping pass.

package fsallow_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/internal/fsallow"
	"github.com/runehost/runehost/internal/testtools"
)

func TestCheckOpened(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/proc/self/environ", "proc"}, {"/proc/self/status", "proc"},
		{"/sys/kernel/mm/transparent_hugepage/enabled", "sysfs"}, {"/sys/fs/cgroup/cpu", "cgroup"},
		{"/dev/pts", "devpts"},
	} {
		f, err := os.Open(c.path)
		if err != nil {
			continue // not on this kernel
		}
		err = fsallow.Check(f)
		f.Close()
		if !errors.Is(err, fsallow.ErrNotOrdinary) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %q", c.path, err, c.want)
		}
	}
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fsallow.Check(f); err != nil {
		t.Fatalf("a temporary directory: %v", err)
	}
}

func TestCheckTree(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(base, "w with\tspace")
	os.MkdirAll(filepath.Join(w, "plain"), 0o755)
	if err := fsallow.CheckTree(w); err != nil {
		t.Fatalf("an ordinary directory: %v", err)
	}
	testtools.Bind(t, "/proc", filepath.Join(w, "a", "p"))
	testtools.Bind(t, "/sys", filepath.Join(w, "b", "s"))
	testtools.Bind(t, "/dev", filepath.Join(w, "c", "d"))
	os.Symlink(filepath.Join(w, "a"), filepath.Join(base, "link"))
	for _, c := range []struct{ dir, want string }{
		{w, w + " holds " + w + "/"},
		{filepath.Join(w, "a"), w + "/a holds " + w + "/a/p, a mount of proc"},
		{filepath.Join(base, "link"), w + "/a holds " + w + "/a/p, a mount of proc"}, // resolved first
		{filepath.Join(w, "a", "p"), w + "/a/p is on the proc file system"},
		{filepath.Join(w, "a", "p", "self"), w + "/a/p/"}, // its pid, on the proc file system
		{filepath.Join(w, "b"), w + "/b holds " + w + "/b/s, a mount of sysfs"},
		{filepath.Join(w, "c"), w + "/c holds " + w + "/c/d, a mount of devtmpfs"},
		{filepath.Join(w, "c", "d"), w + "/c/d is a mount of devtmpfs"},
		{filepath.Join(w, "c", "d", "pts"), w + "/c/d/pts is on " + w + "/c/d, a mount of devtmpfs"},
	} {
		err := fsallow.CheckTree(c.dir)
		if !errors.Is(err, fsallow.ErrNotOrdinary) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
	}
	if err := fsallow.CheckTree(filepath.Join(w, "a", "p", "self")); !strings.Contains(fmt.Sprint(err), "on the proc file system") {
		t.Errorf("inside /proc's mount: %v", err)
	}
	if err := fsallow.CheckTree(filepath.Join(w, "plain")); err != nil {
		t.Errorf("beside them: %v", err)
	}
	restore := fsallow.TestingDisable()
	defer restore()
	if err := fsallow.CheckTree(w); err != nil {
		t.Errorf("disabled: %v", err)
	}
}
