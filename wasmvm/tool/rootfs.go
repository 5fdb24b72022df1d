// rootfs.go holds the confined directory a tool sees: wazero's own WASI
// directory follows symlinks out of a mount (wazero issue 2321, "sandboxing
// WASI is beyond our scope"), so every path is resolved on the host, symlinks
// included, and refused unless it stays inside the granted root.

package tool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/runehost/runehost/internal/confine"
)

// confined is a directory mount that refuses to leave its root. The guest
// cannot create symlinks or hard links; a symlink already there is followed
// only if it resolves inside the root.
type confined struct {
	experimentalsys.FS
	root  string // with symlinks resolved
	write bool
}

// newConfined mounts dir, which must be a directory and must resolve to
// itself: a granted directory that became (or moved under) a symlink since
// it was granted is refused.
//
// A read-only mount is served through os.Root, which the kernel keeps
// inside the directory on every open (no check-then-use race); a writable
// one needs calls os.Root's file system does not offer, and is checked
// path by path (confined). The returned func releases the mount.
func newConfined(dir string, write bool) (experimentalsys.FS, func(), error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, err
	}
	if root != filepath.Clean(dir) {
		return nil, nil, errors.New(dir + " now resolves elsewhere; grant it again")
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, nil, errors.New(dir + " is not a directory")
	}
	if !write {
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, nil, err
		}
		return readOnly{FS: &sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: r.FS()}}, root: r}, func() { r.Close() }, nil
	}
	return &confined{FS: sysfs.DirFS(root), root: root, write: true}, func() {}, nil
}

// writes are the open flags that could change a file.
const writes = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_APPEND | experimentalsys.O_EXCL

// readOnly refuses, with EROFS, every open that asks to change a file
// (wazero's ReadFS passes O_TRUNC and O_CREAT on a read-only open through).
type readOnly struct {
	experimentalsys.FS
	root *os.Root
}

// rel is a guest path as os.Root takes it.
func rel(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// special are the files a tool may not open: opening a pipe blocks the host
// (a tool's clock cannot stop a host call), a device may do anything.
const special = fs.ModeNamedPipe | fs.ModeDevice | fs.ModeCharDevice | fs.ModeSocket | fs.ModeIrregular

func (r readOnly) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&writes != 0 {
		return nil, experimentalsys.EROFS
	}
	if len(p) > MaxPath {
		return nil, experimentalsys.ENAMETOOLONG
	}
	if fi, err := r.root.Stat(rel(p)); err == nil && fi.Mode()&special != 0 {
		return nil, experimentalsys.EACCES
	}
	return r.FS.OpenFile(p, flag, perm)
}

// Stat and Lstat ask os.Root, without opening the file (wazero's adapter
// would open it to stat it).
func (r readOnly) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	return stat(r.root.Stat(rel(p)))
}

func (r readOnly) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	return stat(r.root.Lstat(rel(p)))
}

func stat(fi fs.FileInfo, err error) (sys.Stat_t, experimentalsys.Errno) {
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.NewStat_t(fi), 0
}

// MaxPath bounds a path a tool may use: resolving is linear in its length
// for each component, and a tool's wall clock does not stop the host.
const MaxPath = 4096

// check refuses a guest path that leaves the root. With leaf false, only
// the parent is resolved: for operations on a name itself (lstat, unlink,
// rename), which do not follow it.
func (c *confined) check(p string, leaf bool) experimentalsys.Errno {
	if len(p) > MaxPath {
		return experimentalsys.ENAMETOOLONG
	}
	if strings.HasSuffix(p, "/") {
		leaf = true // "name/" follows a symlink name
	}
	full := filepath.Join(c.root, filepath.FromSlash(p))
	if full == c.root {
		return 0
	}
	if !leaf {
		full = filepath.Join(filepath.Dir(full), ".")
	}
	real, err := confine.Resolve(full)
	if err != nil || !confine.Within(c.root, real) {
		return experimentalsys.EACCES
	}
	return 0
}

func (c *confined) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if !c.write && flag&writes != 0 {
		return nil, experimentalsys.EROFS
	}
	if e := c.check(p, true); e != 0 {
		return nil, e
	}
	return c.FS.OpenFile(p, flag, perm)
}

func (c *confined) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if e := c.check(p, false); e != 0 {
		return sys.Stat_t{}, e
	}
	return c.FS.Lstat(p)
}

func (c *confined) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if e := c.check(p, true); e != 0 {
		return sys.Stat_t{}, e
	}
	return c.FS.Stat(p)
}

func (c *confined) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if !c.write {
		return experimentalsys.EROFS
	}
	if e := c.check(p, true); e != 0 {
		return e
	}
	return c.FS.Mkdir(p, perm)
}

func (c *confined) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if !c.write {
		return experimentalsys.EROFS
	}
	if e := c.check(p, true); e != 0 {
		return e
	}
	return c.FS.Chmod(p, perm)
}

func (c *confined) Rename(from, to string) experimentalsys.Errno {
	if !c.write {
		return experimentalsys.EROFS
	}
	if e := c.check(from, false); e != 0 {
		return e
	}
	// Only a file may be moved: moving a symlink, or a directory that may
	// hold one, changes where a relative link points.
	if st, e := c.FS.Lstat(from); e != 0 {
		return e
	} else if st.Mode&fs.ModeType != 0 {
		return experimentalsys.EPERM
	}
	if e := c.check(to, false); e != 0 {
		return e
	}
	return c.FS.Rename(from, to)
}

func (c *confined) Rmdir(p string) experimentalsys.Errno {
	if !c.write {
		return experimentalsys.EROFS
	}
	if e := c.check(p, false); e != 0 {
		return e
	}
	return c.FS.Rmdir(p)
}

func (c *confined) Unlink(p string) experimentalsys.Errno {
	if !c.write {
		return experimentalsys.EROFS
	}
	if e := c.check(p, false); e != 0 {
		return e
	}
	return c.FS.Unlink(p)
}

func (c *confined) Readlink(p string) (string, experimentalsys.Errno) {
	if e := c.check(p, true); e != 0 { // a link that leads out says nothing
		return "", e
	}
	return c.FS.Readlink(p)
}

func (c *confined) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if !c.write {
		return experimentalsys.EROFS
	}
	if e := c.check(p, true); e != 0 {
		return e
	}
	return c.FS.Utimens(p, atim, mtim)
}

// Link and Symlink are refused: a link is how a guest would build a way out.
func (c *confined) Link(string, string) experimentalsys.Errno    { return experimentalsys.EPERM }
func (c *confined) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }
