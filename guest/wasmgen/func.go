// func.go compiles one Rune function: its blocks, their dispatch, and the
// virtual operand stack that keeps values out of memory inside a block.

package wasmgen

import "github.com/runehost/runehost/guest/compile"

// pool is how many values of each type a block keeps in wasm locals; past
// it, results go to their stack slots in memory.
const pool = 12

// Locals of a Rune function's wasm function.
const (
	lM, lPC, lEnd                 = 0, 1, 2
	lFr, lBase, lNext, lA, lB, lC = 3, 4, 5, 6, 7, 8
	lT                            = 9
	first32                       = 10
	lSteps                        = first32 + pool
	lSPBase                       = lSteps + 1
	lX, lY, lZ                    = lSteps + 2, lSteps + 3, lSteps + 4
	first64                       = lSteps + 5
	lFX, lFY                      = first64 + pool, first64 + pool + 1
	firstF                        = first64 + pool + 2
	num32                         = first32 - 3 + pool
	num64                         = 5 + pool
	numF                          = 2 + pool
)

// ekind is where a value of the virtual operand stack is.
type ekind uint8

const (
	eMem   ekind = iota // in its stack slot
	eLocal              // the value of local slot n (not yet copied)
	eConst              // the scalar of kind k and bits n
	eInt                // an int in wasm local loc
	eFloat              // a float in wasm local loc
	eBool               // a bool (0 or 1) in wasm local loc
)

type entry struct {
	kind ekind
	k    uint32 // eConst: the machine's kind number
	n    uint64 // eConst: the bits; eLocal: the slot
	loc  uint32
}

// fgen compiles one function.
type fgen struct {
	*gen
	f            *compile.Funcode
	c            code
	nlocals      uint32
	lead         []bool
	blocks       []int // leaders' pcs, in order
	bi           int   // the block being compiled
	start        int   // its first pc
	extra        int   // labels opened inside the block's code
	vs           []entry
	n32, n64, nf int   // pool locals used in this block
	pre          []int // steps charged by the instructions before each pc
}

func (g *gen) function(f *compile.Funcode) code {
	if compilable(f) != nil {
		return refuse()
	}
	lead := compile.Leaders(f)
	fg := &fgen{gen: g, f: f, nlocals: uint32(len(f.Locals)), lead: lead, pre: make([]int, len(f.Code)+1)}
	for pc, ins := range f.Code {
		fg.pre[pc+1] = fg.pre[pc] + 1
		switch op, arg := compile.Decode(ins); op {
		case compile.LIST, compile.MAP: // as the interpreter charges them
			fg.pre[pc+1] += arg / int(g.l.ElemsPerStep)
		}
	}
	for pc, isLead := range lead {
		if isLead {
			fg.blocks = append(fg.blocks, pc)
		}
	}
	return fg.body()
}

func (fg *fgen) body() code {
	c := &fg.c
	l := &fg.l
	locals(c, num32, num64, numF)
	// fr = frames + (len-1)*FrameSize; base = stack + fr.base*ValueSize.
	c.get(lM)
	c.mem(opI64Load, l.MachineFrames)
	c.byte(opI32WrapI64)
	c.get(lM)
	c.mem(opI64Load, l.MachineFrames+l.SliceLen)
	c.byte(opI32WrapI64)
	c.i32(1)
	c.byte(opI32Sub)
	c.i32(int32(l.FrameSize))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(lFr)
	c.get(lM)
	c.mem(opI64Load, l.MachineStack)
	c.byte(opI32WrapI64)
	c.get(lFr)
	c.mem(opI64Load, l.FrameBase)
	c.byte(opI32WrapI64)
	c.i32(int32(l.ValueSize))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(lBase)
	c.get(lFr)
	c.mem(opI64Load, l.FrameBase)
	c.i64(int64(fg.nlocals))
	c.byte(opI64Add)
	c.set(lSPBase)
	c.get(lM)
	c.mem(opI64Load, l.MachineSteps)
	c.set(lSteps)
	c.get(lPC)
	c.set(lNext)

	// loop $L { block $X { block $B(n-1) ... block $B0 { br_table } B0 } B1 ... } exit }
	nb := len(fg.blocks)
	c.block(opLoop)
	c.block(opBlock)
	for range nb {
		c.block(opBlock)
	}
	c.get(lNext)
	c.byte(opBrTable)
	c.u32(uint32(len(fg.f.Code)))
	bi := 0
	for pc := range fg.f.Code {
		if bi+1 < nb && fg.blocks[bi+1] == pc {
			bi++
		}
		if fg.blocks[bi] == pc {
			c.u32(uint32(bi))
		} else {
			c.u32(uint32(nb)) // not a leader: hand back
		}
	}
	c.u32(uint32(nb))
	for bi := range nb {
		c.end()
		fg.block(bi)
	}
	c.end() // $X
	c.i32(statusExit)
	c.byte(opReturn)
	c.end() // $L
	c.byte(opUnreachable)
	c.end()
	return *c
}

