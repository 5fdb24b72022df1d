// calls.go compiles list elements, calls, returns and loops over lists and maps.

package wasmgen

import (
	"slices"

	"github.com/runehost/runehost/guest/compile"
)

// element leaves in lC the address of element i (depth di) of the list at
// base+ax, branching to label fail unless i is an int in range, negative
// indexes counting from the end.
func (fg *fgen) element(ax uint32, di, fail int) {
	c := &fg.c
	l := &fg.l
	fg.intOf(di, fail)
	c.set(lX)
	fg.pointer(ax)
	c.tee(lA)
	c.mem(opI64Load, l.ListElems+l.SliceLen)
	c.set(lY)
	// j = i < 0 ? i + len : i; in range iff j <u len
	c.get(lX)
	c.get(lY)
	c.byte(opI64Add)
	c.get(lX)
	c.get(lX)
	c.i64(0)
	c.byte(opI64LtS)
	c.byte(opSelect)
	c.tee(lX)
	c.get(lY)
	c.byte(opI64GeU)
	c.brIf(fail)
	c.get(lA)
	c.mem(opI64Load, l.ListElems)
	c.byte(opI32WrapI64)
	c.get(lX)
	c.byte(opI32WrapI64)
	c.i32(int32(l.ValueSize))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(lC)
}

// index compiles INDEX and SETINDEX of a list element or a map entry
// (strs.go); strings' characters and errors' fields are the interpreter's.
func (fg *fgen) index(pc int, op compile.Opcode) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	dx := d - 2
	if op == compile.SETINDEX {
		dx = d - 3
	}
	if _, ok := fg.kindOf(fg.vs[dx]); ok {
		fg.exit(pc) // a scalar: not indexable
		return
	}
	fg.guarded(pc, func() {
		ax := fg.addr(dx)
		fg.kind(ax)
		c.i32(int32(l.KindList))
		c.byte(opI32Eq)
		c.block(opIf)
		fg.element(ax, dx+1, 1)
		if op == compile.INDEX {
			fg.copy(lC, 0, lBase, fg.slot(d-2))
		} else {
			fg.storeFrom(d-1, lC, 0)
		}
		c.byte(opElse)
		if op == compile.INDEX {
			fg.mapIndex(ax, func() { fg.keyAddr(d - 1) }, nil, fg.slot(d-2))
		} else {
			fg.mapIndex(ax, func() { fg.keyAddr(d - 2) }, func() { fg.keyAddr(d - 1) }, 0)
		}
		c.end()
		if op == compile.INDEX {
			fg.vs = fg.vs[:d-2]
			fg.vs = append(fg.vs, entry{kind: eMem})
			return
		}
		fg.vs = fg.vs[:d-3]
	})
}

// builtinSqrt is sqrt's index among the builtins.
var builtinSqrt = slices.Index(compile.Builtins, "sqrt")

// builtinAt is the index of the builtin at depth d of the virtual stack,
// known when the block loaded it, or -1.
func (fg *fgen) builtinAt(d int) int {
	if d < 0 {
		return -1
	}
	if e := fg.vs[d]; e.kind == eConst && e.k == fg.l.KindBuiltin {
		return int(e.n)
	}
	return -1
}

// sqrt compiles CALL of the builtin sqrt, as bSqrt: an int or a float at
// least 0 (or NaN), the float's square root; anything else, a negative
// number among them, is the interpreter's.
func (fg *fgen) sqrt(pc int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		switch e := fg.vs[d-1]; e.kind {
		case eFloat:
			c.get(e.loc)
		case eInt:
			c.get(e.loc)
			c.byte(opF64FromI64)
		default:
			fg.kindBits(fg.addr(d - 1))
			c.get(lA)
			c.i32(int32(l.KindFloat))
			c.byte(opI32Eq)
			c.block(opIf)
			c.get(lX)
			c.byte(opF64FromBits)
			c.set(lFX)
			c.byte(opElse)
			c.get(lA)
			c.i32(int32(l.KindInt))
			c.byte(opI32Ne)
			c.brIf(1) // $fail, outside the if
			c.get(lX)
			c.byte(opF64FromI64)
			c.set(lFX)
			c.end()
			c.get(lFX)
		}
		c.tee(lFX)
		c.f64(0)
		c.byte(opF64Lt)
		c.brIf(0)
		c.get(lFX)
		c.byte(opF64Sqrt)
		fg.vs = fg.vs[:d-2]
		fg.push(tF64, eFloat)
	})
}

