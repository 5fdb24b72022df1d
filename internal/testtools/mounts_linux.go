// mounts_linux.go holds real mounts for tests of what a prog or a tool may
// reach: a read-only bind mount (of /proc, /sys, /dev) at a directory,
// undone (lazily) when the test ends. Only root mounts: the tests skip
// otherwise.

package testtools

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs as root, who alone may mount.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a file system (a bind mount of /proc, /sys, /dev): run as root")
	}
}

// Bind bind-mounts src at dir (made if missing), read-only, until the test
// ends: a test that goes wrong writes nothing into /sys or /dev. dir must be
// in a t.TempDir made before, so that it is unmounted before the temporary
// directory is removed.
func Bind(t testing.TB, src, dir string) {
	t.Helper()
	bind(t, src, dir, false)
}

// BindWritable is Bind, writable: for a test that opens a file of /proc
// for writing (its own /proc/self/comm), to show the check refuses it
// before the file system would.
func BindWritable(t testing.TB, src, dir string) {
	t.Helper()
	bind(t, src, dir, true)
}

func bind(t testing.TB, src, dir string, writable bool) {
	t.Helper()
	RequireRoot(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s at %s: %v", src, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if writable {
		return
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
