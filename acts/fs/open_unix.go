//go:build unix && !linux

// open_unix.go holds the side of opening for Unix systems other than Linux:
// the same flags.

package fs

import "syscall"

const (
	openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
	dirFlag   = syscall.O_DIRECTORY
)