// call compiles CALL of a closure: the frame is pushed as fast.go pushes
// it and the callee's wasm function called; a builtin, a wrong count of
// arguments, frames or stack to grow, or the call depth limit are the
// interpreter's.
func (fg *fgen) call(pc, arg int) {
	c := &fg.c
	l := &fg.l
	fg.flush()
	d := len(fg.vs)
	fg.guarded(pc, func() {
		fo := fg.slot(d - arg - 1)
		fg.kind(fo)
		c.i32(int32(l.KindFunc))
		c.byte(opI32Ne)
		c.brIf(0)
		fg.pointer(fo)
		c.tee(lA) // the closure
		c.mem(opI64Load, l.ClosureFn)
		c.byte(opI32WrapI64)
		c.tee(lB) // its Funcode
		c.mem(opI64Load, l.FuncIndex)
		c.i64(int64(fg.n))
		c.byte(opI64GeU)
		c.brIf(0)
		c.get(lB)
		c.mem(opI64Load, l.FuncNumParams)
		c.i64(int64(arg))
		c.byte(opI64Ne)
		c.brIf(0)
		// lX = len(frames), below MaxFrames and cap(frames)
		c.get(lM)
		c.mem(opI64Load, l.MachineFrames+l.SliceLen)
		c.tee(lX)
		c.i64(int64(l.MaxFrames))
		c.byte(opI64GeU)
		c.brIf(0)
		c.get(lX)
		c.get(lM)
		c.mem(opI64Load, l.MachineFrames+l.SliceCap)
		c.byte(opI64GeU)
		c.brIf(0)
		// lY = the new base; lZ = its locals; the stack must hold them and
		// the callee's operands.
		c.get(lSPBase)
		c.i64(int64(d - arg))
		c.byte(opI64Add)
		c.set(lY)
		c.get(lB)
		c.mem(opI64Load, l.FuncLocals+l.SliceLen)
		c.set(lZ)
		c.get(lY)
		c.get(lZ)
		c.byte(opI64Add)
		c.get(lB)
		c.mem(opI64Load, l.FuncMaxStack)
		c.byte(opI64Add)
		c.i64(1)
		c.byte(opI64Add)
		c.get(lM)
		c.mem(opI64Load, l.MachineStack+l.SliceLen)
		c.byte(opI64GtU)
		c.brIf(0)

		// The call: the caller's pc, the callee's locals past its
		// arguments set to nil, its frame, the steps and sp.
		c.get(lFr)
		c.i64(int64(pc + 1))
		c.mem(opI64Store, l.FramePC)
		c.get(lM)
		c.mem(opI64Load, l.MachineStack)
		c.byte(opI32WrapI64)
		c.get(lY)
		c.byte(opI32WrapI64)
		c.i32(int32(arg))
		c.byte(opI32Add)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Mul)
		c.byte(opI32Add)
		c.i32(0)
		c.get(lZ)
		c.byte(opI32WrapI64)
		c.i32(int32(arg))
		c.byte(opI32Sub)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Mul)
		c.byte(opPrefixFC)
		c.u32(fcMemoryFill)
		c.byte(0)
		// lC = the new frame
		c.get(lM)
		c.mem(opI64Load, l.MachineFrames)
		c.byte(opI32WrapI64)
		c.get(lX)
		c.byte(opI32WrapI64)
		c.i32(int32(l.FrameSize))
		c.byte(opI32Mul)
		c.byte(opI32Add)
		c.tee(lC)
		c.get(lB)
		c.byte(opI64ExtendU)
		c.mem(opI64Store, l.FrameFn)
		c.get(lC)
		c.get(lA)
		c.byte(opI64ExtendU)
		c.mem(opI64Store, l.FrameClosure)
		c.get(lC)
		c.i64(0)
		c.mem(opI64Store, l.FramePC)
		c.get(lC)
		c.get(lY)
		c.mem(opI64Store, l.FrameBase)
		c.get(lM)
		c.get(lX)
		c.i64(1)
		c.byte(opI64Add)
		c.mem(opI64Store, l.MachineFrames+l.SliceLen)
		c.get(lM)
		c.get(lY)
		c.get(lZ)
		c.byte(opI64Add)
		c.mem(opI64Store, l.MachineSP)
		fg.saveSteps(fg.steps(pc + 1))

		c.get(lM)
		c.i32(0)
		c.get(lEnd)
		c.get(lB)
		c.mem(opI64Load, l.FuncIndex)
		c.byte(opI32WrapI64)
		c.byte(opCallIndirect)
		c.u32(typeFunc)
		c.u32(0)
		// Returned here: go on at pc+1, the next block. Anything else has
		// handed back, with every register written.
		c.byte(opI32Eqz)
		c.block(opIf)
		c.i32(statusExit)
		c.byte(opReturn)
		c.end()
		c.get(lM)
		c.mem(opI64Load, l.MachineSteps)
		c.set(lSteps)
	})
}

