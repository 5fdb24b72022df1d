// arith.go compiles arithmetic and comparisons, and the module's helper
// functions for operands whose kinds are known only at run time.

package wasmgen

import (
	"math"

	"github.com/runehost/runehost/guest/compile"
)

var arithOps = []compile.Opcode{compile.ADD, compile.SUB, compile.MUL, compile.DIV, compile.MOD}

// intOp pushes a op b for the i64 locals a and b, branching to label depth
// fail where the interpreter would raise or compute otherwise (overflow,
// a zero or -1 divisor, factors beyond 32 bits, as fast.go).
func intOp(c *code, op compile.Opcode, a, b, r uint32, fail int) {
	switch op {
	case compile.ADD, compile.SUB:
		c.get(a)
		c.get(b)
		if op == compile.ADD {
			c.byte(opI64Add)
		} else {
			c.byte(opI64Sub)
		}
		c.set(r)
		if op == compile.ADD { // (r^a)&(r^b) < 0
			c.get(r)
			c.get(a)
			c.byte(opI64Xor)
			c.get(r)
			c.get(b)
			c.byte(opI64Xor)
		} else { // (a^b)&(r^a) < 0
			c.get(a)
			c.get(b)
			c.byte(opI64Xor)
			c.get(r)
			c.get(a)
			c.byte(opI64Xor)
		}
		c.byte(opI64And)
		c.i64(0)
		c.byte(opI64LtS)
		c.brIf(fail)
		c.get(r)
	case compile.MUL:
		for _, x := range []uint32{a, b} {
			c.get(x)
			c.i64(1 << 31)
			c.byte(opI64Add)
			c.i64(1 << 32)
			c.byte(opI64GeU)
			c.brIf(fail)
		}
		c.get(a)
		c.get(b)
		c.byte(opI64Mul)
	default: // DIV, MOD
		c.get(b)
		c.byte(opI64Eqz)
		c.brIf(fail)
		c.get(b)
		c.i64(-1)
		c.byte(opI64Eq)
		c.brIf(fail)
		c.get(a)
		c.get(b)
		if op == compile.DIV {
			c.byte(opI64DivS)
		} else {
			c.byte(opI64RemS)
		}
	}
}

// floatOp pushes a op b for the f64 locals a and b, branching to fail for
// a zero divisor and for MOD (math.Mod, left to the interpreter).
func floatOp(c *code, op compile.Opcode, a, b uint32, fail int) {
	switch op {
	case compile.MOD:
		c.br(fail)
		c.f64(0)
		return
	case compile.DIV:
		c.get(b)
		c.f64(0)
		c.byte(opF64Eq)
		c.brIf(fail)
	}
	c.get(a)
	c.get(b)
	switch op {
	case compile.ADD:
		c.byte(opF64Add)
	case compile.SUB:
		c.byte(opF64Sub)
	case compile.MUL:
		c.byte(opF64Mul)
	case compile.DIV:
		c.byte(opF64Div)
	}
}

// numeric reports whether a known kind is a number.
func (fg *fgen) numeric(k uint32) bool { return k == fg.l.KindInt || k == fg.l.KindFloat }

// floatOf pushes the value at depth d, of known kind int or float, as f64.
func (fg *fgen) floatOf(d int) {
	c := &fg.c
	e := fg.vs[d]
	switch e.kind {
	case eFloat:
		c.get(e.loc)
	case eInt:
		c.get(e.loc)
		c.byte(opF64FromI64)
	case eConst:
		if e.k == fg.l.KindInt {
			c.f64(float64(int64(e.n)))
		} else {
			c.f64(math.Float64frombits(e.n))
		}
	}
}

