//go:build wasip1

// Command garbage is a fake guest that runs the real machine but lies in
// its answers, one lie per operation number:
//
//	1, 2  load and start honestly
//	3     step, then report 5000 more steps used than the slice allows
//	4     answer a pointer outside memory
//	5     answer bytes that are not an answer
//	6     step, then swap the checkpoint for the one given
package main

import (
	"unsafe"

	"github.com/runehost/runehost/guest/port"
)

var (
	rt  = port.NewNative()
	in  []byte
	out []byte
)

//go:wasmexport buf
func buf(n uint32) uint32 {
	in = make([]byte, n)
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

//go:wasmexport call
func call(op, n uint32) uint64 {
	arg := in[:n]
	switch op {
	case 3, 6:
		v, err := port.DecodeAnswer(port.OpStep, port.Serve(rt, port.OpStep, arg))
		if err != nil {
			out = port.Serve(rt, port.OpStep, arg)
			break
		}
		res := v.(*port.Result)
		if op == 3 {
			res.Used += 5000
		} else {
			res.Checkpoint = append(res.Checkpoint, 0)
		}
		out = port.EncodeStepAnswer(res)
	case 4:
		return 0xfff00000<<32 | 64
	case 5:
		out = []byte{0xde, 0xad, 0xbe, 0xef}
	default:
		out = port.Serve(rt, int(op), arg)
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

func main() {}
