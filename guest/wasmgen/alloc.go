// alloc.go compiles the instructions that make objects: LIST, MAP and ITER take
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

// mapLit compiles MAP of n pairs whose keys are string constants, all
// different (literalKeys): a map from the pool, its keys and values in
// order (as mapObj.set adds them), with no index (n <= LinearMax). Other
// keys, which the interpreter checks and may find the same, are its own.
func (fg *fgen) mapLit(pc, n int) bool {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	if n > int(l.LinearMax) || 2*n > int(l.PoolRangeMax) || !literalKeys(fg.p, fg.f, pc, n) {
		fg.exit(pc)
		return false
	}
	fg.guarded(pc, func() {
		fg.take(l.MachineMaps, l.MapSize, 0, l.MachineVals, 2*n)
		if n > 0 {
			for i := range n {
				fg.storeFrom(d-2*n+2*i, lB, uint32(i)*l.ValueSize)
				fg.storeFrom(d-2*n+2*i+1, lB, uint32(n+i)*l.ValueSize)
			}
			for j, off := range []uint32{l.MapKeys, l.MapVals} {
				c.get(lA)
				c.get(lB)
				if j == 1 {
					c.i32(int32(uint32(n) * l.ValueSize))
					c.byte(opI32Add)
				}
				c.byte(opI64ExtendU)
				c.mem(opI64Store, off)
				for _, o := range []uint32{l.SliceLen, l.SliceCap} {
					c.get(lA)
					c.i64(int64(n))
					c.mem(opI64Store, off+o)
				}
			}
		}
		fg.vs = fg.vs[:d-2*n]
		fg.scalar(lBase, fg.slot(d-2*n), l.KindMap, func() { c.i64(0) }, lA)
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
	return true
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

// literalKeys reports whether the n keys MAP n at pc of f takes are
// string constants, all different, as a map literal's names are. Each
// key's slot is traced back to the CONST that pushed it: no instruction
// after that CONST and before pc reads or replaces the slot (its depth
// less what it takes from the stack stays above it: "a" + "b" is refused),
// and no jump from outside lands among them. The compiler's code is
// structured, so this holds for a literal's names; anything else is
// handed back.
func literalKeys(p *compile.Program, f *compile.Funcode, pc, n int) bool {
	if n == 0 {
		return true
	}
	top := int(f.Depths[pc])
	seen := map[string]bool{}
	q := pc - 1
	for i := n - 1; i >= 0; i-- {
		slot := top - 2*(n-i) // the depth at which key i was pushed
		for ; q >= 0 && int(f.Depths[q]) > slot; q-- {
			if k := takes(p, f.Code[q]); k < 0 || int(f.Depths[q])-k <= slot {
				return false
			}
		}
		if q < 0 || int(f.Depths[q]) != slot {
			return false
		}
		op, arg := compile.Decode(f.Code[q])
		if op != compile.CONST || arg >= len(p.Consts) || p.Consts[arg].Kind != compile.ConstString || seen[p.Consts[arg].Str] {
			return false
		}
		seen[p.Consts[arg].Str] = true
		q--
	}
	// No jump from outside [q+1, pc) lands in (q+1, pc].
	for j, ins := range f.Code {
		op, arg := compile.Decode(ins)
		switch op {
		case compile.JMP, compile.JMPF, compile.JMPT, compile.NEXT, compile.NEXT2, compile.TRY:
			if (j <= q || j >= pc) && arg > q+1 && arg <= pc {
				return false
			}
		}
	}
	return true
}

// takes is how many values from the top of the stack instruction ins
// reads or replaces (opcode.go's stack effects), or -1 when unknown.
func takes(p *compile.Program, ins uint32) int {
	op, arg := compile.Decode(ins)
	switch op {
	case compile.NOP, compile.NIL, compile.TRUE, compile.FALSE, compile.CONST, compile.SMALLINT,
		compile.LOCAL, compile.CELL, compile.NEWCELL, compile.WRAPCELL, compile.FREE, compile.LOCALREF,
		compile.FREEREF, compile.GLOBAL, compile.BUILTIN, compile.JMP, compile.TRY, compile.ENDTRY:
		return 0
	case compile.POP, compile.DUP, compile.SETLOCAL, compile.SETCELL, compile.SETFREE, compile.SETGLOBAL,
		compile.NEG, compile.NOT, compile.JMPF, compile.JMPT, compile.ATTR, compile.RETURN, compile.ITER,
		compile.NEXT, compile.NEXT2, compile.THROW, compile.ACT, compile.AWAIT:
		return 1
	case compile.DUP2, compile.ADD, compile.SUB, compile.MUL, compile.DIV, compile.MOD, compile.EQ,
		compile.NE, compile.LT, compile.LE, compile.GT, compile.GE, compile.INDEX, compile.SETATTR:
		return 2
	case compile.SETINDEX:
		return 3
	case compile.CALL:
		return arg + 1
	case compile.LIST:
		return arg
	case compile.MAP:
		return 2 * arg
	case compile.FUNC:
		if arg < len(p.Funcs) {
			return p.Funcs[arg].NumFree
		}
	}
	return -1
}
