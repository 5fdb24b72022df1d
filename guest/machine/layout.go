// layout.go holds the machine's memory layout, for code compiled to run on it.

package machine

import (
	"unsafe"

	"github.com/runehost/runehost/guest/compile"
)

// Compiled is a program compiled to wasm that runs on the machine's own
// memory (guest/wasmgen). Only the sandbox has one; natively the
// interpreter runs everything.
type Compiled interface {
	// Compiles reports whether function fn has compiled code.
	Compiles(fn int) bool
	// Leader reports whether compiled code may be entered at pc of
	// function fn: the start of one of its basic blocks.
	Leader(fn, pc int) bool
	// Safepoint is called now and then between compiled runs, where no
	// compiled code is running (the guest collects garbage there).
	Safepoint()
	// Enter runs compiled code from the innermost frame, which is at a
	// leader, while the charged steps are below end. It stops at an
	// instruction boundary, having done exactly what the interpreter
	// would have done up to there, before anything it hands over.
	Enter(m *Machine, end uint64)
}

// Compiler, when set, gives a program's compiled code, or nil to
// interpret it, for a run that has taken steps so far; final false means
// ask again later in the run (the code is not compiled yet). The
// sandbox's guest sets it.
var Compiler func(p *compile.Program, steps uint64) (c Compiled, final bool)

// Layout is where the machine keeps what compiled code reads and writes:
// byte offsets of fields, sizes of elements, and the kind numbers. Go lays
// structs out the same on every 64-bit port, wasm among them; the guest
// sends its own Layout when it binds a program, and the host compares.
type Layout struct {
	MachineConsts, MachineGlobals, MachineStack, MachineSP, MachineFrames, MachineHandlers, MachineSteps uint32
	MachineLists, MachineVals, MachineIters, ListSize, IterSize, PoolListMax                             uint32
	MachineMaps, MapSize                                                                                 uint32
	MachineBytes, PoolStrMax, PoolRangeMax                                                               uint32

	FrameSize, FrameFn, FrameClosure, FramePC, FrameBase            uint32
	HandlerSize, HandlerFrame                                       uint32
	FuncIndex, FuncNumParams, FuncLocals, FuncMaxStack              uint32
	ClosureFn, ClosureCells, CellValue, ListElems, MapKeys, MapVals uint32
	MapIndex, MapSeed                                               uint32
	IterSrc, IterPos                                                uint32

	ValueSize, ValueKind, ValueN, ValueP uint32
	SliceLen, SliceCap                   uint32

	KindNil, KindBool, KindInt, KindFloat, KindStr, KindList, KindMap, KindFunc, KindBuiltin, KindCell, KindIter, KindUndef uint32

	MaxFrames, ElemsPerStep, BytesPerStep, MaxList, MaxMap, LinearMax uint32
}

