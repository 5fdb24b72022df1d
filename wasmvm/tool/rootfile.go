// rootfile.go holds an open file of a mount: a descriptor os.Root opened,
// read and written with the system calls Linux has, so a tool gets what
// Linux gives (pwrite on an O_APPEND file appends, as there).

package tool

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// rootFile serves a file itself, except Seek and Readdir, which wazero's
// adapter of an fs.File does over the same descriptor (go vet holds a
// method named Seek to io.Seeker's signature, which wazero's is not).
type rootFile struct {
	experimentalsys.File // wazero's, for Seek and Readdir
	f                    *os.File
	fd                   int
	dev, ino             uint64 // fixed while it is open
	dir                  bool
	write                bool // its mount is writable
	append               bool
	closed               bool
}

func newRootFile(f *os.File, fd int, st *syscall.Stat_t, dir, write, append bool) (*rootFile, experimentalsys.Errno) {
	h := &handle{f}
	adapted, e := (&sysfs.AdaptFS{FS: h}).OpenFile(".", experimentalsys.O_RDONLY, 0)
	if e != 0 {
		return nil, e
	}
	return &rootFile{File: adapted, f: f, fd: fd, dev: uint64(st.Dev), ino: st.Ino, dir: dir, write: write, append: append}, 0
}

// handle is the descriptor as wazero's adapter sees it. Opening it again,
// as the adapter does to list a directory from its start, rewinds it; its
// Close does nothing (rootFile.Close closes the descriptor).
type handle struct{ f *os.File }

func (h *handle) Open(string) (fs.File, error) {
	_, err := h.f.Seek(0, io.SeekStart)
	return h, err
}
func (h *handle) Stat() (fs.FileInfo, error)                { return h.f.Stat() }
func (h *handle) Read(b []byte) (int, error)                { return h.f.Read(b) }
func (h *handle) Seek(off int64, whence int) (int64, error) { return h.f.Seek(off, whence) }
func (h *handle) Readdir(n int) ([]fs.FileInfo, error)      { return h.f.Readdir(n) }
func (h *handle) Close() error                              { return nil }

func (f *rootFile) Dev() (uint64, experimentalsys.Errno)    { return f.dev, 0 }
func (f *rootFile) Ino() (sys.Inode, experimentalsys.Errno) { return f.ino, 0 }
func (f *rootFile) IsDir() (bool, experimentalsys.Errno)    { return f.dir, 0 }
func (f *rootFile) IsAppend() bool                          { return f.append }
func (f *rootFile) errno(err error) experimentalsys.Errno   { return f.check(errnoOf(err)) }
func (f *rootFile) Sync() experimentalsys.Errno             { return f.errno(f.f.Sync()) }
func (f *rootFile) Datasync() experimentalsys.Errno         { return f.errno(unix.Fdatasync(f.fd)) }

// check is EBADF for a closed file, whatever the call said.
func (f *rootFile) check(e experimentalsys.Errno) experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	return e
}

// SetAppend changes O_APPEND on the descriptor, as fcntl(F_SETFL) does.
func (f *rootFile) SetAppend(on bool) experimentalsys.Errno {
	fl, err := unix.FcntlInt(uintptr(f.fd), unix.F_GETFL, 0)
	if err == nil {
		if on {
			fl |= unix.O_APPEND
		} else {
			fl &^= unix.O_APPEND
		}
		_, err = unix.FcntlInt(uintptr(f.fd), unix.F_SETFL, fl)
	}
	if err == nil {
		f.append = on
	}
	return f.errno(err)
}

func (f *rootFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	fi, err := f.f.Stat()
	if err != nil {
		return sys.Stat_t{}, f.errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (f *rootFile) Read(b []byte) (int, experimentalsys.Errno) {
	if len(b) == 0 {
		return 0, f.check(0)
	}
	n, err := f.f.Read(b)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, f.errno(err)
}

func (f *rootFile) Pread(b []byte, off int64) (int, experimentalsys.Errno) {
	if len(b) == 0 {
		return 0, f.check(0)
	}
	n, err := retry(func() (int, error) { return unix.Pread(f.fd, b, off) })
	return max(n, 0), f.errno(err)
}

func (f *rootFile) Write(b []byte) (int, experimentalsys.Errno) {
	if len(b) == 0 {
		return 0, f.check(0)
	}
	n, err := f.f.Write(b)
	return n, f.errno(err)
}

func (f *rootFile) Pwrite(b []byte, off int64) (int, experimentalsys.Errno) {
	if len(b) == 0 {
		return 0, f.check(0)
	}
	n, err := retry(func() (int, error) { return unix.Pwrite(f.fd, b, off) })
	return max(n, 0), f.errno(err)
}

// retry repeats a call interrupted by a signal (the Go runtime sends them).
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != unix.EINTR {
			return n, err
		}
	}
}

func (f *rootFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return f.check(experimentalsys.EINVAL)
	}
	return f.errno(f.f.Truncate(size))
}

// Utimens refuses on a read-only mount: the kernel lets a file's owner set
// its times through a descriptor opened only to read.
func (f *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if !f.write {
		return f.check(experimentalsys.EROFS)
	}
	ts := [2]unix.Timespec{timespec(atim), timespec(mtim)}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(f.fd), 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0) // futimens
	if e != 0 {
		return f.errno(e)
	}
	return f.check(0)
}

func timespec(ns int64) unix.Timespec {
	if ns == experimentalsys.UTIME_OMIT {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(ns)
}

// Readdir lists up to n entries (all when n <= 0), through wazero's
// adapter; os.File lists a directory opened in a root by fstatat on its
// descriptor.
func (f *rootFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if f.closed || !f.dir {
		return nil, experimentalsys.EBADF
	}
	return f.File.Readdir(n)
}

func (f *rootFile) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	return errnoOf(f.f.Close())
}
