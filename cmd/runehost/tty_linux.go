// tty_linux.go: whether a file is a terminal, asked of the terminal driver
// (a character device such as /dev/null is not one).

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

func isTTYFile(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
