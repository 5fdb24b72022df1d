// rootfs.go holds the directory a tool sees, read-only or writable: one
// os.Root per mount, so the kernel resolves every path beneath it component
// by component (openat with O_NOFOLLOW, each symlink read and checked by Go)
// and no host process racing renames can slip a way out between a check and
// a use. wazero's own directories follow symlinks out of a mount (wazero
// issue 2321). Operations on a name itself (mkdir, unlink, rename, symlink)
// run on its parent's descriptor, opened through the root, so they give the
// results and errnos Linux gives. Every descriptor opened for a tool is on
// an ordinary file system (internal/fsallow: one fstatfs each), and a mount
// is refused at the start if a mount of another is below it: a bind mount of
// /proc inside a granted directory is never read.

package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/internal/fsallow"
)

// MaxPath bounds a path a tool may use: resolving is linear in its length
// for each component, and a tool's clock does not stop a host call.
const MaxPath = 4096

// rootFS is one mount. Symlinks are followed only while they stay inside
// (os.Root refuses the rest: an absolute target, or one whose ".." climbs
// above the root); a tool may create one only if it stays inside wherever it
// is resolved, by os.Root or by a host process. A file with a second name is
// refused: that name may be outside.
type rootFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	write    bool
	dev, ino uint64 // of the root: where walking up from a directory stops
}

// newMount mounts dir, which must be a directory and must resolve to
// itself: a granted directory that became (or moved under) a symlink since
// it was granted is refused, as is one that is on, or holds anywhere below
// it, a mount of a file system that is not an ordinary one (fsallow). The
// returned func releases the mount. checkTree false skips the mount table,
// which a caller read already.
func newMount(dir string, write, checkTree bool) (experimentalsys.FS, func(), error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, err
	}
	if real != filepath.Clean(dir) {
		return nil, nil, errors.New(dir + " now resolves elsewhere; grant it again")
	}
	if checkTree {
		if err := fsallow.CheckTree(real); err != nil {
			return nil, nil, err
		}
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, nil, err
	}
	// The root as opened, which the mount serves from.
	d, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	err = fsallow.Check(d)
	fi, serr := d.Stat()
	d.Close()
	if err == nil {
		err = serr
	}
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		r.Close()
		return nil, nil, errors.New(dir + " is not a directory")
	}
	return &rootFS{root: r, write: write, dev: uint64(st.Dev), ino: st.Ino}, func() { r.Close() }, nil
}

// writes are the open flags that could change a file.
const writes = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_APPEND | experimentalsys.O_EXCL

// errnoOf is an error of os.Root or of a system call as an errno. os.Root's
// one refusal that is not an errno, "path escapes from parent", is EPERM,
// as wazero gives for a path whose ".." leads out.
func errnoOf(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return experimentalsys.UnwrapOSError(e)
	}
	for _, known := range []error{fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrClosed, fs.ErrInvalid} {
		if errors.Is(err, known) {
			return experimentalsys.UnwrapOSError(known)
		}
	}
	return experimentalsys.EPERM
}

