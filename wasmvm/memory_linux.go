//go:build linux

// memory_linux.go backs each guest's linear memory with one mapping the
// size of its limit, reserved up front and filled by the kernel as pages
// are touched: growing the memory moves nothing. (wazero's default appends
// to a Go slice, copying the whole memory at each growth that outruns its
// capacity: a 200 ms stall in a run whose heap passed 100 MiB.)

package wasmvm

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// memoryAllocator is the allocator instances are made with.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(allocateMemory)

// spare keeps freed mappings, their pages given back, for the next
// instance: mapping 512 MiB costs little, but nothing is cheaper than a
// mapping at hand.
var spare struct {
	sync.Mutex
	maps [][]byte
}

const maxSpare = 8

func allocateMemory(capacity, limit uint64) experimental.LinearMemory {
	size := max(capacity, limit)
	spare.Lock()
	for i, b := range spare.maps {
		if uint64(len(b)) == size {
			spare.maps = append(spare.maps[:i], spare.maps[i+1:]...)
			spare.Unlock()
			return &mappedMemory{buf: b}
		}
	}
	spare.Unlock()
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return &sliceMemory{}
	}
	return &mappedMemory{buf: b}
}

// mappedMemory is a linear memory in a mapping of its maximum size.
type mappedMemory struct{ buf []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

// Free gives the pages back to the kernel, so that the mapping reads as
// zeros (as a fresh one does), and keeps it for another instance.
func (m *mappedMemory) Free() {
	b := m.buf
	if b == nil {
		return
	}
	m.buf = nil
	if unix.Madvise(b, unix.MADV_DONTNEED) == nil {
		spare.Lock()
		if len(spare.maps) < maxSpare {
			spare.maps = append(spare.maps, b)
			spare.Unlock()
			return
		}
		spare.Unlock()
	}
	unix.Munmap(b)
}
