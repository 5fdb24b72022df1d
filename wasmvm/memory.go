// memory.go holds the fallback linear memory: a Go slice grown by
// appending, as wazero's default does.

package wasmvm

// sliceMemory is a linear memory in a Go slice.
type sliceMemory struct{ buf []byte }

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if n := uint64(len(m.buf)); size > n {
		m.buf = append(m.buf, make([]byte, size-n)...)
	}
	return m.buf[:size]
}

func (m *sliceMemory) Free() { m.buf = nil }
