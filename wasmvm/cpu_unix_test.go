//go:build unix

// cpu_unix_test.go reads the process's CPU time, for the benchmarks.

package wasmvm

import (
	"syscall"
	"time"
)

// processCPU is the user and system time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