// rel is a guest path as os.Root takes it.
func rel(p string) string {
	if p == "" || p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// openable refuses what a tool may not open: a pipe, socket or device (an
// open or read may block the host past the tool's clock, and a device may
// do anything), and a regular file with a second name, which may be outside
// the mount (a hard link made on the host).
func openable(fi fs.FileInfo) experimentalsys.Errno {
	switch {
	case fi.IsDir():
		return 0
	case !fi.Mode().IsRegular():
		return experimentalsys.EACCES
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink > 1 {
		return experimentalsys.EACCES
	}
	return 0
}

func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if !r.write && flag&writes != 0 {
		return nil, experimentalsys.EROFS
	}
	if len(p) > MaxPath {
		return nil, experimentalsys.ENAMETOOLONG
	}
	name := rel(p)
	// Look before opening, so that a pipe or device is never opened; the
	// open itself is non-blocking and checked again, for one swapped in.
	stat := r.root.Stat
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		stat = r.root.Lstat
	}
	fi, err := stat(name)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return nil, experimentalsys.ELOOP // O_NOFOLLOW on a symlink, as Linux
	case err == nil && flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) == experimentalsys.O_CREAT|experimentalsys.O_EXCL:
		return nil, experimentalsys.EEXIST
	case err == nil:
		if e := openable(fi); e != 0 {
			return nil, e
		}
	case flag&experimentalsys.O_CREAT != 0 && errnoOf(err) == experimentalsys.ENOENT:
		// The file would be made in its directory: on an ordinary file
		// system only, checked before anything is made.
		dir, _, e := r.parent(p)
		if e != 0 {
			return nil, e
		}
		dir.Close()
	default:
		return nil, errnoOf(err)
	}
	// A file opened to write is truncated only once it is known to be a
	// regular file on an ordinary file system.
	oflag := osFlag(flag)
	trunc := oflag&os.O_TRUNC != 0 && oflag&(os.O_WRONLY|os.O_RDWR) != 0
	if trunc {
		oflag &^= os.O_TRUNC
	}
	f, err := r.root.OpenFile(name, oflag|syscall.O_NONBLOCK|syscall.O_NOCTTY, perm&fs.ModePerm)
	if err != nil {
		return nil, errnoOf(err)
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, errnoOf(err)
	}
	e := openable(fi)
	if e == 0 && fsallow.Check(f) != nil {
		e = experimentalsys.EACCES
	}
	if e == 0 && trunc && fi.Mode().IsRegular() {
		e = errnoOf(f.Truncate(0))
	}
	if e != 0 {
		f.Close()
		return nil, e
	}
	fd := int(f.Fd()) // Fd leaves it blocking, unless the tool asked otherwise
	if flag&experimentalsys.O_NONBLOCK != 0 {
		unix.SetNonblock(fd, true)
	}
	rf, e := newRootFile(f, fd, fi.Sys().(*syscall.Stat_t), fi.IsDir(), r.write, flag&experimentalsys.O_APPEND != 0)
	if e != 0 {
		f.Close()
		return nil, e
	}
	return rf, 0
}

// osFlag is an open flag of wazero's as the kernel's.
func osFlag(f experimentalsys.Oflag) int {
	var out int
	switch f & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		out = os.O_RDWR
	case experimentalsys.O_WRONLY:
		out = os.O_WRONLY
	}
	for _, m := range []struct {
		w  experimentalsys.Oflag
		os int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND}, {experimentalsys.O_CREAT, os.O_CREATE}, {experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_SYNC, os.O_SYNC}, {experimentalsys.O_TRUNC, os.O_TRUNC}, {experimentalsys.O_DIRECTORY, syscall.O_DIRECTORY},
		{experimentalsys.O_DSYNC, syscall.O_DSYNC}, {experimentalsys.O_RSYNC, syscall.O_RSYNC},
	} {
		if f&m.w != 0 {
			out |= m.os
		}
	}
	return out
}

// Stat and Lstat ask os.Root, without opening the file (wazero's adapter
// would open it to stat it).
func (r *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	return statOf(r.root.Stat(rel(p)))
}

func (r *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	return statOf(r.root.Lstat(rel(p)))
}

func statOf(fi fs.FileInfo, err error) (sys.Stat_t, experimentalsys.Errno) {
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

// parent opens, through the root, the directory holding p's last
// component, on an ordinary file system, and returns that component (a
// trailing slash kept: the kernel gives it its meaning without following
// the name). The caller closes it.
func (r *rootFS) parent(p string) (*os.File, string, experimentalsys.Errno) {
	if len(p) > MaxPath {
		return nil, "", experimentalsys.ENAMETOOLONG
	}
	trimmed := strings.TrimRight(p, "/")
	dir, base := path.Split(trimmed)
	switch base {
	case "", ".":
		base = "."
	case "..":
		return nil, "", experimentalsys.EPERM
	}
	if len(trimmed) < len(p) {
		base += "/"
	}
	f, err := r.root.OpenFile(rel(strings.TrimSuffix(dir, "/")), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", errnoOf(err)
	}
	if fsallow.Check(f) != nil {
		f.Close()
		return nil, "", experimentalsys.EACCES
	}
	return f, base, 0
}

// at runs op on p's parent descriptor and its last component.
func (r *rootFS) at(p string, op func(dirfd int, name string) error) experimentalsys.Errno {
	if !r.write {
		return experimentalsys.EROFS
	}
	dir, name, e := r.parent(p)
	if e != 0 {
		return e
	}
	defer dir.Close()
	return errnoOf(op(int(dir.Fd()), name))
}

func (r *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return r.at(p, func(fd int, name string) error { return unix.Mkdirat(fd, name, uint32(perm&fs.ModePerm)) })
}

func (r *rootFS) Rmdir(p string) experimentalsys.Errno {
	return r.at(p, func(fd int, name string) error { return unix.Unlinkat(fd, name, unix.AT_REMOVEDIR) })
}

func (r *rootFS) Unlink(p string) experimentalsys.Errno {
	return r.at(p, func(fd int, name string) error { return unix.Unlinkat(fd, name, 0) })
}

// Rename moves any name, a directory or a symlink included: os.Root
// resolves a moved symlink where it now is, so it leads no further out.
func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	return r.at(from, func(fromfd int, fromName string) error {
		dir, toName, e := r.parent(to)
		if e != 0 {
			return e
		}
		defer dir.Close()
		return unix.Renameat(fromfd, fromName, int(dir.Fd()), toName)
	})
}

