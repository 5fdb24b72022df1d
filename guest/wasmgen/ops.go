// ops.go compiles each instruction, mirroring the interpreter's fast path
// (guest/machine/fast.go): its common cases run here, the rest are handed back.

package wasmgen

import (
	"math"

	"github.com/runehost/runehost/guest/compile"
)

// instr compiles the instruction at pc of a block ending before end; it
// reports whether the block goes on after it.
func (fg *fgen) instr(pc, end int) bool {
	c := &fg.c
	l := &fg.l
	op, arg := compile.Decode(fg.f.Code[pc])
	if compile.Handed[op] {
		fg.exit(pc)
		return false
	}
	d := len(fg.vs)
	switch op {
	case compile.NOP:
	case compile.POP:
		fg.vs = fg.vs[:d-1]
	case compile.DUP:
		fg.dup(d - 1)
	case compile.DUP2:
		fg.dup(d - 2)
		fg.dup(d - 1)
	case compile.NIL:
		fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindNil})
	case compile.TRUE:
		fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindBool, n: 1})
	case compile.FALSE:
		fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindBool})
	case compile.SMALLINT:
		fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindInt, n: uint64(arg)})
	case compile.CONST:
		if arg >= len(fg.p.Consts) {
			fg.exit(pc)
			return false
		}
		switch k := fg.p.Consts[arg]; k.Kind {
		case compile.ConstInt:
			fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindInt, n: uint64(k.Int)})
		case compile.ConstFloat:
			fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindFloat, n: math.Float64bits(k.Float)})
		default:
			c.get(lM)
			c.mem(opI64Load, l.MachineConsts)
			c.byte(opI32WrapI64)
			c.set(lA)
			fg.copy(lA, uint32(arg)*l.ValueSize, lBase, fg.slot(d))
			fg.vs = append(fg.vs, entry{kind: eMem})
		}
	case compile.LOCAL, compile.LOCALREF:
		if uint32(arg) >= fg.nlocals {
			fg.exit(pc)
			return false
		}
		fg.vs = append(fg.vs, entry{kind: eLocal, n: uint64(arg)})
	case compile.SETLOCAL:
		if uint32(arg) >= fg.nlocals {
			fg.exit(pc)
			return false
		}
		// Copies of the local not yet made are made before it changes.
		for i := 0; i < d-1; i++ {
			if e := fg.vs[i]; e.kind == eLocal && e.n == uint64(arg) {
				fg.materialize(i, true)
			}
		}
		if e := fg.vs[d-1]; !(e.kind == eLocal && e.n == uint64(arg)) {
			fg.storeFrom(d-1, lBase, fg.local(uint64(arg)))
		}
		fg.vs = fg.vs[:d-1]
	case compile.CELL, compile.SETCELL:
		if uint32(arg) >= fg.nlocals {
			fg.exit(pc)
			return false
		}
		fg.guarded(pc, func() {
			off := fg.local(uint64(arg))
			fg.kind(off)
			c.i32(int32(l.KindCell))
			c.byte(opI32Ne)
			c.brIf(0)
			fg.pointer(off)
			c.set(lA)
			fg.cell(op == compile.CELL, lA, d)
		})
	case compile.FREE, compile.SETFREE, compile.FREEREF:
		fg.guarded(pc, func() {
			// a = frame.closure; b = closure.cells; a = cells[arg]
			c.get(lFr)
			c.mem(opI64Load, l.FrameClosure)
			c.byte(opI32WrapI64)
			c.tee(lA)
			c.byte(opI32Eqz)
			c.brIf(0)
			c.get(lA)
			c.mem(opI64Load, l.ClosureCells+l.SliceLen)
			c.i64(int64(arg))
			c.byte(opI64LeS)
			c.brIf(0)
			c.get(lA)
			c.mem(opI64Load, l.ClosureCells)
			c.byte(opI32WrapI64)
			c.mem(opI64Load, uint32(arg)*8)
			c.byte(opI32WrapI64)
			c.set(lA)
			if op == compile.FREEREF {
				fg.scalar(lBase, fg.slot(d), l.KindCell, func() { c.i64(0) }, lA)
				fg.vs = append(fg.vs, entry{kind: eMem})
				return
			}
			fg.cell(op == compile.FREE, lA, d)
		})
	case compile.GLOBAL, compile.SETGLOBAL:
		if arg >= len(fg.p.Globals) {
			fg.exit(pc)
			return false
		}
		off := uint32(arg) * l.ValueSize
		c.get(lM)
		c.mem(opI64Load, l.MachineGlobals)
		c.byte(opI32WrapI64)
		c.set(lA)
		if op == compile.SETGLOBAL {
			fg.storeFrom(d-1, lA, off)
			fg.vs = fg.vs[:d-1]
			break
		}
		fg.guarded(pc, func() {
			c.get(lA)
			c.mem(opI32Load8U, off+l.ValueKind)
			c.i32(int32(l.KindUndef))
			c.byte(opI32Eq)
			c.brIf(0)
			fg.copy(lA, off, lBase, fg.slot(d))
			fg.vs = append(fg.vs, entry{kind: eMem})
		})
	case compile.BUILTIN:
		fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindBuiltin, n: uint64(arg)})
	case compile.NEG:
		fg.neg(pc)
	case compile.NOT:
		fg.truthOf(d - 1)
		c.byte(opI32Eqz)
		fg.vs = fg.vs[:d-1]
		fg.push(tI32, eBool)
	case compile.ADD, compile.SUB, compile.MUL, compile.DIV, compile.MOD:
		return fg.arithmetic(pc, op, end)
	case compile.EQ, compile.NE:
		return fg.equal(pc, op)
	case compile.LT, compile.LE, compile.GT, compile.GE:
		return fg.compare(pc, op)
	case compile.JMP:
		fg.flush()
		fg.charge(fg.steps(pc + 1))
		fg.jump(arg)
		return false
	case compile.JMPF, compile.JMPT:
		fg.truthOf(d - 1)
		c.set(lT)
		fg.vs = fg.vs[:d-1]
		fg.flush()
		fg.charge(fg.steps(pc + 1))
		c.get(lT)
		if op == compile.JMPF {
			c.byte(opI32Eqz)
		}
		c.block(opIf)
		fg.extra++
		fg.jump(arg)
		fg.extra--
		c.end()
		return false // pc+1 is the next block
	case compile.INDEX, compile.SETINDEX:
		fg.index(pc, op)
	case compile.ATTR, compile.SETATTR:
		if arg >= len(fg.p.Consts) || fg.p.Consts[arg].Kind != compile.ConstString {
			fg.exit(pc)
			return false
		}
		fg.attr(pc, op, arg)
	case compile.LIST:
		if arg > int(l.PoolListMax) {
			fg.exit(pc)
			return false
		}
		fg.list(pc, arg)
	case compile.MAP:
		return fg.mapLit(pc, arg)
	case compile.ITER:
		return fg.iter(pc)
	case compile.CALL:
		if arg == 1 && fg.builtinAt(d-2) == builtinSqrt {
			fg.sqrt(pc)
			return true // a leader follows: the block ends here
		}
		if b := fg.builtinAt(d - 1 - arg); b >= 0 && fg.builtin(pc, b, arg) {
			return true
		}
		if fg.vs[d-1-arg].kind == eMem {
			// A callee loaded in an earlier block (a call among the
			// arguments ended it): a builtin is told by its number.
			fg.dynamicBuiltin(pc, arg)
		}
		if (arg == 1 || arg == 2) && fg.builtinAt(d-1-arg) == builtinRange {
			fg.rangeList(pc, arg)
			return true
		}
		fg.call(pc, arg)
		return false
	case compile.RETURN:
		fg.ret(pc)
		return false
	case compile.NEXT, compile.NEXT2:
		fg.next(pc, op, arg)
		return false
	default:
		fg.exit(pc)
		return false
	}
	return true
}

