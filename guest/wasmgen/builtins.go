// builtins.go compiles the builtins compiled code runs itself: len, str,
// append, float, int and get (sqrt and range are in calls.go and alloc.go), called with
// the builtin known to the generator or told at run time by its number.

package wasmgen

import (
	"slices"

	"github.com/runehost/runehost/guest/compile"
)

var (
	builtinStr    = slices.Index(compile.Builtins, "str")
	builtinAppend = slices.Index(compile.Builtins, "append")
	builtinLen    = slices.Index(compile.Builtins, "len")
	builtinFloat  = slices.Index(compile.Builtins, "float")
	builtinInt    = slices.Index(compile.Builtins, "int")
	builtinGet    = slices.Index(compile.Builtins, "get")
)

// builtin compiles CALL of builtin b with arg arguments, if it is one of
// those this file compiles, and reports whether it did. The call ends its
// block.
func (fg *fgen) builtin(pc, b, arg int) bool {
	switch {
	case b == builtinStr && arg == 1:
		fg.strOf(pc)
	case b == builtinLen && arg == 1:
		fg.length(pc)
	case b == builtinAppend && arg == 2:
		fg.appendOne(pc)
	case (b == builtinFloat || b == builtinInt) && arg == 1:
		fg.convert(pc, b == builtinFloat)
	case b == builtinGet && (arg == 2 || arg == 3):
		fg.getOf(pc, arg)
	default:
		return false
	}
	return true
}

// dynamicBuiltin compiles, ahead of a CALL whose callee is in its slot
// (flushed, like every operand), the builtins of builtin, chosen by the
// callee's number: each goes on at pc+1 when done, or hands back; any
// other callee falls through to the code after, a closure's call.
func (fg *fgen) dynamicBuiltin(pc, arg int) {
	c := &fg.c
	l := &fg.l
	fg.flush()
	d := len(fg.vs)
	fo := fg.slot(d - 1 - arg)
	saved := append([]entry(nil), fg.vs...)
	c.block(opBlock) // $other
	fg.extra++
	fg.kind(fo)
	c.i32(int32(l.KindBuiltin))
	c.byte(opI32Ne)
	c.brIf(0)
	for _, b := range []int{builtinStr, builtinLen, builtinAppend, builtinFloat, builtinInt} {
		if (b == builtinAppend) != (arg == 2) {
			continue
		}
		fg.bits(fo)
		c.i64(int64(b))
		c.byte(opI64Eq)
		c.block(opIf)
		fg.extra++
		if fg.builtin(pc, b, arg) {
			fg.flush()
			fg.charge(fg.steps(pc + 1))
			fg.jump(pc + 1)
		}
		fg.extra--
		c.end()
		fg.vs = append(fg.vs[:0], saved...)
	}
	fg.extra--
	c.end()
}

// length compiles CALL of len: a list's elements, a map's entries, or
// an ASCII string's bytes (its characters), charged as bLen charges;
// any other string is the interpreter's, to count its characters.
func (fg *fgen) length(pc int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		off := fg.addr(d - 1)
		fg.kind(off)
		c.set(lA)
		fg.pointer(off)
		c.set(lB)
		c.get(lA)
		c.i32(int32(l.KindList))
		c.byte(opI32Eq)
		c.block(opIf)
		c.get(lB)
		c.mem(opI64Load, l.ListElems+l.SliceLen)
		c.set(lX)
		c.byte(opElse)
		c.get(lA)
		c.i32(int32(l.KindMap))
		c.byte(opI32Eq)
		c.block(opIf)
		c.get(lB)
		c.mem(opI64Load, l.MapKeys+l.SliceLen)
		c.set(lX)
		c.byte(opElse)
		c.get(lA)
		c.i32(int32(l.KindStr))
		c.byte(opI32Ne)
		c.brIf(2)
		fg.bits(off)
		c.set(lX)
		c.get(lB)
		c.get(lX)
		c.byte(opI32WrapI64)
		c.byte(opCall)
		c.u32(fg.fnASCII)
		c.byte(opI32Eqz)
		c.brIf(2)
		c.get(lSteps)
		c.get(lX)
		c.i64(int64(l.BytesPerStep))
		c.byte(opI64DivU)
		c.byte(opI64Add)
		c.set(lSteps)
		c.end()
		c.end()
		fg.scalar(lBase, fg.slot(d-2), l.KindInt, func() { c.get(lX) }, 0)
		fg.vs = fg.vs[:d-2]
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}

