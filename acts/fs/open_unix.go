//go:build unix && !linux

// open_unix.go holds the side of opening for Unix systems other than Linux:
// the same flags; the kernel's file systems are known only on Linux.

package fs

import (
	"os"
	"syscall"
)

const (
	openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
	dirFlag   = syscall.O_DIRECTORY
)

func kernelFS(*os.File) error { return nil }