// block compiles block bi, whose code follows the end of its label.
func (fg *fgen) block(bi int) {
	fg.bi, fg.start, fg.extra = bi, fg.blocks[bi], 0
	fg.n32, fg.n64, fg.nf = 0, 0, 0
	end := len(fg.f.Code)
	if bi+1 < len(fg.blocks) {
		end = fg.blocks[bi+1]
	}
	fg.vs = fg.vs[:0]
	for range fg.f.Depths[fg.start] {
		fg.vs = append(fg.vs, entry{kind: eMem})
	}
	// The whole block runs only if all its steps fit below end.
	fg.exitUnlessFits(end, fg.start)
	for pc := fg.start; pc < end; pc++ {
		if !fg.instr(pc, end) {
			return // the block ended in a branch, a call or a hand-over
		}
	}
	// Falls through to the next leader.
	fg.flush()
	fg.charge(fg.steps(end))
	if end == len(fg.f.Code) {
		fg.exit(end) // off the end: the interpreter faults
	}
}

// exitUnlessFits hands back at pc unless the steps charged so far and the
// block's instructions before end still fit below the slice's end.
func (fg *fgen) exitUnlessFits(end, pc int) {
	c := &fg.c
	c.get(lSteps)
	c.i64(int64(fg.steps(end)))
	c.byte(opI64Add)
	c.get(lEnd)
	c.byte(opI64GtU)
	c.block(opIf)
	fg.extra++
	fg.exit(pc)
	fg.extra--
	c.end()
}

// steps is what the block's instructions before pc charge.
func (fg *fgen) steps(pc int) int { return fg.pre[pc] - fg.pre[fg.start] }

// charge adds n steps to the steps local.
func (fg *fgen) charge(n int) {
	c := &fg.c
	c.get(lSteps)
	c.i64(int64(n))
	c.byte(opI64Add)
	c.set(lSteps)
}

// exit writes the registers back for the instruction at pc, not yet run,
// and hands back. The virtual stack is written to its slots first; the
// block's steps so far are those of the instructions before pc.
func (fg *fgen) exit(pc int) {
	c := &fg.c
	l := &fg.l
	for d := range fg.vs {
		fg.materialize(d, false)
	}
	c.get(lFr)
	c.i64(int64(pc))
	c.mem(opI64Store, l.FramePC)
	c.get(lM)
	c.get(lSPBase)
	c.i64(int64(len(fg.vs)))
	c.byte(opI64Add)
	c.mem(opI64Store, l.MachineSP)
	fg.saveSteps(fg.steps(pc))
	c.i32(statusExit)
	c.byte(opReturn)
}

// saveSteps writes the steps local plus the block's first n steps back to
// the machine.
func (fg *fgen) saveSteps(n int) {
	c := &fg.c
	c.get(lM)
	c.get(lSteps)
	if n > 0 {
		c.i64(int64(n))
		c.byte(opI64Add)
	}
	c.mem(opI64Store, fg.l.MachineSteps)
}

// jump goes to the block at pc, the block's steps charged and its stack
// flushed: forward by leaving the labels up to it, back through the
// dispatch.
func (fg *fgen) jump(target int) {
	c := &fg.c
	tb := fg.blockOf(target)
	if tb > fg.bi {
		// The code of block tb follows the end of label $B(tb), which
		// encloses this block's code at depth tb-bi-1.
		c.br(tb - fg.bi - 1 + fg.extra)
		return
	}
	c.i32(int32(target))
	c.set(lNext)
	c.br(len(fg.blocks) - fg.bi + fg.extra)
}