// asciiFn is the helper (p, n i32) -> i32: whether the n bytes at p are
// all below 0x80.
func (g *gen) asciiFn() code {
	const (
		p, n = 0, 1
		i    = 2
	)
	var c code
	locals(&c, 1, 0, 0)
	scan(&c, n, i, func(stop int) {
		c.get(p)
		c.get(i)
		c.byte(opI32Add)
		c.mem(opI64Load, 0)
		c.i64(-0x7F7F7F7F7F7F7F80) // 0x8080808080808080
		c.byte(opI64And)
		c.byte(opI64Eqz)
		c.byte(opI32Eqz)
		c.brIf(stop)
	}, func(stop int) {
		c.get(p)
		c.get(i)
		c.byte(opI32Add)
		c.mem(opI32Load8U, 0)
		c.i32(0x80)
		c.byte(opI32And)
		c.brIf(stop)
	})
	return c
}

// strOf compiles CALL of str with one argument: an int written in decimal
// into the pool, or a string as it is; anything else is the interpreter's.
// The call ends its block.
func (fg *fgen) strOf(pc int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	dst := fg.slot(d - 2)
	fg.guarded(pc, func() {
		if e := fg.vs[d-1]; e.kind == eInt {
			c.get(e.loc)
			fg.strInt(dst, 0)
		} else {
			off := fg.addr(d - 1)
			fg.kind(off)
			c.set(lA)
			c.get(lA)
			c.i32(int32(l.KindInt))
			c.byte(opI32Eq)
			c.block(opIf)
			fg.bits(off)
			fg.strInt(dst, 1)
			c.byte(opElse)
			c.get(lA)
			c.i32(int32(l.KindStr))
			c.byte(opI32Ne)
			c.brIf(1)
			fg.copy(lBase, off, lBase, dst)
			c.end()
		}
		fg.vs = fg.vs[:d-2]
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}

// strInt calls the helper on the int on the wasm stack, for the Value at
// base+dst, branching to label fail when the pool is out.
func (fg *fgen) strInt(dst uint32, fail int) {
	c := &fg.c
	c.get(lBase)
	c.i32(int32(dst))
	c.byte(opI32Add)
	c.get(lM)
	c.byte(opCall)
	c.u32(fg.fnStrInt)
	c.byte(opI32Eqz)
	c.brIf(fail)
}

// appendOne compiles CALL of append with a list and one value: stored in
// place while the list has room; a full list of at most half the pool's
// longest range moves to twice its room (4 for an empty one) taken from
// the pool; a longer one, or a pool out of room, is the interpreter's.
// The call ends its block.
func (fg *fgen) appendOne(pc int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		al := fg.addr(d - 2)
		fg.kind(al)
		c.i32(int32(l.KindList))
		c.byte(opI32Ne)
		c.brIf(0)
		fg.pointer(al)
		c.tee(lA)
		c.mem(opI64Load, l.ListElems+l.SliceLen)
		c.tee(lX)
		c.get(lA)
		c.mem(opI64Load, l.ListElems+l.SliceCap)
		c.byte(opI64GeU)
		c.block(opIf)
		fg.grow(1)
		c.end()
		c.get(lX)
		c.i64(int64(l.MaxList))
		c.byte(opI64GeU)
		c.brIf(0)
		c.get(lA)
		c.mem(opI64Load, l.ListElems)
		c.byte(opI32WrapI64)
		c.get(lX)
		c.byte(opI32WrapI64)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Mul)
		c.byte(opI32Add)
		c.set(lC)
		fg.storeFrom(d-1, lC, 0)
		c.get(lA)
		c.get(lX)
		c.i64(1)
		c.byte(opI64Add)
		c.mem(opI64Store, l.ListElems+l.SliceLen)
		// append's result is its list (elemsPerStep > 1: one value
		// charges nothing more).
		fg.copy(lBase, al, lBase, fg.slot(d-3))
		fg.vs = fg.vs[:d-3]
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}

// convert compiles CALL of float (toFloat) or int with one argument, as
// bFloat and bInt convert a number or a bool; a string to parse, a float
// that does not fit in an int (NaN among them) and anything else are the
// interpreter's. The call ends its block.
func (fg *fgen) convert(pc int, toFloat bool) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	fg.guarded(pc, func() {
		switch e := fg.vs[d-1]; {
		case e.kind == eFloat && toFloat, e.kind == eInt && !toFloat:
			c.get(e.loc)
		case e.kind == eInt:
			c.get(e.loc)
			c.byte(opF64FromI64)
		case e.kind == eFloat:
			c.get(e.loc)
			fg.truncate(0)
		default:
			fg.kindBits(fg.addr(d - 1))
			c.get(lA)
			c.i32(int32(l.KindFloat))
			c.byte(opI32Eq)
			c.block(opIf)
			c.get(lX)
			c.byte(opF64FromBits)
			if !toFloat {
				fg.truncate(1)
				c.set(lX)
			} else {
				c.set(lFX)
			}
			c.byte(opElse)
			// an int, or a bool (0 or 1): the same bits as an int
			c.get(lA)
			c.i32(int32(l.KindInt))
			c.byte(opI32Ne)
			c.get(lA)
			c.i32(int32(l.KindBool))
			c.byte(opI32Ne)
			c.byte(opI32And)
			c.brIf(1) // $fail, outside the if
			if toFloat {
				c.get(lX)
				c.byte(opF64FromI64)
				c.set(lFX)
			}
			c.end()
			if toFloat {
				c.get(lFX)
			} else {
				c.get(lX)
			}
		}
		fg.vs = fg.vs[:d-2]
		if toFloat {
			fg.push(tF64, eFloat)
		} else {
			fg.push(tI64, eInt)
		}
	})
}

