//go:build wasip1

// Command spin is a fake guest whose call never returns: the sandbox must
// stop it (fuel) and keep serving.
package main

import "unsafe"

var in []byte

//go:wasmexport buf
func buf(n uint32) uint32 {
	in = make([]byte, n)
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

var sink uint64

//go:wasmexport call
func call(op, n uint32) uint64 {
	for {
		sink++
	}
}

func main() {}