func (fg *fgen) blockOf(pc int) int {
	lo, hi := 0, len(fg.blocks)
	for lo < hi {
		mid := (lo + hi) / 2
		if fg.blocks[mid] < pc {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// slot is the offset from base of operand slot d; local is local slot i's.
func (fg *fgen) slot(d int) uint32     { return (fg.nlocals + uint32(d)) * fg.l.ValueSize }
func (fg *fgen) local(i uint64) uint32 { return uint32(i) * fg.l.ValueSize }

// flush writes every value of the virtual stack to its slot.
func (fg *fgen) flush() {
	for d := range fg.vs {
		fg.materialize(d, true)
	}
}

// materialize writes the value at depth d to its slot; with keep it is
// then eMem.
func (fg *fgen) materialize(d int, keep bool) {
	e := fg.vs[d]
	if e.kind == eMem {
		return
	}
	fg.store(e, lBase, fg.slot(d))
	if keep {
		fg.vs[d] = entry{kind: eMem}
	}
}

// store writes the value of e to the Value at addr+off (addr an i32 local).
// e must not be eMem unless its slot is given by the caller (see storeFrom).
func (fg *fgen) store(e entry, addr uint32, off uint32) {
	c := &fg.c
	l := &fg.l
	switch e.kind {
	case eLocal:
		fg.copy(lBase, fg.local(e.n), addr, off)
		return
	case eConst:
		fg.scalar(addr, off, e.k, func() { c.i64(int64(e.n)) }, 0)
	case eInt:
		fg.scalar(addr, off, l.KindInt, func() { c.get(e.loc) }, 0)
	case eFloat:
		fg.scalar(addr, off, l.KindFloat, func() { c.get(e.loc); c.byte(opI64FromF64) }, 0)
	case eBool:
		fg.scalar(addr, off, l.KindBool, func() { c.get(e.loc); c.byte(opI64ExtendU) }, 0)
	}
}

// storeFrom writes the value at depth d, wherever it is, to addr+off.
func (fg *fgen) storeFrom(d int, addr, off uint32) {
	if e := fg.vs[d]; e.kind != eMem {
		fg.store(e, addr, off)
		return
	}
	fg.copy(lBase, fg.slot(d), addr, off)
}

// scalar writes a Value of kind k whose bits n pushes; its pointer is p
// (an i32 local, or 0 for none).
func (fg *fgen) scalar(addr, off, k uint32, n func(), p uint32) {
	c := &fg.c
	l := &fg.l
	c.get(addr)
	c.i64(int64(k)) // the kind and the padding after it, as one word
	c.mem(opI64Store, off+l.ValueKind)
	c.get(addr)
	n()
	c.mem(opI64Store, off+l.ValueN)
	c.get(addr)
	if p != 0 {
		c.get(p)
		c.byte(opI64ExtendU)
	} else {
		c.i64(0)
	}
	c.mem(opI64Store, off+l.ValueP)
}

// copy copies a Value, word by word.
func (fg *fgen) copy(src, srcOff, dst, dstOff uint32) {
	copyValue(&fg.c, &fg.l, src, srcOff, dst, dstOff)
}

// newLocal returns a pool local of type t (tI32, tI64, tF64), or false
// when the block has used them all.
func (fg *fgen) newLocal(t byte) (uint32, bool) {
	switch t {
	case tI32:
		if fg.n32 < pool {
			fg.n32++
			return uint32(first32 + fg.n32 - 1), true
		}
	case tI64:
		if fg.n64 < pool {
			fg.n64++
			return uint32(first64 + fg.n64 - 1), true
		}
	default:
		if fg.nf < pool {
			fg.nf++
			return uint32(firstF + fg.nf - 1), true
		}
	}
	return 0, false
}

// push puts the value on the wasm stack (of type t) on the virtual stack
// as kind k, in a pool local, or in its slot when none is left.
func (fg *fgen) push(t byte, k ekind) {
	c := &fg.c
	if loc, ok := fg.newLocal(t); ok {
		c.set(loc)
		fg.vs = append(fg.vs, entry{kind: k, loc: loc})
		return
	}
	var scratch uint32
	switch t {
	case tI32:
		scratch = lT
	case tI64:
		scratch = lX
	default:
		scratch = lFX
	}
	c.set(scratch)
	fg.vs = append(fg.vs, entry{kind: k, loc: scratch})
	fg.materialize(len(fg.vs)-1, true)
}

// kindOf is a value's kind when the generator knows it.
func (fg *fgen) kindOf(e entry) (uint32, bool) {
	switch e.kind {
	case eConst:
		return e.k, true
	case eInt:
		return fg.l.KindInt, true
	case eFloat:
		return fg.l.KindFloat, true
	case eBool:
		return fg.l.KindBool, true
	}
	return 0, false
}

// addr makes the value at depth d addressable and returns where it is:
// its own slot, or the local slot it copies.
func (fg *fgen) addr(d int) uint32 {
	e := fg.vs[d]
	switch e.kind {
	case eMem:
		return fg.slot(d)
	case eLocal:
		return fg.local(e.n)
	}
	fg.materialize(d, true)
	return fg.slot(d)
}

// kind pushes the kind byte of the value at base+off.
func (fg *fgen) kind(off uint32) {
	fg.c.get(lBase)
	fg.c.mem(opI32Load8U, off+fg.l.ValueKind)
}

// bits pushes the payload of the value at base+off.
func (fg *fgen) bits(off uint32) {
	fg.c.get(lBase)
	fg.c.mem(opI64Load, off+fg.l.ValueN)
}

// kindBits sets local lA to the kind and lX to the payload of the value
// at base+off.
func (fg *fgen) kindBits(off uint32) {
	fg.kind(off)
	fg.c.set(lA)
	fg.bits(off)
	fg.c.set(lX)
}

// pointer pushes the heap pointer of the value at base+off, as an i32.
func (fg *fgen) pointer(off uint32) {
	fg.c.get(lBase)
	fg.c.mem(opI64Load, off+fg.l.ValueP)
	fg.c.byte(opI32WrapI64)
}

// guarded compiles an instruction that may hand back: body emits its
// checks, branching to label 0 on failure (at extra depth 0 inside it),
// and its work; on failure the instruction at pc is handed to the
// interpreter with the virtual stack as it was before it.
func (fg *fgen) guarded(pc int, body func()) {
	c := &fg.c
	saved := append([]entry(nil), fg.vs...)
	c.block(opBlock) // $done
	c.block(opBlock) // $fail
	fg.extra += 2
	body()
	c.br(1)
	c.end()
	fg.extra--
	after := fg.vs
	fg.vs = saved
	fg.exit(pc)
	fg.vs = after
	c.end()
	fg.extra--
}
