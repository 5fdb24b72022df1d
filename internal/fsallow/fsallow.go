// Package fsallow decides which file systems a prog or a tool may reach:
// only ordinary ones, on a disk or in memory, named in an allow-list. The
// kernel's views (proc, sysfs, cgroup, debugfs...), file systems served by
// another process or machine (FUSE, NFS, SMB, 9p), and any other the list
// does not name are refused, whatever their path: a bind mount of /proc
// inside a granted directory is as refused as /proc itself.
//
// Two checks: Check, of an opened descriptor (one fstatfs, at every open a
// prog or tool makes), and CheckTree, of a directory and every mount below
// it (/proc/self/mountinfo, when a directory is granted or mounted for a
// tool). It imports nothing of runehost: the file acts and the tool sandbox
// both use it. On systems other than Linux both checks allow everything.
package fsallow

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// ErrNotOrdinary is a file or a mount on a file system outside the
// allow-list.
var ErrNotOrdinary = errors.New("not an ordinary file system")

// fsKind is an allowed file system: its names in /proc/self/mountinfo and
// its magic as fstatfs gives it.
type fsKind struct {
	names []string
	magic uint32
}

// allowed are the ordinary file systems, and why each is one. Each holds
// files as written to it: what a read returns was written by someone, and
// a read ends.
var allowed = []fsKind{
	// Disks. ext2, ext3 and ext4 share a magic.
	{[]string{"ext2", "ext3", "ext4"}, 0xef53},
	{[]string{"xfs"}, 0x58465342},
	{[]string{"btrfs"}, 0x9123683e},
	{[]string{"f2fs"}, 0xf2f52010}, // flash (Android, some laptops)
	{[]string{"zfs"}, 0x2fc12fc1},  // out of tree, common on servers
	{[]string{"bcachefs"}, 0xca451a4e},
	// Disks of other systems, read and written by Linux's own drivers
	// (USB sticks, dual boot). The old read-only ntfs driver is left out.
	{[]string{"vfat", "msdos"}, 0x4d44},
	{[]string{"exfat"}, 0x2011bab0},
	{[]string{"ntfs3"}, 0x7366746e},
	// Read-only images (snaps, live systems, container layers).
	{[]string{"squashfs"}, 0x73717368},
	{[]string{"iso9660"}, 0x9660},
	{[]string{"erofs"}, 0xe0f5e1e2},
	// Memory: /tmp on many systems, /dev/shm. devtmpfs has tmpfs's magic
	// (it is a tmpfs holding the device nodes): by name it is refused (a
	// mount of it below a directory), and its devices are refused as
	// devices at each open.
	{[]string{"tmpfs"}, 0x01021994},
	{[]string{"ramfs"}, 0x858458f6},
	// A container's root, layers of the above.
	{[]string{"overlay"}, 0x794c7630},
}

// Left out on purpose, with what they are: FUSE (0x65735546: a process
// serves each read, and may answer slowly, never, or with views of the
// kernel, as lxcfs does /proc's; virtiofs is FUSE too), network file
// systems (NFS 0x6969, SMB, 9p, Ceph: an unreachable server blocks a read
// past a tool's clock, and what a path is can change beneath every check),
// hugetlbfs (memory that is only mapped, never read), ecryptfs and the old
// ntfs driver. Each is one line above, when a host needs it.

// refused names file systems the allow-list leaves out, for the refusal.
var refused = map[uint32]string{
	0x9fa0: "proc", 0x62656572: "sysfs", 0x64626720: "debugfs", 0x74726163: "tracefs",
	0x73636673: "securityfs", 0x27e0eb: "cgroup", 0x63677270: "cgroup2", 0xcafe4a11: "bpf",
	0xde5e81e4: "efivarfs", 0x6165676c: "pstore", 0x42494e4d: "binfmt_misc", 0x1cd1: "devpts",
	0x6e736673: "nsfs", 0x50494446: "pidfs", 0x65735546: "fuse", 0x6969: "nfs", 0xff534d42: "cifs",
	0xfe534d42: "smb2", 0x01021997: "9p", 0x958458f6: "hugetlbfs", 0x187: "autofs",
	0x62656570: "configfs", 0x19800202: "mqueue", 0xf97cff8c: "selinuxfs", 0x43415d53: "smackfs",
	0x7655821: "resctrl", 0x9fa1: "openpromfs", 0xc36400: "ceph", 0xf15f: "ecryptfs", 0x5346544e: "ntfs",
}

var (
	byMagic = map[uint32]string{}
	byName  = map[string]bool{}
)