// Link is refused: a file with two names is refused on open, since one
// made on the host may be outside (docs/acts.md). EPERM is what Linux gives
// a hard link it does not allow (protected_hardlinks).
func (r *rootFS) Link(string, string) experimentalsys.Errno {
	if !r.write {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

// Symlink makes a link only if its target stays inside both as os.Root
// resolves it and as a host process would: relative, climbing with ".." no
// higher than the mount from where the link is, and no ".." after a name
// (the kernel resolves "a/.." where a is a link from a's target).
func (r *rootFS) Symlink(target, p string) experimentalsys.Errno {
	if !r.write {
		return experimentalsys.EROFS
	}
	if path.IsAbs(target) {
		return experimentalsys.EPERM
	}
	return r.at(p, func(fd int, name string) error {
		depth, e := r.depth(fd)
		if e != 0 {
			return e
		}
		if leadsOut(depth, target, true) {
			return syscall.EPERM
		}
		return unix.Symlinkat(target, fd, name)
	})
}

// Readlink does not say where a link that leads out points.
func (r *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	target, err := r.root.Readlink(rel(p))
	if err != nil {
		return "", errnoOf(err)
	}
	if path.IsAbs(target) {
		return "", experimentalsys.EPERM
	}
	dir, _, e := r.parent(p)
	if e != 0 {
		return "", e
	}
	defer dir.Close()
	depth, e := r.depth(int(dir.Fd()))
	if e != 0 {
		return "", e
	}
	if leadsOut(depth, target, false) {
		return "", experimentalsys.EPERM
	}
	return target, 0
}

// depth counts the directories between dirfd and the root, walking up by
// "..": the directory's real place, whatever names led to it.
func (r *rootFS) depth(dirfd int) (int, experimentalsys.Errno) {
	fd := dirfd
	defer func() {
		if fd != dirfd {
			unix.Close(fd)
		}
	}()
	var prev unix.Stat_t
	for n := 0; n <= MaxPath/2; n++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, errnoOf(err)
		}
		if uint64(st.Dev) == r.dev && uint64(st.Ino) == r.ino {
			return n, 0
		}
		if n > 0 && st.Dev == prev.Dev && st.Ino == prev.Ino {
			return 0, experimentalsys.EPERM // the file system's root: not under the mount
		}
		up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, errnoOf(err)
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		fd, prev = up, st
	}
	return 0, experimentalsys.ENAMETOOLONG
}

// leadsOut reports whether a relative symlink target in a directory depth
// levels below the root climbs above it. Strict, a ".." after a name leads
// out too: os.Root cancels the two, the kernel does not if the name is a
// symlink.
func leadsOut(depth int, target string, strict bool) bool {
	named := false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if strict && named {
				return true
			}
			if depth--; depth < 0 {
				return true
			}
		default:
			named = true
			depth++
		}
	}
	return false
}

// changeable refuses a change by name to a file with a second name, or in
// a directory on a file system that is not an ordinary one (its mode or
// times may be the kernel's settings).
func (r *rootFS) changeable(p string) experimentalsys.Errno {
	if !r.write {
		return experimentalsys.EROFS
	}
	fi, err := r.root.Stat(rel(p))
	if err != nil {
		return errnoOf(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); fi.Mode().IsRegular() && (!ok || st.Nlink > 1) {
		return experimentalsys.EACCES
	}
	dir, _, e := r.parent(p)
	if e == 0 {
		dir.Close()
	}
	return e
}

func (r *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if e := r.changeable(p); e != 0 {
		return e
	}
	return errnoOf(r.root.Chmod(rel(p), perm&fs.ModePerm))
}

func (r *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if e := r.changeable(p); e != 0 {
		return e
	}
	return errnoOf(r.root.Chtimes(rel(p), timeOf(atim), timeOf(mtim)))
}

// timeOf is a wazero timestamp as os.Root takes it: the zero time keeps it.
func timeOf(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
