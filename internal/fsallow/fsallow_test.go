// fsallow_test.go: the mount table's format read as the kernel writes it,
// and a mount of a file system outside the allow-list found at, below or
// above a directory.

package fsallow

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	const table = `21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 26 0:37 / /srv/a\040b\134c rw,relatime shared:7 master:1 - tmpfs tmpfs rw
41 26 0:38 /x /srv/new\012line rw - fuse.sshfs host: rw
`
	mounts, err := parseMountinfo(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{{"/proc", "proc"}, {"/", "ext4"}, {`/srv/a b\c`, "tmpfs"}, {"/srv/new\nline", "fuse.sshfs"}}
	if len(mounts) != len(want) {
		t.Fatalf("got %q", mounts)
	}
	for i := range want {
		if mounts[i] != want[i] {
			t.Errorf("line %d: got %q, want %q", i, mounts[i], want[i])
		}
	}
	if _, err := parseMountinfo(strings.NewReader("1 2 3 / /x rw no separator\n")); err == nil {
		t.Error("a line without its separator was read")
	}
}

func TestCheckMounts(t *testing.T) {
	mounts := []mount{{"/", "ext4"}, {"/proc", "proc"}, {"/srv", "xfs"}, {"/srv/w/p", "proc"}, {"/srv/v/q", "tmpfs"},
		{"/srv/v/q", "sysfs"}, {"/srv/u", "fuse.sshfs"}, {"/srv/t", "devtmpfs"}, {"/srv/ok", "tmpfs"}, {"/srv/ok/in", "btrfs"}}
	for _, c := range []struct{ dir, want string }{
		{"/srv/w", "/srv/w holds /srv/w/p, a mount of proc"},
		{"/srv", "/srv holds /srv/w/p, a mount of proc"},
		{"/srv/w/p", "/srv/w/p is a mount of proc"},
		{"/srv/v", "/srv/v holds /srv/v/q, a mount of sysfs"}, // hidden below another, still refused
		{"/srv/u/x", "/srv/u/x is on /srv/u, a mount of fuse.sshfs"},
		{"/srv/t", "/srv/t is a mount of devtmpfs"},
		{"/srv/t/shm", "/srv/t/shm is on /srv/t, a mount of devtmpfs"},
		{"/srv/ok", ""}, {"/srv/ok/in/deep", ""}, {"/srv/wp", ""}, {"/srv/w2", ""},
	} {
		err := checkMounts(c.dir, mounts)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.dir, err)
			}
			continue
		}
		var me *MountError
		if !errors.As(err, &me) || !errors.Is(err, ErrNotOrdinary) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.dir, err, c.want)
		}
	}
}

func TestMagics(t *testing.T) {
	for _, c := range []struct {
		magic uint32
		want  string
	}{{0xef53, ""}, {0x01021994, ""}, {0x794c7630, ""}, {0x9fa0, "on the proc file system"}, {0x62656572, "on the sysfs file system"},
		{0x65735546, "on the fuse file system"}, {0x12345678, "on the unknown (magic 0x12345678) file system"}} {
		err := checkMagic(c.magic)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, ErrNotOrdinary)) {
			t.Errorf("0x%x: got %v, want %q", c.magic, err, c.want)
		}
	}
	restore := TestingDisable()
	if err := checkMagic(0x9fa0); err != nil {
		t.Errorf("disabled: %v", err)
	}
	restore()
	if checkMagic(0x9fa0) == nil {
		t.Error("restored: proc allowed")
	}
}
