// open_linux.go holds the Linux side of opening: the flags that keep an open
// from blocking or taking a terminal, and the kernel's file systems refused.

package fs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const (
	openFlags = unix.O_NONBLOCK | unix.O_NOCTTY
	dirFlag   = unix.O_DIRECTORY
)

// kernelFS are the file systems that are views of the kernel, not files:
// reached through a bind mount, they are as refused as /proc itself.
var kernelFileSystems = map[uint32]string{
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.BPF_FS_MAGIC:        "bpf",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.PSTOREFS_MAGIC:      "pstore",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	unix.DEVPTS_SUPER_MAGIC:  "devpts",
}

// kernelFS refuses an opened file on one of the kernel's file systems.
func kernelFS(f *os.File) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var st unix.Statfs_t
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if name, ok := kernelFileSystems[uint32(st.Type)]; ok {
		return fmt.Errorf("%w: on the kernel's %s file system", ErrPlace, name)
	}
	return nil
}