// TheLayout is this build's Layout.
var TheLayout = func() Layout {
	var (
		m  Machine
		fr frame
		h  handler
		f  compile.Funcode
		cl closureObj
		c  cellObj
		l  listObj
		mo mapObj
		it iterObj
		v  Value
		s  []Value
	)
	off := func(p, base unsafe.Pointer) uint32 { return uint32(uintptr(p) - uintptr(base)) }
	return Layout{
		MachineConsts:   uint32(unsafe.Offsetof(m.consts)),
		MachineGlobals:  uint32(unsafe.Offsetof(m.globals)),
		MachineStack:    uint32(unsafe.Offsetof(m.stack)),
		MachineSP:       uint32(unsafe.Offsetof(m.sp)),
		MachineFrames:   uint32(unsafe.Offsetof(m.frames)),
		MachineHandlers: uint32(unsafe.Offsetof(m.handlers)),
		MachineSteps:    uint32(unsafe.Offsetof(m.steps)),
		MachineLists:    uint32(unsafe.Offsetof(m.pool) + unsafe.Offsetof(m.pool.lists)),
		MachineVals:     uint32(unsafe.Offsetof(m.pool) + unsafe.Offsetof(m.pool.vals)),
		MachineIters:    uint32(unsafe.Offsetof(m.pool) + unsafe.Offsetof(m.pool.iters)),
		MachineMaps:     uint32(unsafe.Offsetof(m.pool) + unsafe.Offsetof(m.pool.maps)),
		MapSize:         uint32(unsafe.Sizeof(mo)),
		ListSize:        uint32(unsafe.Sizeof(l)),
		IterSize:        uint32(unsafe.Sizeof(it)),
		PoolListMax:     PoolListMax,
		MachineBytes:    uint32(unsafe.Offsetof(m.pool) + unsafe.Offsetof(m.pool.bytes)),
		PoolStrMax:      PoolStrMax,
		PoolRangeMax:    PoolRangeMax,
		FrameSize:       uint32(unsafe.Sizeof(fr)),
		FrameFn:         uint32(unsafe.Offsetof(fr.fn)),
		FrameClosure:    uint32(unsafe.Offsetof(fr.closure)),
		FramePC:         uint32(unsafe.Offsetof(fr.pc)),
		FrameBase:       uint32(unsafe.Offsetof(fr.base)),
		HandlerSize:     uint32(unsafe.Sizeof(h)),
		HandlerFrame:    uint32(unsafe.Offsetof(h.frame)),
		FuncIndex:       uint32(unsafe.Offsetof(f.Index)),
		FuncNumParams:   uint32(unsafe.Offsetof(f.NumParams)),
		FuncLocals:      uint32(unsafe.Offsetof(f.Locals)),
		FuncMaxStack:    uint32(unsafe.Offsetof(f.MaxStack)),
		ClosureFn:       uint32(unsafe.Offsetof(cl.fn)),
		ClosureCells:    uint32(unsafe.Offsetof(cl.cells)),
		CellValue:       uint32(unsafe.Offsetof(c.v)),
		ListElems:       uint32(unsafe.Offsetof(l.elems)),
		MapKeys:         uint32(unsafe.Offsetof(mo.keys)),
		MapVals:         uint32(unsafe.Offsetof(mo.vals)),
		MapIndex:        uint32(unsafe.Offsetof(mo.index)),
		MapSeed:         uint32(unsafe.Offsetof(mo.seed)),
		IterSrc:         uint32(unsafe.Offsetof(it.src)),
		IterPos:         uint32(unsafe.Offsetof(it.pos)),
		ValueSize:       uint32(unsafe.Sizeof(v)),
		ValueKind:       uint32(unsafe.Offsetof(v.k)),
		ValueN:          uint32(unsafe.Offsetof(v.n)),
		ValueP:          uint32(unsafe.Offsetof(v.p)),
		SliceLen:        off(unsafe.Pointer(&(*sliceHeader)(unsafe.Pointer(&s)).len), unsafe.Pointer(&s)),
		SliceCap:        off(unsafe.Pointer(&(*sliceHeader)(unsafe.Pointer(&s)).cap), unsafe.Pointer(&s)),
		KindNil:         uint32(Nil), KindBool: uint32(Bool), KindInt: uint32(Int), KindFloat: uint32(Float),
		KindStr: uint32(Str), KindList: uint32(List), KindMap: uint32(Map), KindFunc: uint32(Func),
		KindBuiltin: uint32(Builtin), KindCell: uint32(cellKind), KindIter: uint32(iterKind), KindUndef: uint32(undefKind),
		MaxFrames: MaxFrames, ElemsPerStep: elemsPerStep, BytesPerStep: bytesPerStep,
		MaxList: MaxList, MaxMap: MaxMap, LinearMax: linearMax,
	}
}()

// sliceHeader is how Go lays out a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// Words returns l as a list of numbers, to compare two builds' layouts.
func (l Layout) Words() []uint32 {
	n := int(unsafe.Sizeof(l) / 4)
	return unsafe.Slice((*uint32)(unsafe.Pointer(&l)), n)
}
