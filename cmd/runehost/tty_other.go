//go:build !linux

// tty_other.go: whether a file is a terminal, where the terminal driver is
// not asked: any character device.

package main

import "os"

func isTTYFile(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