// dup pushes a copy of the value at depth d.
func (fg *fgen) dup(d int) {
	e := fg.vs[d]
	if e.kind == eMem {
		fg.copy(lBase, fg.slot(d), lBase, fg.slot(len(fg.vs)))
	}
	fg.vs = append(fg.vs, e)
}

// cell reads (push) or writes the value of the cell at i32 local a.
func (fg *fgen) cell(read bool, a uint32, d int) {
	c := &fg.c
	l := &fg.l
	if read {
		c.get(a)
		c.mem(opI32Load8U, l.CellValue+l.ValueKind)
		c.i32(int32(l.KindUndef))
		c.byte(opI32Eq)
		c.brIf(0)
		fg.copy(a, l.CellValue, lBase, fg.slot(d))
		fg.vs = append(fg.vs, entry{kind: eMem})
		return
	}
	fg.storeFrom(d-1, a, l.CellValue)
	fg.vs = fg.vs[:d-1]
}

// intOf pushes the value at depth d as an i64, branching to label depth
// fail when it is not an int.
func (fg *fgen) intOf(d, fail int) {
	c := &fg.c
	e := fg.vs[d]
	switch e.kind {
	case eInt:
		c.get(e.loc)
		return
	case eConst:
		if e.k == fg.l.KindInt {
			c.i64(int64(e.n))
			return
		}
		c.br(fail)
		c.i64(0)
		return
	case eFloat, eBool:
		c.br(fail)
		c.i64(0)
		return
	}
	off := fg.addr(d)
	fg.kind(off)
	c.i32(int32(fg.l.KindInt))
	c.byte(opI32Ne)
	c.brIf(fail)
	fg.bits(off)
}

