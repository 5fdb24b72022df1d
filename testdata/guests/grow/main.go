//go:build wasip1

// Command grow is a fake guest whose call allocates without end: the
// sandbox's memory limit must stop it.
package main

import "unsafe"

var (
	in    []byte
	hoard [][]byte
)

//go:wasmexport buf
func buf(n uint32) uint32 {
	in = make([]byte, n)
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

//go:wasmexport call
func call(op, n uint32) uint64 {
	for {
		b := make([]byte, 1<<20)
		b[0] = 1
		hoard = append(hoard, b)
	}
}

func main() {}
