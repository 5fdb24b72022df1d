//go:build !unix

// cpu_other_test.go: no CPU time where the benchmarks cannot read it.

package wasmvm

import "time"

func processCPU() time.Duration { return 0 }
