//go:build unix

// umask_unix.go holds umask (the socket is created with no access for
// others) and the check of the socket's directory when it is not the store's.

package server

import (
	"fmt"
	"os"
	"syscall"
)

func umask(m int) int { return syscall.Umask(m) }

// ownDir checks that d is a directory (not a link) of this user that no
// one else may enter.
func ownDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: not a directory of this user's alone (mode %v): remove it, or give a shorter --store path", d, fi.Mode())
	}
	return nil
}