func init() {
	for _, k := range allowed {
		byMagic[k.magic] = k.names[0]
		for _, n := range k.names {
			byName[n] = true
		}
	}
}

// disabled switches both checks off (TestingDisable).
var disabled atomic.Bool

// TestingDisable switches every check of this package off until the
// returned func is called, so a test can show that the other layers (the
// places no grant covers, the file type checks, os.Root) hold alone. For
// tests only: nothing else may call it.
func TestingDisable() (restore func()) {
	was := disabled.Swap(true)
	return func() { disabled.Store(was) }
}

// FSError is a file on a file system outside the allow-list.
type FSError struct {
	Magic uint32 // as fstatfs gave it
	Name  string // "" when unknown
}

func (e *FSError) Error() string {
	return fmt.Sprintf("on the %s file system, not an ordinary one (a disk's or memory's)", e.name())
}

func (e *FSError) name() string {
	if e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("unknown (magic 0x%x)", e.Magic)
}

// Unwrap makes an FSError an ErrNotOrdinary.
func (e *FSError) Unwrap() error { return ErrNotOrdinary }

// checkMagic refuses a file system magic outside the allow-list.
func checkMagic(magic uint32) error {
	if disabled.Load() {
		return nil
	}
	if _, ok := byMagic[magic]; ok {
		return nil
	}
	return &FSError{Magic: magic, Name: refused[magic]}
}

// Name is the file system of a magic, or "" when the package does not know
// it.
func Name(magic uint32) string {
	if n, ok := byMagic[magic]; ok {
		return n
	}
	return refused[magic]
}

// AllowedType reports whether a file system type, as /proc/self/mountinfo
// names it, is on the allow-list ("fuse.sshfs" is FUSE: refused).
func AllowedType(fstype string) bool { return byName[fstype] }

// MountError is a directory on, or holding, a mount of a file system
// outside the allow-list.
type MountError struct {
	Dir   string // the directory checked, resolved
	Mount string // the mount point
	Type  string // its file system, as mountinfo names it
	// How Dir relates to Mount: "is", "holds" or "is on".
	How string
}

func (e *MountError) Error() string {
	what := fmt.Sprintf("a mount of %s, not an ordinary file system (a disk's or memory's)", e.Type)
	if e.How == "is" {
		return fmt.Sprintf("%s is %s", e.Dir, what)
	}
	return fmt.Sprintf("%s %s %s, %s", e.Dir, e.How, e.Mount, what)
}

// Unwrap makes a MountError an ErrNotOrdinary.
func (e *MountError) Unwrap() error { return ErrNotOrdinary }

// mount is one line of /proc/self/mountinfo: where, and of what.
type mount struct {
	point, fstype string
}

// parseMountinfo reads the mount points and their types from
// /proc/self/mountinfo's format (proc(5)): "36 35 98:0 /mnt1 /mnt2 rw -
// ext3 /dev/root rw", the point the fifth field, the type the first after
// the "-" that ends the optional fields; spaces and the like in a path are
// octal escapes (\040).
func parseMountinfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("mountinfo: a line not understood: %q", sc.Text())
		}
		out = append(out, mount{point: unescape(f[4]), fstype: unescape(f[sep+1])})
	}
	return out, sc.Err()
}

// unescape decodes the kernel's octal escapes (\040 a space, \012 a
// newline, \134 a backslash).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// within reports whether resolved path p is root or under it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// checkMounts refuses dir (resolved) when the mount it is on, or one at or
// below it, is of a type outside the allow-list. Of the mounts at one
// point, the last listed is the one seen; every one below is checked, seen
// or hidden.
func checkMounts(dir string, mounts []mount) error {
	var on *mount
	for i := range mounts {
		m := &mounts[i]
		switch {
		case m.point == dir:
			on = m
			if !AllowedType(m.fstype) {
				return &MountError{Dir: dir, Mount: m.point, Type: m.fstype, How: "is"}
			}
		case within(dir, m.point):
			if !AllowedType(m.fstype) {
				return &MountError{Dir: dir, Mount: m.point, Type: m.fstype, How: "holds"}
			}
		case within(m.point, dir) && (on == nil || len(m.point) >= len(on.point)):
			on = m
		}
	}
	if on != nil && on.point != dir && !AllowedType(on.fstype) {
		return &MountError{Dir: dir, Mount: on.point, Type: on.fstype, How: "is on"}
	}
	return nil
}

// CheckTree refuses a directory that is on, is, or holds anywhere below it
// a mount of a file system outside the allow-list, naming the mount point
// and its type. The directory is resolved first, symlinks followed.
func CheckTree(dir string) error {
	if disabled.Load() {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	return checkTree(real)
}