// truthOf pushes the truth of the value at depth d as an i32.
func (fg *fgen) truthOf(d int) {
	c := &fg.c
	e := fg.vs[d]
	switch e.kind {
	case eBool:
		c.get(e.loc)
		return
	case eInt:
		c.get(e.loc)
		c.byte(opI64Eqz)
		c.byte(opI32Eqz)
		return
	case eFloat:
		c.get(e.loc)
		c.f64(0)
		c.byte(opF64Ne)
		return
	case eConst:
		t := int32(1)
		switch e.k {
		case fg.l.KindNil:
			t = 0
		case fg.l.KindBool, fg.l.KindInt:
			if e.n == 0 {
				t = 0
			}
		case fg.l.KindFloat:
			if math.Float64frombits(e.n) == 0 {
				t = 0
			}
		}
		c.i32(t)
		return
	}
	off := fg.addr(d)
	c.get(lBase)
	c.i32(int32(off))
	c.byte(opI32Add)
	c.byte(opCall)
	c.u32(fg.fnTruth)
}

func (fg *fgen) neg(pc int) {
	c := &fg.c
	d := len(fg.vs)
	e := fg.vs[d-1]
	switch e.kind {
	case eFloat:
		c.get(e.loc)
		c.byte(opF64Neg)
		fg.vs = fg.vs[:d-1]
		fg.push(tF64, eFloat)
		return
	case eInt:
		fg.guarded(pc, func() {
			c.get(e.loc)
			c.i64(math.MinInt64)
			c.byte(opI64Eq)
			c.brIf(0)
			c.i64(0)
			c.get(e.loc)
			c.byte(opI64Sub)
			fg.vs = fg.vs[:d-1]
			fg.push(tI64, eInt)
		})
		return
	}
	// Anything else, through its slot: int, float, or handed back.
	fg.guarded(pc, func() {
		off := fg.addr(d - 1)
		dst := fg.slot(d - 1)
		fg.kind(off)
		c.set(lA)
		c.get(lA)
		c.i32(int32(fg.l.KindInt))
		c.byte(opI32Eq)
		c.block(opIf)
		fg.bits(off)
		c.tee(lX)
		c.i64(math.MinInt64)
		c.byte(opI64Eq)
		c.brIf(1) // $fail, outside the if
		fg.scalar(lBase, dst, fg.l.KindInt, func() { c.i64(0); c.get(lX); c.byte(opI64Sub) }, 0)
		c.byte(opElse)
		c.get(lA)
		c.i32(int32(fg.l.KindFloat))
		c.byte(opI32Ne)
		c.brIf(1)
		fg.bits(off)
		c.byte(opF64FromBits)
		c.byte(opF64Neg)
		c.set(lFX)
		fg.scalar(lBase, dst, fg.l.KindFloat, func() { c.get(lFX); c.byte(opI64FromF64) }, 0)
		c.end()
		fg.vs = fg.vs[:d-1]
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}
