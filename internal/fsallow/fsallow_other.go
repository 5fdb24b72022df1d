//go:build !linux

// fsallow_other.go: on systems other than Linux, the file systems are not
// told apart (their kernels' views are not reached by a bind mount), and
// both checks allow everything.

package fsallow

import "os"

// Check allows every file here.
func Check(*os.File) error { return nil }

// CheckFD allows every descriptor here.
func CheckFD(int) error { return nil }

func checkTree(string) error { return nil }
