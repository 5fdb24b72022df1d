// mounts_linux.go holds real mounts for tests of what a prog or a tool may
// reach: a read-only bind mount (of /proc, /sys, /dev) at a directory,
// undone (lazily) when the test ends. Only root mounts: the tests skip
// otherwise.

package testtools

import (
	"os"
	"strconv"
	"strings"
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

// MountFS mounts a new file system of fstype at dir (mqueue, whose files
// a tool could make), unmounted at the test's end.
func MountFS(t testing.TB, fstype, dir string) {
	t.Helper()
	mount(t, "none", dir, fstype, 0, true)
}

func bind(t testing.TB, src, dir string, writable bool) {
	t.Helper()
	mount(t, src, dir, "", unix.MS_BIND, writable)
}

func mount(t testing.TB, src, dir, fstype string, flags uintptr, writable bool) {
	t.Helper()
	RequireRoot(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dir, fstype, flags, ""); err != nil {
		t.Fatalf("mount %s (%s) at %s: %v", src, fstype, dir, err)
	}
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, 0, unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		unix.Unmount(dir, unix.MNT_DETACH)
		t.Fatalf("the mount at %s has no id: %v", dir, err)
	}
	t.Cleanup(func() {
		// Wherever it is now: a test may have renamed a directory above it.
		at := mountPoint(stx.Mnt_id)
		if at == "" {
			t.Errorf("the mount made at %s is gone", dir)
			return
		}
		if err := unix.Unmount(at, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", at, err)
		}
	})
	if writable {
		return
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}

// mountPoint is where the mount of this id is now, "" if nowhere.
func mountPoint(id uint64) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[0] == strconv.FormatUint(id, 10) {
			return unescape(f[4])
		}
	}
	return ""
}

// unescape decodes mountinfo's octal escapes (\040 a space).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