// ret compiles RETURN to a caller; the entry function's result, and a
// return from inside a try, are the interpreter's.
func (fg *fgen) ret(pc int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		c.get(lM)
		c.mem(opI64Load, l.MachineFrames+l.SliceLen)
		c.i64(1)
		c.byte(opI64Sub)
		c.tee(lX) // this frame's depth
		c.byte(opI64Eqz)
		c.brIf(0)
		c.get(lM)
		c.mem(opI64Load, l.MachineHandlers+l.SliceLen)
		c.tee(lY)
		c.byte(opI64Eqz)
		c.byte(opI32Eqz)
		c.block(opIf)
		c.get(lM)
		c.mem(opI64Load, l.MachineHandlers)
		c.byte(opI32WrapI64)
		c.get(lY)
		c.byte(opI32WrapI64)
		c.i32(1)
		c.byte(opI32Sub)
		c.i32(int32(l.HandlerSize))
		c.byte(opI32Mul)
		c.byte(opI32Add)
		c.mem(opI64Load, l.HandlerFrame)
		c.get(lX)
		c.byte(opI64Eq)
		c.brIf(1)
		c.end()
		// The result goes to the callee's slot, below this frame's base.
		c.get(lBase)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Sub)
		c.set(lA)
		fg.storeFrom(d-1, lA, 0)
		c.get(lM)
		c.get(lX)
		c.mem(opI64Store, l.MachineFrames+l.SliceLen)
		c.get(lM)
		c.get(lSPBase)
		c.i64(int64(fg.nlocals))
		c.byte(opI64Sub)
		c.mem(opI64Store, l.MachineSP)
		fg.saveSteps(fg.steps(pc + 1))
		c.i32(statusReturned)
		c.byte(opReturn)
	})
}

// next compiles NEXT and NEXT2 over a list or a map; a string's
// characters are the interpreter's.
func (fg *fgen) next(pc int, op compile.Opcode, target int) {
	c := &fg.c
	l := &fg.l
	fg.flush()
	d := len(fg.vs)
	fg.guarded(pc, func() {
		it := fg.slot(d - 1)
		fg.kind(it)
		c.i32(int32(l.KindIter))
		c.byte(opI32Ne)
		c.brIf(0)
		fg.pointer(it)
		c.tee(lA) // the iterator
		c.mem(opI32Load8U, l.IterSrc+l.ValueKind)
		c.set(lT)
		c.get(lA)
		c.mem(opI64Load, l.IterSrc+l.ValueP)
		c.byte(opI32WrapI64)
		c.set(lB) // its list or map
		c.get(lA)
		c.mem(opI64Load, l.IterPos)
		c.set(lX)
		// lY = the length; lC = the elements or keys
		c.get(lT)
		c.i32(int32(l.KindList))
		c.byte(opI32Eq)
		c.block(opIf)
		c.get(lB)
		c.mem(opI64Load, l.ListElems+l.SliceLen)
		c.set(lY)
		c.get(lB)
		c.mem(opI64Load, l.ListElems)
		c.byte(opI32WrapI64)
		c.set(lC)
		c.byte(opElse)
		c.get(lT)
		c.i32(int32(l.KindMap))
		c.byte(opI32Ne)
		c.brIf(1)
		c.get(lB)
		c.mem(opI64Load, l.MapKeys+l.SliceLen)
		c.set(lY)
		c.get(lB)
		c.mem(opI64Load, l.MapKeys)
		c.byte(opI32WrapI64)
		c.set(lC)
		c.end()
		fg.charge(fg.steps(pc + 1))
		// Exhausted: pop the iterator and leave the loop.
		c.get(lX)
		c.get(lY)
		c.byte(opI64GeS)
		c.block(opIf)
		fg.extra++
		fg.jump(target)
		fg.extra--
		c.end()
		// lB = the element's offset in the elements, keys and values
		c.get(lX)
		c.byte(opI32WrapI64)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Mul)
		c.set(lA) // free again once pos is read
		vd := d   // where the value goes
		if op == compile.NEXT2 {
			vd = d + 1
		}
		c.get(lT)
		c.i32(int32(l.KindList))
		c.byte(opI32Eq)
		c.block(opIf)
		if op == compile.NEXT2 {
			fg.scalar(lBase, fg.slot(d), l.KindInt, func() { c.get(lX) }, 0)
		}
		c.get(lC)
		c.get(lA)
		c.byte(opI32Add)
		c.set(lC)
		fg.copy(lC, 0, lBase, fg.slot(vd))
		c.byte(opElse)
		c.get(lC)
		c.get(lA)
		c.byte(opI32Add)
		c.set(lC) // the key
		if op == compile.NEXT2 {
			fg.copy(lC, 0, lBase, fg.slot(d))
			c.get(lB)
			c.mem(opI64Load, l.MapVals)
			c.byte(opI32WrapI64)
			c.get(lA)
			c.byte(opI32Add)
			c.set(lC) // the value
		}
		fg.copy(lC, 0, lBase, fg.slot(vd))
		c.end()
		// pos++
		fg.pointer(it)
		c.get(lX)
		c.i64(1)
		c.byte(opI64Add)
		c.mem(opI64Store, l.IterPos)
	})
}
