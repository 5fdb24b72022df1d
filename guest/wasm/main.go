//go:build wasip1

// Command wasm is the Rune machine as a WebAssembly reactor module
// (GOOS=wasip1, -buildmode=c-shared): the guest that wasmvm runs in wazero.
//
// Exports (all integers are i32 or i64):
//
//	buf(n i32) -> ptr i32            a guest buffer of n bytes for the next call's argument
//	call(op i32, n i32) -> i64       run operation op (1 load, 2 start, 3 step) on the first
//	                                 n bytes of the buffer; answers ptr<<32 | len, valid until
//	                                 the next call
//
// Imports, from module "rune_jit" (compiled code, guest/wasmgen):
//
//	bind(hash_ptr, layout_ptr, layout_len i32, digest i64) -> slot i32
//	                                 asks for the program's compiled code; 0 is none
//	enter(slot, m i32, end i64)      runs it on the machine at m (machine.Compiled)
//
// Imports, from module "rune_host":
//
//	act(tag_ptr, tag_len, args_ptr, args_len i32, seq i64) -> n i32
//	                                 offers an act to the host; 0 suspends the step (the host
//	                                 gets an Act result), n > 0 is the length of an encoded
//	                                 reply the host holds, which act_reply copies in
//	act_reply(ptr i32)               copies the held reply to ptr
//
// The encodings are guest/port's wire format. Everything crossing is bytes in
// linear memory; nothing else of the host is reachable.
package main

import (
	"runtime"
	"runtime/metrics"
	"unsafe"

	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/port"
)

var (
	rt  = port.NewNative()
	in  []byte // the argument buffer handed out by buf
	out []byte // the last answer, kept alive until the next call
)

func init() {
	rt.OnAct = offerAct
	machine.Compiler = bindCompiled
}

//go:wasmexport buf
func buf(n uint32) uint32 {
	if uint32(cap(in)) < n {
		in = make([]byte, n)
	}
	in = in[:n]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

//go:wasmexport call
func call(op, n uint32) uint64 {
	if n > uint32(len(in)) {
		n = uint32(len(in))
	}
	out = port.Serve(rt, int(op), in[:n])
	gcOn()
	// Goroutines run only while an export runs: let the garbage collector's
	// workers finish a cycle before returning to the host.
	runtime.Gosched()
	collect(32 << 20)
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

//go:wasmimport rune_host act
func hostAct(tagPtr, tagLen, argsPtr, argsLen uint32, seq uint64) uint32

//go:wasmimport rune_host act_reply
func hostActReply(ptr uint32)

func offerAct(tag string, args []byte, seq uint64) ([]byte, bool) {
	tagBytes := []byte(tag)
	n := hostAct(ptrOf(tagBytes), uint32(len(tagBytes)), ptrOf(args), uint32(len(args)), seq)
	if n == 0 {
		return nil, false
	}
	reply := make([]byte, n)
	hostActReply(ptrOf(reply))
	return reply, true
}

func ptrOf(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

func main() {}

// gcStats are the runtime's counters that collect reads: cheap to read, no
// stop of the world.
var (
	gcStats    = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	lastCycles uint64 // cycles completed at the last look
	lastAllocs uint64 // bytes allocated by then
)

// collect finishes a collection when one is overdue. In a reactor the
// collector's workers run only when the one goroutine yields; a Gosched is
// not always enough for a cycle to finish, and a prog that allocates fast
// (doubling a list) then grew the heap past the memory limit with garbage
// (measured: 512 MiB in use for 72 MiB of live data). So once the bytes
// allocated since the last finished cycle pass the live heap (and floor:
// 32 MiB here), the guest collects in full before answering. While compiled
// code runs the collector is off (compiled.go), and the guest collects at
// the machine's safepoints as the collector would have: once as much was
// allocated as is live (and 16 MiB: in wasm a collection is all on the
// one thread; against 16, 4 MiB made strbuild and sort a fifth to a third
// slower, and 32 MiB made strbuild slower again, 56 ms against 47 side by
// side: docs/BENCHMARKS.md).
func collect(floor uint64) {
	metrics.Read(gcStats)
	allocs, live, cycles := gcStats[0].Value.Uint64(), gcStats[1].Value.Uint64(), gcStats[2].Value.Uint64()
	if cycles != lastCycles {
		lastCycles, lastAllocs = cycles, allocs
		return
	}
	if allocs-lastAllocs > max(floor, live) {
		runtime.GC()
		metrics.Read(gcStats)
		lastCycles, lastAllocs = gcStats[2].Value.Uint64(), gcStats[0].Value.Uint64()
	}
}
