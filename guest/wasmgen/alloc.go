// alloc.go compiles the instructions that make objects: LIST and ITER take
// them from the machine's pool (machine.pool), and hand back when it is
// out, for the interpreter to allocate them as it always does.

package wasmgen

import (
	"slices"

	"github.com/runehost/runehost/guest/compile"
)

// take claims one object of size bytes from the pool slice at off of the
// machine, and width more slots of a second one (at off2, when width > 0)
// into local lB, branching to fail when either is out; the object's
// address is left in lA.
func (fg *fgen) take(off, size uint32, fail int, off2 uint32, width int) {
	c := &fg.c
	l := &fg.l
	// X = len; fail if X >= cap
	c.get(lM)
	c.mem(opI64Load, off+l.SliceLen)
	c.tee(lX)
	c.get(lM)
	c.mem(opI64Load, off+l.SliceCap)
	c.byte(opI64GeS)
	c.brIf(fail)
	if width > 0 {
		// Y = len2; fail if Y + width > cap2 (an empty list's pointer too
		// stays inside the slab)
		c.get(lM)
		c.mem(opI64Load, off2+l.SliceLen)
		c.tee(lY)
		c.i64(int64(max(width, 1)))
		c.byte(opI64Add)
		c.get(lM)
		c.mem(opI64Load, off2+l.SliceCap)
		c.byte(opI64GtS)
		c.brIf(fail)
	}
	fg.bump(off, size, lX, 1, lA)
	if width > 0 {
		fg.bump(off2, l.ValueSize, lY, width, lB)
	}
}

// bump sets the pool slice at off's length to local n plus by, and local
// dst to the address of its element n.
func (fg *fgen) bump(off, size, n uint32, by int, dst uint32) {
	c := &fg.c
	c.get(lM)
	c.get(n)
	c.i64(int64(by))
	c.byte(opI64Add)
	c.mem(opI64Store, off+fg.l.SliceLen)
	c.get(lM)
	c.mem(opI64Load, off)
	c.byte(opI32WrapI64)
	c.get(n)
	c.byte(opI32WrapI64)
	c.i32(int32(size))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(dst)
}

// list compiles LIST n, as the interpreter runs it: a new list of the n
// values on top of the stack.
func (fg *fgen) list(pc, n int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		fg.take(l.MachineLists, l.ListSize, 0, l.MachineVals, max(n, 1))
		if n == 0 {
			// Claim none of the slot checked for: the empty list's
			// elements point at it, with no room.
			c.get(lM)
			c.get(lY)
			c.mem(opI64Store, l.MachineVals+l.SliceLen)
		}
		for i := range n {
			fg.storeFrom(d-n+i, lB, uint32(i)*l.ValueSize)
		}
		c.get(lA)
		c.get(lB)
		c.byte(opI64ExtendU)
		c.mem(opI64Store, l.ListElems)
		for _, off := range []uint32{l.SliceLen, l.SliceCap} {
			c.get(lA)
			c.i64(int64(n))
			c.mem(opI64Store, l.ListElems+off)
		}
		fg.vs = fg.vs[:d-n]
		fg.scalar(lBase, fg.slot(d-n), l.KindList, func() { c.i64(0) }, lA)
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}

