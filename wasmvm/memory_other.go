//go:build !linux

// memory_other.go: elsewhere than Linux, wazero's own allocator.

package wasmvm

import "github.com/tetratelabs/wazero/experimental"

var memoryAllocator experimental.MemoryAllocator
