// fsallow_linux.go holds the checks as Linux makes them: fstatfs of a
// descriptor, and the mount table of /proc/self/mountinfo.

package fsallow

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Check refuses an opened file on a file system outside the allow-list:
// one fstatfs.
func Check(f *os.File) error {
	if disabled.Load() {
		return nil
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var st unix.Statfs_t
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = fstatfs(int(fd), &st) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	return checkMagic(uint32(st.Type))
}

// CheckFD is Check of a bare descriptor.
func CheckFD(fd int) error {
	if disabled.Load() {
		return nil
	}
	var st unix.Statfs_t
	if err := fstatfs(fd, &st); err != nil {
		return err
	}
	return checkMagic(uint32(st.Type))
}

func fstatfs(fd int, st *unix.Statfs_t) error {
	for {
		if err := unix.Fstatfs(fd, st); err != unix.EINTR {
			return err
		}
	}
}

// mountinfo is the mount table this process sees.
const mountinfo = "/proc/self/mountinfo"

// checkTree checks the directory's own file system by its descriptor, then
// the mount table.
func checkTree(dir string) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	err = CheckFD(fd)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("%s is %w", dir, err)
	}
	f, err := os.Open(mountinfo)
	if err != nil {
		return fmt.Errorf("the mount table cannot be read, so what is mounted below %s is unknown: %w", dir, err)
	}
	defer f.Close()
	if magicOf(f) != unix.PROC_SUPER_MAGIC {
		return fmt.Errorf("%s is not the kernel's mount table, so what is mounted below %s is unknown", mountinfo, dir)
	}
	mounts, err := parseMountinfo(f)
	if err != nil {
		return err
	}
	return checkMounts(dir, mounts)
}

// magicOf is the file system magic of an open file, 0 when unknown.
func magicOf(f *os.File) uint32 {
	var st unix.Statfs_t
	if err := fstatfs(int(f.Fd()), &st); err != nil {
		return 0
	}
	return uint32(st.Type)
}
