//go:build unix

// umask_unix.go holds umask: the socket is created with no access for others.

package server

import "syscall"

func umask(m int) int { return syscall.Umask(m) }