func (fg *fgen) arithmetic(pc int, op compile.Opcode, end int) bool {
	c := &fg.c
	d := len(fg.vs)
	kx, okx := fg.kindOf(fg.vs[d-2])
	ky, oky := fg.kindOf(fg.vs[d-1])
	switch {
	case okx && oky && kx == fg.l.KindInt && ky == fg.l.KindInt:
		fg.guarded(pc, func() {
			fg.intOf(d-2, 0)
			c.set(lX)
			fg.intOf(d-1, 0)
			c.set(lY)
			intOp(c, op, lX, lY, lZ, 0)
			fg.vs = fg.vs[:d-2]
			fg.push(tI64, eInt)
		})
		return true
	case okx && oky && fg.numeric(kx) && fg.numeric(ky):
		fg.guarded(pc, func() {
			fg.floatOf(d - 2)
			c.set(lFX)
			fg.floatOf(d - 1)
			c.set(lFY)
			floatOp(c, op, lFX, lFY, 0)
			fg.vs = fg.vs[:d-2]
			fg.push(tF64, eFloat)
		})
		return true
	case okx && oky:
		fg.exit(pc) // a type error: the interpreter's
		return false
	case op != compile.MOD && (okx && kx == fg.l.KindFloat || oky && ky == fg.l.KindFloat):
		// A float and a value whose kind is known only at run time: a
		// float or an int makes a float; anything else is the
		// interpreter's.
		fg.guarded(pc, func() {
			for i, dst := range []uint32{lFX, lFY} {
				if ok := []bool{okx, oky}[i]; ok {
					fg.floatOf(d - 2 + i)
					c.set(dst)
					continue
				}
				off := fg.addr(d - 2 + i)
				fg.kind(off)
				c.set(lA)
				fg.bits(off)
				c.set(lX)
				c.get(lA)
				c.i32(int32(fg.l.KindFloat))
				c.byte(opI32Eq)
				c.block(opIf)
				c.get(lX)
				c.byte(opF64FromBits)
				c.set(dst)
				c.byte(opElse)
				c.get(lA)
				c.i32(int32(fg.l.KindInt))
				c.byte(opI32Ne)
				c.brIf(1)
				c.get(lX)
				c.byte(opF64FromI64)
				c.set(dst)
				c.end()
			}
			floatOp(c, op, lFX, lFY, 0)
			fg.vs = fg.vs[:d-2]
			fg.push(tF64, eFloat)
		})
		return true
	}
	fg.guarded(pc, func() {
		ax, ay, dst := fg.addr(d-2), fg.addr(d-1), fg.slot(d-2)
		// Both ints, inline; anything else through the helper.
		fg.kind(ax)
		c.i32(int32(fg.l.KindInt))
		c.byte(opI32Eq)
		fg.kind(ay)
		c.i32(int32(fg.l.KindInt))
		c.byte(opI32Eq)
		c.byte(opI32And)
		c.block(opIf)
		fg.bits(ax)
		c.set(lX)
		fg.bits(ay)
		c.set(lY)
		intOp(c, op, lX, lY, lZ, 1)
		c.set(lZ)
		fg.scalar(lBase, dst, fg.l.KindInt, func() { c.get(lZ) }, 0)
		c.byte(opElse)
		for _, off := range []uint32{ax, ay, dst} {
			c.get(lBase)
			c.i32(int32(off))
			c.byte(opI32Add)
		}
		c.byte(opCall)
		c.u32(fg.fnArith + uint32(arithIndex(op)))
		c.byte(opI32Eqz)
		if op == compile.ADD {
			// Not numbers: two strings, perhaps.
			c.block(opIf)
			fg.concat(ax, ay, dst, 2)
			c.end()
		} else {
			c.brIf(1)
		}
		c.end()
		fg.vs = fg.vs[:d-2]
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
	if op == compile.ADD {
		fg.refit(pc, end)
	}
	return true
}

func arithIndex(op compile.Opcode) int {
	for i, o := range arithOps {
		if o == op {
			return i
		}
	}
	return 0
}

// arith is the helper (x, y, dst i32) -> ok i32 for op on two values in
// memory: ints, floats, or an int and a float; anything else fails.
func (g *gen) arith(op compile.Opcode) code {
	const (
		x, y, dst = 0, 1, 2
		kx, ky    = 3, 4
		a, b, r   = 5, 6, 7
		fa, fb    = 8, 9
	)
	l := &g.l
	var c code
	locals(&c, 2, 3, 2)
	c.block(opBlock) // $fail
	c.get(x)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(kx)
	c.get(y)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(ky)
	c.get(kx)
	c.i32(int32(l.KindInt))
	c.byte(opI32Eq)
	c.get(ky)
	c.i32(int32(l.KindInt))
	c.byte(opI32Eq)
	c.byte(opI32And)
	c.block(opIf)
	c.get(x)
	c.mem(opI64Load, l.ValueN)
	c.set(a)
	c.get(y)
	c.mem(opI64Load, l.ValueN)
	c.set(b)
	intOp(&c, op, a, b, r, 1)
	c.set(r)
	storeScalar(&c, l.KindInt, dst, func() { c.get(r) }, l.ValueKind, l.ValueN, l.ValueP)
	c.i32(1)
	c.byte(opReturn)
	c.end()
	for _, v := range []struct{ addr, k, f uint32 }{{x, kx, fa}, {y, ky, fb}} {
		c.get(v.k)
		c.i32(int32(l.KindInt))
		c.byte(opI32Eq)
		c.block(opIf)
		c.get(v.addr)
		c.mem(opI64Load, l.ValueN)
		c.byte(opF64FromI64)
		c.set(v.f)
		c.byte(opElse)
		c.get(v.k)
		c.i32(int32(l.KindFloat))
		c.byte(opI32Ne)
		c.brIf(1)
		c.get(v.addr)
		c.mem(opI64Load, l.ValueN)
		c.byte(opF64FromBits)
		c.set(v.f)
		c.end()
	}
	floatOp(&c, op, fa, fb, 0)
	c.set(fa)
	storeScalar(&c, l.KindFloat, dst, func() { c.get(fa); c.byte(opI64FromF64) }, l.ValueKind, l.ValueN, l.ValueP)
	succeed(&c)
	return c
}

// storeScalar writes a pointer-free Value of kind k at the address in
// local addr.
func storeScalar(c *code, k, addr uint32, n func(), offK, offN, offP uint32) {
	c.get(addr)
	c.i64(int64(k))
	c.mem(opI64Store, offK)
	c.get(addr)
	n()
	c.mem(opI64Store, offN)
	c.get(addr)
	c.i64(0)
	c.mem(opI64Store, offP)
}

func (fg *fgen) equal(pc int, op compile.Opcode) bool {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	x, y := fg.vs[d-2], fg.vs[d-1]
	kx, okx := fg.kindOf(x)
	ky, oky := fg.kindOf(y)
	if okx && oky {
		switch {
		case kx != ky && fg.numeric(kx) && fg.numeric(ky):
			fg.exit(pc) // an int and a float: compared exactly by the interpreter
			return false
		case kx != ky || kx == l.KindNil:
			eq := kx == ky
			if op == compile.NE {
				eq = !eq
			}
			fg.vs = fg.vs[:d-2]
			fg.vs = append(fg.vs, entry{kind: eConst, k: l.KindBool, n: b2u(eq)})
			return true
		case kx == l.KindFloat:
			fg.floatOf(d - 2)
			fg.floatOf(d - 1)
			c.byte(opF64Eq)
		default: // bool, int, builtin
			fg.word(x)
			fg.word(y)
			c.byte(opI64Eq)
		}
		if op == compile.NE {
			c.byte(opI32Eqz)
		}
		fg.vs = fg.vs[:d-2]
		fg.push(tI32, eBool)
		return true
	}
	fg.guarded(pc, func() {
		ax, ay := fg.addr(d-2), fg.addr(d-1)
		for _, off := range []uint32{ax, ay} {
			c.get(lBase)
			c.i32(int32(off))
			c.byte(opI32Add)
		}
		c.byte(opCall)
		c.u32(fg.fnEq)
		c.tee(lT)
		c.i32(2)
		c.byte(opI32Eq)
		c.brIf(0)
		c.get(lT)
		if op == compile.NE {
			c.byte(opI32Eqz)
		}
		fg.vs = fg.vs[:d-2]
		fg.push(tI32, eBool)
	})
	return true
}

// word pushes the bits of a value of known bool, int or builtin kind.
func (fg *fgen) word(e entry) {
	c := &fg.c
	switch e.kind {
	case eConst:
		c.i64(int64(e.n))
	case eBool:
		c.get(e.loc)
		c.byte(opI64ExtendU)
	default:
		c.get(e.loc)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (fg *fgen) compare(pc int, op compile.Opcode) bool {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	kx, okx := fg.kindOf(fg.vs[d-2])
	ky, oky := fg.kindOf(fg.vs[d-1])
	if okx && oky {
		switch {
		case kx == l.KindInt && ky == l.KindInt:
			fg.word(fg.vs[d-2])
			fg.word(fg.vs[d-1])
			c.byte(map[compile.Opcode]byte{compile.LT: opI64LtS, compile.LE: opI64LeS, compile.GT: opI64GtS, compile.GE: opI64GeS}[op])
		case kx == l.KindFloat && ky == l.KindFloat:
			fg.floatOf(d - 2)
			fg.floatOf(d - 1)
			c.byte(map[compile.Opcode]byte{compile.LT: opF64Lt, compile.LE: opF64Le, compile.GT: opF64Gt, compile.GE: opF64Ge}[op])
		default:
			fg.exit(pc)
			return false
		}
		fg.vs = fg.vs[:d-2]
		fg.push(tI32, eBool)
		return true
	}
	fg.guarded(pc, func() {
		// Two ints inline; anything else through the helper.
		ax, ay := fg.addr(d-2), fg.addr(d-1)
		fg.kind(ax)
		c.i32(int32(l.KindInt))
		c.byte(opI32Eq)
		fg.kind(ay)
		c.i32(int32(l.KindInt))
		c.byte(opI32Eq)
		c.byte(opI32And)
		c.block(opIf)
		fg.bits(ax)
		fg.bits(ay)
		c.byte(map[compile.Opcode]byte{compile.LT: opI64LtS, compile.LE: opI64LeS, compile.GT: opI64GtS, compile.GE: opI64GeS}[op])
		c.set(lT)
		c.byte(opElse)
		for _, off := range []uint32{ax, ay} {
			c.get(lBase)
			c.i32(int32(off))
			c.byte(opI32Add)
		}
		c.byte(opCall)
		c.u32(fg.fnCmp)
		c.tee(lT)
		c.i32(3)
		c.byte(opI32Eq)
		c.brIf(1)
		// -1, 0, 1, or 2 for unordered floats
		c.get(lT)
		switch op {
		case compile.LT:
			c.i32(0)
			c.byte(opI32LtS)
		case compile.LE:
			c.i32(0)
			c.byte(opI32LeS)
		case compile.GT:
			c.i32(1)
			c.byte(opI32Eq)
		default:
			c.i32(2)
			c.byte(opI32LtU)
		}
		c.set(lT)
		c.end()
		c.get(lT)
		fg.vs = fg.vs[:d-2]
		fg.push(tI32, eBool)
	})
	return true
}

// truth is the helper (addr) -> i32: the truth of the Value at addr.
func (g *gen) truth() code {
	const a, k = 0, 1
	l := &g.l
	var c code
	locals(&c, 1, 0, 0)
	c.get(a)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(k)
	ret := func(kind uint32, value func()) {
		c.get(k)
		c.i32(int32(kind))
		c.byte(opI32Eq)
		c.block(opIf)
		value()
		c.byte(opReturn)
		c.end()
	}
	ret(l.KindNil, func() { c.i32(0) })
	for _, kind := range []uint32{l.KindBool, l.KindInt, l.KindStr} {
		ret(kind, func() {
			c.get(a)
			c.mem(opI64Load, l.ValueN)
			c.i64(0)
			c.byte(opI64Ne)
		})
	}
	ret(l.KindFloat, func() {
		c.get(a)
		c.mem(opF64Load, l.ValueN)
		c.f64(0)
		c.byte(opF64Ne)
	})
	for _, v := range []struct{ kind, off uint32 }{{l.KindList, l.ListElems}, {l.KindMap, l.MapKeys}} {
		ret(v.kind, func() {
			c.get(a)
			c.mem(opI64Load, l.ValueP)
			c.byte(opI32WrapI64)
			c.mem(opI64Load, v.off+l.SliceLen)
			c.i64(0)
			c.byte(opI64Ne)
		})
	}
	c.i32(1)
	c.end()
	return c
}

// eq is the helper (x, y) -> i32: 1 if equal, 0 if not, 2 for what the
// interpreter compares (strings, lists, maps, an int and a float).
func (g *gen) eq() code {
	const x, y, kx, ky = 0, 1, 2, 3
	l := &g.l
	var c code
	locals(&c, 2, 0, 0)
	c.get(x)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(kx)
	c.get(y)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(ky)
	num := func(k uint32) {
		c.get(k)
		c.i32(int32(l.KindInt))
		c.byte(opI32Eq)
		c.get(k)
		c.i32(int32(l.KindFloat))
		c.byte(opI32Eq)
		c.byte(opI32Or)
	}
	c.get(kx)
	c.get(ky)
	c.byte(opI32Ne)
	c.block(opIf)
	c.i32(2)
	c.i32(0)
	num(kx)
	num(ky)
	c.byte(opI32And)
	c.byte(opSelect)
	c.byte(opReturn)
	c.end()
	c.get(kx)
	c.i32(int32(l.KindNil))
	c.byte(opI32Eq)
	c.block(opIf)
	c.i32(1)
	c.byte(opReturn)
	c.end()
	for _, k := range []uint32{l.KindBool, l.KindInt, l.KindBuiltin} {
		c.get(kx)
		c.i32(int32(k))
		c.byte(opI32Eq)
		c.block(opIf)
		c.get(x)
		c.mem(opI64Load, l.ValueN)
		c.get(y)
		c.mem(opI64Load, l.ValueN)
		c.byte(opI64Eq)
		c.byte(opReturn)
		c.end()
	}
	c.get(kx)
	c.i32(int32(l.KindFloat))
	c.byte(opI32Eq)
	c.block(opIf)
	c.get(x)
	c.mem(opF64Load, l.ValueN)
	c.get(y)
	c.mem(opF64Load, l.ValueN)
	c.byte(opF64Eq)
	c.byte(opReturn)
	c.end()
	c.i32(2)
	c.end()
	return c
}

// cmp is the helper (x, y) -> i32: -1, 0 or 1 for two ints or two floats,
// 2 for unordered floats, 3 for anything else.
func (g *gen) cmp() code {
	const x, y, kx, ky = 0, 1, 2, 3
	const a, b = 4, 5
	l := &g.l
	var c code
	locals(&c, 2, 0, 2)
	c.get(x)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(kx)
	c.get(y)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(ky)
	c.get(kx)
	c.get(ky)
	c.byte(opI32Ne)
	c.block(opIf)
	c.i32(3)
	c.byte(opReturn)
	c.end()
	c.get(kx)
	c.i32(int32(l.KindInt))
	c.byte(opI32Eq)
	c.block(opIf)
	// (x > y) - (x < y)
	c.get(x)
	c.mem(opI64Load, l.ValueN)
	c.get(y)
	c.mem(opI64Load, l.ValueN)
	c.byte(opI64GtS)
	c.get(x)
	c.mem(opI64Load, l.ValueN)
	c.get(y)
	c.mem(opI64Load, l.ValueN)
	c.byte(opI64LtS)
	c.byte(opI32Sub)
	c.byte(opReturn)
	c.end()
	c.get(kx)
	c.i32(int32(l.KindFloat))
	c.byte(opI32Ne)
	c.block(opIf)
	c.i32(3)
	c.byte(opReturn)
	c.end()
	c.get(x)
	c.mem(opF64Load, l.ValueN)
	c.set(a)
	c.get(y)
	c.mem(opF64Load, l.ValueN)
	c.set(b)
	// unordered unless one of <, > or ==
	c.i32(-1)
	c.i32(2)
	c.get(a)
	c.get(b)
	c.byte(opF64Lt)
	c.byte(opSelect)
	c.set(kx)
	c.i32(1)
	c.get(kx)
	c.get(a)
	c.get(b)
	c.byte(opF64Gt)
	c.byte(opSelect)
	c.set(kx)
	c.i32(0)
	c.get(kx)
	c.get(a)
	c.get(b)
	c.byte(opF64Eq)
	c.byte(opSelect)
	c.end()
	return c
}
