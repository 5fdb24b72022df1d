// fs_linux.go holds what the store asks of the file system on Linux: the
// directory lock, free space, and the identity of a file's contents.

package store

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking lock on f; errBusy when another
// process holds it. The kernel drops it when the process dies.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errBusy
	}
	return err
}

// freeSpace is the space an unprivileged writer may still use on the file
// system of dir, in bytes.
func freeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// stampOf identifies a file's contents without reading them: the change
// time moves with every write, truncation or new link, and no process can
// set it back.
func stampOf(fi os.FileInfo) fileStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{Size: fi.Size()}
	}
	return fileStamp{Size: fi.Size(), Ctime: st.Ctim.Nano(), Inode: st.Ino, Allocated: st.Blocks * 512}
}

// ownLogSync: a sync of a file through any descriptor flushes the pages
// its mappings dirtied (Linux's page cache is the file's), so the store
// syncs Badger's logs itself (sync.go).
const ownLogSync = true

// datasync flushes f's data (and what reading it back needs) to disk, as
// Badger's msync of its mapped logs does: not its times.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
