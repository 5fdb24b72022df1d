//go:build wasip1

// compiled.go binds programs to their compiled code, which the host runs on
// this guest's memory, and keeps the collector out of its way.

package main

import (
	"runtime/debug"
	"unsafe"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

//go:wasmimport rune_jit bind
func jitBind(hashPtr, layoutPtr, layoutLen uint32, digest uint64, fnsPtr, fnsLen uint32, steps uint64) uint32

//go:wasmimport rune_jit enter
func jitEnter(slot, m uint32, end uint64)

// bindLater is bind's answer while the code is not compiled (yet); 0 is
// never.
const bindLater = 1<<32 - 1

// compiled is one program's compiled code in the host.
type compiled struct {
	slot    uint32
	leaders [][]bool // by function index; nil for one without compiled code
}

// bound remembers the host's final answer for each program (nil: none);
// digests, the digest of each program asked about.
var (
	bound   = map[[32]byte]*compiled{}
	digests = map[[32]byte]uint64{}
)

var layoutWords = machine.TheLayout.Words()

func bindCompiled(p *compile.Program, steps uint64) (machine.Compiled, bool) {
	if c, ok := bound[p.Hash]; ok {
		if c == nil {
			return nil, true
		}
		return c, true
	}
	digest, ok := digests[p.Hash]
	if !ok {
		digest = p.Digest()
		digests[p.Hash] = digest
	}
	fns := make([]byte, len(p.Funcs)) // the host marks the functions it compiled
	slot := jitBind(uint32(uintptr(unsafe.Pointer(&p.Hash[0]))), uint32(uintptr(unsafe.Pointer(&layoutWords[0]))), uint32(len(layoutWords)), digest,
		uint32(uintptr(unsafe.Pointer(unsafe.SliceData(fns)))), uint32(len(fns)), steps)
	switch slot {
	case bindLater:
		return nil, false
	case 0:
		bound[p.Hash] = nil
		delete(digests, p.Hash)
		return nil, true
	}
	delete(digests, p.Hash)
	c := &compiled{slot: slot, leaders: make([][]bool, len(p.Funcs))}
	for i, f := range p.Funcs {
		if fns[i] == 1 {
			c.leaders[i] = compile.Leaders(f)
		}
	}
	bound[p.Hash] = c
	return c, true
}

func (c *compiled) Compiles(fn int) bool { return fn < len(c.leaders) && c.leaders[fn] != nil }

func (c *compiled) Leader(fn, pc int) bool {
	return fn < len(c.leaders) && pc < len(c.leaders[fn]) && c.leaders[fn][pc]
}

func (c *compiled) Safepoint() { collect(16 << 20) }

// Enter runs compiled code. The code moves Go pointers between Values
// without the write barrier, which is sound only while no collection is
// marking: so the collector is switched off for the rest of the call (the
// switch waits for a cycle under way to end), and this guest collects by
// itself, here, where no compiled code is running.
func (c *compiled) Enter(m *machine.Machine, end uint64) {
	if !gcOff {
		gcPercent = debug.SetGCPercent(-1)
		gcOff = true
	}
	jitEnter(c.slot, uint32(uintptr(unsafe.Pointer(m))), end)
}

var (
	gcOff     bool
	gcPercent int
)

// gcOn gives the collector back at the end of a call.
func gcOn() {
	if gcOff {
		debug.SetGCPercent(gcPercent)
		gcOff = false
	}
}