// truncate turns the float on the wasm stack into the int bInt makes of
// it, branching to label fail when it does not fit (or is NaN).
func (fg *fgen) truncate(fail int) {
	c := &fg.c
	c.byte(opF64Trunc)
	c.tee(lFX)
	c.f64(-(1 << 63))
	c.byte(opF64Ge)
	c.get(lFX)
	c.f64(1 << 63)
	c.byte(opF64Lt)
	c.byte(opI32And)
	c.byte(opI32Eqz)
	c.brIf(fail)
	c.get(lFX)
	c.byte(opI64TruncF64)
}

// grow moves the full list at local lA, of length lX, to new room of
// twice its length (4 when empty) taken from the pool's values, as long
// as that is at most PoolRangeMax, branching to label fail when not.
func (fg *fgen) grow(fail int) {
	c := &fg.c
	l := &fg.l
	// Z = the new room; fail if more than PoolRangeMax
	c.i64(4)
	c.get(lX)
	c.i64(1)
	c.byte(opI64Shl)
	c.get(lX)
	c.byte(opI64Eqz)
	c.byte(opSelect)
	c.tee(lZ)
	c.i64(int64(l.PoolRangeMax))
	c.byte(opI64GtU)
	c.brIf(fail)
	// Y = the pool's values in use; fail if Y + Z > their cap
	c.get(lM)
	c.mem(opI64Load, l.MachineVals+l.SliceLen)
	c.tee(lY)
	c.get(lZ)
	c.byte(opI64Add)
	c.get(lM)
	c.mem(opI64Load, l.MachineVals+l.SliceCap)
	c.byte(opI64GtS)
	c.brIf(fail)
	// claim Z of them, at lB
	fg.bump(l.MachineVals, l.ValueSize, lY, 0, lB)
	c.get(lM)
	c.get(lY)
	c.get(lZ)
	c.byte(opI64Add)
	c.mem(opI64Store, l.MachineVals+l.SliceLen)
	// copy the X elements there, and point the list at them
	c.get(lB)
	c.get(lA)
	c.mem(opI64Load, l.ListElems)
	c.byte(opI32WrapI64)
	c.get(lX)
	c.byte(opI32WrapI64)
	c.i32(int32(l.ValueSize))
	c.byte(opI32Mul)
	c.byte(opPrefixFC)
	c.u32(fcMemoryCopy)
	c.byte(0)
	c.byte(0)
	c.get(lA)
	c.get(lB)
	c.byte(opI64ExtendU)
	c.mem(opI64Store, l.ListElems)
	c.get(lA)
	c.get(lZ)
	c.mem(opI64Store, l.ListElems+l.SliceCap)
}
