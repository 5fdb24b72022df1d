// alloc.go compiles the instructions that make objects: LIST and ITER take
// them from the machine's pool (machine.pool), and hand back when it is
// out, for the interpreter to allocate them as it always does.

package wasmgen

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