// iter compiles ITER over a list, map or string: an iterator at its start.
// Anything else is the interpreter's, to raise its error.
func (fg *fgen) iter(pc int) bool {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	if _, ok := fg.kindOf(fg.vs[d-1]); ok {
		fg.exit(pc) // a scalar: not iterable
		return false
	}
	fg.guarded(pc, func() {
		off := fg.addr(d - 1)
		fg.kind(off)
		c.set(lA)
		c.get(lA)
		c.i32(int32(l.KindList))
		c.byte(opI32Ne)
		c.get(lA)
		c.i32(int32(l.KindMap))
		c.byte(opI32Ne)
		c.byte(opI32And)
		c.get(lA)
		c.i32(int32(l.KindStr))
		c.byte(opI32Ne)
		c.byte(opI32And)
		c.brIf(0)
		fg.take(l.MachineIters, l.IterSize, 0, 0, 0)
		// A fresh slab's iterators are zero: at their start.
		fg.copy(lBase, off, lA, l.IterSrc)
		fg.vs = fg.vs[:d-1]
		fg.scalar(lBase, fg.slot(d-1), l.KindIter, func() { c.i64(0) }, lA)
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
	return true
}

// builtinRange is range's index among the builtins.
var builtinRange = slices.Index(compile.Builtins, "range")

// rangeList compiles CALL of range(stop) or range(start, stop), as bRange
// makes it, for a list of at most PoolRangeMax ints; anything else (a step,
// not an int, a longer list) is the interpreter's. The call ends its block.
func (fg *fgen) rangeList(pc, arg int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		// Z = start; C = n = stop - start (0 if stop <= start), at most PoolRangeMax
		if arg == 1 {
			c.i64(0)
		} else {
			fg.intOf(d-2, 0)
		}
		c.set(lZ)
		fg.intOf(d-1, 0)
		c.tee(lX)
		c.get(lZ)
		c.byte(opI64LeS)
		c.block(opIf)
		c.i64(0)
		c.set(lX)
		c.byte(opElse)
		c.get(lX)
		c.get(lZ)
		c.byte(opI64Sub)
		c.set(lX) // exact as unsigned: stop > start
		c.end()
		c.get(lX)
		c.i64(int64(l.PoolRangeMax))
		c.byte(opI64GtU)
		c.brIf(0)
		c.get(lX)
		c.byte(opI32WrapI64)
		c.set(lC)
		// n values must fit in the slab: fail if len + n > cap
		c.get(lM)
		c.mem(opI64Load, l.MachineVals+l.SliceLen)
		c.get(lC)
		c.byte(opI64ExtendU)
		c.byte(opI64Add)
		c.get(lM)
		c.mem(opI64Load, l.MachineVals+l.SliceCap)
		c.byte(opI64GtS)
		c.brIf(0)
		fg.take(l.MachineLists, l.ListSize, 0, l.MachineVals, 1)
		c.get(lM) // claim n of the slots checked for
		c.get(lY)
		c.get(lC)
		c.byte(opI64ExtendU)
		c.byte(opI64Add)
		c.mem(opI64Store, l.MachineVals+l.SliceLen)
		c.get(lA)
		c.get(lB)
		c.byte(opI64ExtendU)
		c.mem(opI64Store, l.ListElems)
		for _, off := range []uint32{l.SliceLen, l.SliceCap} {
			c.get(lA)
			c.get(lC)
			c.byte(opI64ExtendU)
			c.mem(opI64Store, l.ListElems+off)
		}
		// for T = 0; T < n; T++, B += ValueSize { *B = int(start + T) }
		c.i32(0)
		c.set(lT)
		c.block(opBlock)
		c.block(opLoop)
		c.get(lT)
		c.get(lC)
		c.byte(opI32GeS)
		c.brIf(1)
		fg.scalar(lB, 0, l.KindInt, func() {
			c.get(lZ)
			c.get(lT)
			c.byte(opI64ExtendU)
			c.byte(opI64Add)
		}, 0)
		c.get(lB)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Add)
		c.set(lB)
		c.get(lT)
		c.i32(1)
		c.byte(opI32Add)
		c.set(lT)
		c.br(0)
		c.end()
		c.end()
		// The elements' steps, as chargeElems charges them.
		c.get(lSteps)
		c.get(lC)
		c.i32(int32(l.ElemsPerStep))
		c.byte(opI32DivU)
		c.byte(opI64ExtendU)
		c.byte(opI64Add)
		c.set(lSteps)
		fg.vs = fg.vs[:d-1-arg]
		fg.scalar(lBase, fg.slot(d-1-arg), l.KindList, func() { c.i64(0) }, lA)
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}
