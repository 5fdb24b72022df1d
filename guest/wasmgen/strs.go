// strs.go compiles what makes strings and what looks up keys: str of an
// int, string +, append of one value, and a map's index and store. New
// strings' bytes come from the machine's pool; anything the code does not
// take (a full pool or list, an index to grow, a missing key, an error)
// is handed back for the interpreter to do as it always does.

package wasmgen

import (
	"slices"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

var (
	builtinStr    = slices.Index(compile.Builtins, "str")
	builtinAppend = slices.Index(compile.Builtins, "append")
	builtinLen    = slices.Index(compile.Builtins, "len")
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
	for _, b := range []int{builtinStr, builtinLen, builtinAppend} {
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

// More opcodes, for the helpers below.
const (
	opI32Load8S  = 0x2C
	opI64Load8U  = 0x31
	opI32Store8  = 0x3A
	opI32GtU     = 0x4B
	opI32GeU     = 0x4F
	opI32Shl     = 0x74
	opI64DivU    = 0x80
	opI64RemU    = 0x82
	opI64Shl     = 0x86
	opI64ShrU    = 0x88
	fcMemoryCopy = 0x0A
)

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
// place while the list has room; a full list, whose elements must move,
// is the interpreter's. The call ends its block.
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
		c.brIf(0)
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

// keyAddr leaves the address of the value at depth d on the wasm stack,
// writing it to its slot if it is in a wasm local, without changing the
// virtual stack (the local stays where the rest of the block reads it).
func (fg *fgen) keyAddr(d int) {
	c := &fg.c
	off := fg.slot(d)
	switch e := fg.vs[d]; e.kind {
	case eMem:
	case eLocal:
		off = fg.local(e.n)
	default:
		fg.store(e, lBase, off)
	}
	c.get(lBase)
	c.i32(int32(off))
	c.byte(opI32Add)
}

// mapIndex compiles the map half of INDEX (store false) and SETINDEX,
// inside an if of guarded: fail is label 1. The container at base+ax is
// not a list.
func (fg *fgen) mapIndex(ax uint32, d int, store bool) {
	c := &fg.c
	l := &fg.l
	fg.kind(ax)
	c.i32(int32(l.KindMap))
	c.byte(opI32Ne)
	c.brIf(1)
	fg.pointer(ax)
	if store {
		fg.keyAddr(d - 2)
		fg.keyAddr(d - 1)
		c.byte(opCall)
		c.u32(fg.fnMapSet)
		c.byte(opI32Eqz)
		c.brIf(1)
		return
	}
	c.tee(lA)
	fg.keyAddr(d - 1)
	c.byte(opCall)
	c.u32(fg.fnFind)
	c.tee(lX)
	c.i64(0)
	c.byte(opI64LtS)
	c.brIf(1)
	c.get(lX)
	c.byte(opI32WrapI64)
	c.tee(lB)
	c.byte(opI32Eqz)
	c.brIf(1) // not there: a KeyError
	c.get(lA)
	c.mem(opI64Load, l.MapVals)
	c.byte(opI32WrapI64)
	c.get(lB)
	c.i32(1)
	c.byte(opI32Sub)
	c.i32(int32(l.ValueSize))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(lC)
	fg.copy(lC, 0, lBase, fg.slot(d-2))
}

// concat compiles the string half of ADD, inside the else of the
// arithmetic's dynamic path where the numbers' helper failed: fail is
// label depth fail. It charges the result's bytes, as newString does.
func (fg *fgen) concat(ax, ay, dst uint32, fail int) {
	c := &fg.c
	for _, off := range []uint32{ax, ay, dst} {
		c.get(lBase)
		c.i32(int32(off))
		c.byte(opI32Add)
	}
	c.get(lM)
	c.byte(opCall)
	c.u32(fg.fnConcat)
	c.byte(opI32Eqz)
	c.brIf(fail)
	c.get(lSteps)
	fg.bits(dst)
	c.i64(int64(fg.l.BytesPerStep))
	c.byte(opI64DivU)
	c.byte(opI64Add)
	c.set(lSteps)
}

// refit hands back at pc+1 when an instruction that charged for its work
// left too few steps for the rest of the block, so that the interpreter
// ends the slice where it would have.
func (fg *fgen) refit(pc, end int) {
	c := &fg.c
	c.get(lSteps)
	c.i64(int64(fg.steps(end)))
	c.byte(opI64Add)
	c.get(lEnd)
	c.byte(opI64GtU)
	c.block(opIf)
	fg.extra++
	fg.exit(pc + 1)
	fg.extra--
	c.end()
}

// take32 emits: local p = the pool's next free byte, claiming n (an i32
// local) bytes of it, or branch to fail when the slab is short.
func take32(c *code, l *machine.Layout, m, n, p, fail uint32) {
	// p = len; fail if len + n > cap
	c.get(m)
	c.mem(opI64Load, l.MachineBytes+l.SliceLen)
	c.byte(opI32WrapI64)
	c.tee(p)
	c.get(n)
	c.byte(opI32Add)
	c.get(m)
	c.mem(opI64Load, l.MachineBytes+l.SliceCap)
	c.byte(opI32WrapI64)
	c.byte(opI32GtS)
	c.brIf(int(fail))
	c.get(m)
	c.get(p)
	c.get(n)
	c.byte(opI32Add)
	c.byte(opI64ExtendU)
	c.mem(opI64Store, l.MachineBytes+l.SliceLen)
	c.get(m)
	c.mem(opI64Load, l.MachineBytes)
	c.byte(opI32WrapI64)
	c.get(p)
	c.byte(opI32Add)
	c.set(p)
}

// storeStr writes a string Value of n (i32 local) bytes at p to the
// Value at dst.
func storeStr(c *code, l *machine.Layout, dst, n, p uint32) {
	c.get(dst)
	c.i64(int64(l.KindStr))
	c.mem(opI64Store, l.ValueKind)
	c.get(dst)
	c.get(n)
	c.byte(opI64ExtendU)
	c.mem(opI64Store, l.ValueN)
	c.get(dst)
	c.get(p)
	c.byte(opI64ExtendU)
	c.mem(opI64Store, l.ValueP)
}

// strIntFn is the helper (n i64, dst i32, m i32) -> ok i32: n in decimal,
// as strconv.FormatInt writes it, as a string from the pool.
func (g *gen) strIntFn() code {
	const (
		n, dst, m  = 0, 1, 2
		size, p, q = 3, 4, 5
		u, t       = 6, 7
	)
	l := &g.l
	var c code
	locals(&c, 3, 2, 0)
	c.block(opBlock) // $fail
	// u = |n|, as unsigned (MinInt64 too)
	c.get(n)
	c.set(u)
	c.get(n)
	c.i64(0)
	c.byte(opI64LtS)
	c.block(opIf)
	c.i64(0)
	c.get(n)
	c.byte(opI64Sub)
	c.set(u)
	c.end()
	// size = the digits, and one for a sign
	c.get(n)
	c.i64(0)
	c.byte(opI64LtS)
	c.i32(1)
	c.byte(opI32Add)
	c.set(size)
	c.get(u)
	c.set(t)
	c.block(opBlock)
	c.block(opLoop)
	c.get(t)
	c.i64(10)
	c.byte(opI64LtU)
	c.brIf(1)
	c.get(t)
	c.i64(10)
	c.byte(opI64DivU)
	c.set(t)
	c.get(size)
	c.i32(1)
	c.byte(opI32Add)
	c.set(size)
	c.br(0)
	c.end()
	c.end()
	take32(&c, l, m, size, p, 0)
	// the digits from the last: *--q = '0' + u%10, while u /= 10 is not 0
	c.get(p)
	c.get(size)
	c.byte(opI32Add)
	c.set(q)
	c.block(opLoop)
	c.get(q)
	c.i32(1)
	c.byte(opI32Sub)
	c.tee(q)
	c.get(u)
	c.i64(10)
	c.byte(opI64RemU)
	c.byte(opI32WrapI64)
	c.i32('0')
	c.byte(opI32Add)
	c.mem(opI32Store8, 0)
	c.get(u)
	c.i64(10)
	c.byte(opI64DivU)
	c.tee(u)
	c.byte(opI64Eqz)
	c.byte(opI32Eqz)
	c.brIf(0)
	c.end()
	c.get(n)
	c.i64(0)
	c.byte(opI64LtS)
	c.block(opIf)
	c.get(p)
	c.i32('-')
	c.mem(opI32Store8, 0)
	c.end()
	storeStr(&c, l, dst, size, p)
	c.i32(1)
	c.byte(opReturn)
	c.end() // $fail
	c.i32(0)
	c.end()
	return c
}

// concatFn is the helper (x, y, dst, m i32) -> ok i32: x + y of two
// strings, from the pool, when the result has 1 to PoolStrMax bytes.
func (g *gen) concatFn() code {
	const (
		x, y, dst, m    = 0, 1, 2, 3
		lx, ly, size, p = 4, 5, 6, 7
	)
	l := &g.l
	var c code
	locals(&c, 4, 0, 0)
	c.block(opBlock) // $fail
	for _, v := range []struct{ addr, n uint32 }{{x, lx}, {y, ly}} {
		c.get(v.addr)
		c.mem(opI32Load8U, l.ValueKind)
		c.i32(int32(l.KindStr))
		c.byte(opI32Ne)
		c.brIf(0)
		c.get(v.addr)
		c.mem(opI64Load, l.ValueN)
		c.byte(opI32WrapI64) // a string is at most MaxString bytes
		c.set(v.n)
	}
	c.get(lx)
	c.get(ly)
	c.byte(opI32Add)
	c.tee(size)
	c.byte(opI32Eqz)
	c.brIf(0)
	c.get(size)
	c.i32(int32(l.PoolStrMax))
	c.byte(opI32GtU)
	c.brIf(0)
	take32(&c, l, m, size, p, 0)
	for _, v := range []struct{ addr, n uint32 }{{x, lx}, {y, ly}} {
		c.get(p)
		if v.addr == y {
			c.get(lx)
			c.byte(opI32Add)
		}
		c.get(v.addr)
		c.mem(opI64Load, l.ValueP)
		c.byte(opI32WrapI64)
		c.get(v.n)
		c.byte(opPrefixFC)
		c.u32(fcMemoryCopy)
		c.byte(0, 0)
	}
	storeStr(&c, l, dst, size, p)
	c.i32(1)
	c.byte(opReturn)
	c.end() // $fail
	c.i32(0)
	c.end()
	return c
}

// memEqFn is the helper (p, q, n i32) -> i32: whether n bytes at p and q
// are the same.
func (g *gen) memEqFn() code {
	const (
		p, q, n = 0, 1, 2
		i       = 3
	)
	var c code
	locals(&c, 1, 0, 0)
	scan(&c, n, i, func(stop int) {
		for _, a := range []uint32{p, q} {
			c.get(a)
			c.get(i)
			c.byte(opI32Add)
			c.mem(opI64Load, 0)
		}
		c.byte(opI64Ne)
		c.brIf(stop)
	}, func(stop int) {
		for _, a := range []uint32{p, q} {
			c.get(a)
			c.get(i)
			c.byte(opI32Add)
			c.mem(opI32Load8U, 0)
		}
		c.byte(opI32Ne)
		c.brIf(stop)
	})
	return c
}

// scan emits the body of a helper that checks the n bytes from local i
// (0 at the start): word checks the 8 at i while 8 remain, then each
// byte checks one, each branching to label depth stop when one fails. The
// helper returns 1 when all pass, 0 when one failed.
func scan(c *code, n, i uint32, word, each func(stop int)) {
	c.block(opBlock) // $stop
	c.block(opBlock) // $bytes
	c.block(opLoop)
	c.get(i)
	c.i32(8)
	c.byte(opI32Add)
	c.get(n)
	c.byte(opI32GtU)
	c.brIf(1)
	word(2)
	c.get(i)
	c.i32(8)
	c.byte(opI32Add)
	c.set(i)
	c.br(0)
	c.end()
	c.end() // $bytes
	c.block(opLoop)
	c.get(i)
	c.get(n)
	c.byte(opI32GeU)
	c.block(opIf)
	c.i32(1)
	c.byte(opReturn)
	c.end()
	each(1)
	c.get(i)
	c.i32(1)
	c.byte(opI32Add)
	c.set(i)
	c.br(0)
	c.end()
	c.byte(opUnreachable)
	c.end() // $stop
	c.i32(0)
	c.end()
}

// hashK is machine.HashK as the bits of an int64.
const hashK = int64(machine.HashK - 1<<64)

// mix emits hashWord: h = (h ^ w) * HashK; h ^= h >> 32, with w on the
// wasm stack.
func mix(c *code, h uint32) {
	c.get(h)
	c.byte(opI64Xor)
	c.i64(hashK)
	c.byte(opI64Mul)
	c.tee(h)
	c.get(h)
	c.i64(32)
	c.byte(opI64ShrU)
	c.byte(opI64Xor)
	c.set(h)
}

// findFn is the helper (map, key i32) -> i64 that looks key up in the
// map, as mapObj.find does: -1 for a key of a kind maps do not take,
// else the entry plus one (0: not there) in the low half and, when the
// map is indexed and the key not there, the empty slot it would go to in
// the high half.
func (g *gen) findFn() code {
	const (
		mo, key              = 0, 1
		kk, keys, n, i, idx  = 2, 3, 4, 5, 6
		mask, s, e, kp, a, j = 7, 8, 9, 10, 11, 12
		kn, h, w             = 13, 14, 15
	)
	l := &g.l
	var c code
	locals(&c, 11, 3, 0)
	c.get(key)
	c.mem(opI32Load8U, l.ValueKind)
	c.set(kk)
	c.get(key)
	c.mem(opI64Load, l.ValueN)
	c.set(kn)
	c.get(key)
	c.mem(opI64Load, l.ValueP)
	c.byte(opI32WrapI64)
	c.set(kp)
	// only a str, an int or a bool
	for i, k := range []uint32{l.KindStr, l.KindInt, l.KindBool} {
		c.get(kk)
		c.i32(int32(k))
		c.byte(opI32Ne)
		if i > 0 {
			c.byte(opI32And)
		}
	}
	c.block(opIf)
	c.i64(-1)
	c.byte(opReturn)
	c.end()
	c.get(mo)
	c.mem(opI64Load, l.MapKeys)
	c.byte(opI32WrapI64)
	c.set(keys)
	// same emits: return ret() if the key at a is key.
	same := func(ret func()) {
		c.block(opBlock) // $next
		c.get(a)
		c.mem(opI32Load8U, l.ValueKind)
		c.get(kk)
		c.byte(opI32Ne)
		c.brIf(0)
		c.get(a)
		c.mem(opI64Load, l.ValueN)
		c.get(kn)
		c.byte(opI64Ne)
		c.brIf(0)
		c.get(kk)
		c.i32(int32(l.KindStr))
		c.byte(opI32Eq)
		c.block(opIf)
		c.get(a)
		c.mem(opI64Load, l.ValueP)
		c.byte(opI32WrapI64)
		c.get(kp)
		c.get(kn)
		c.byte(opI32WrapI64)
		c.byte(opCall)
		c.u32(g.fnMemEq)
		c.byte(opI32Eqz)
		c.brIf(1)
		c.end()
		ret()
		c.byte(opReturn)
		c.end()
	}
	entry := func(x uint32, minus int32) { // a = keys + (x-minus)*ValueSize
		c.get(keys)
		c.get(x)
		if minus != 0 {
			c.i32(minus)
			c.byte(opI32Sub)
		}
		c.i32(int32(l.ValueSize))
		c.byte(opI32Mul)
		c.byte(opI32Add)
		c.set(a)
	}
	c.get(mo)
	c.mem(opI64Load, l.MapIndex+l.SliceLen)
	c.byte(opI32WrapI64)
	c.tee(mask)
	c.byte(opI32Eqz)
	c.block(opIf)
	// A linear scan of a small map.
	c.get(mo)
	c.mem(opI64Load, l.MapKeys+l.SliceLen)
	c.byte(opI32WrapI64)
	c.set(n)
	c.block(opLoop)
	c.get(i)
	c.get(n)
	c.byte(opI32GeU)
	c.block(opIf)
	c.i64(0)
	c.byte(opReturn)
	c.end()
	entry(i, 0)
	same(func() {
		c.get(i)
		c.i32(1)
		c.byte(opI32Add)
		c.byte(opI64ExtendU)
	})
	c.get(i)
	c.i32(1)
	c.byte(opI32Add)
	c.set(i)
	c.br(0)
	c.end()
	c.byte(opUnreachable)
	c.end()
	// The hash (machine.hashKey), from the map's seed.
	c.get(mo)
	c.mem(opI64Load, l.MapSeed)
	c.set(h)
	c.get(kk)
	c.i32(int32(l.KindStr))
	c.byte(opI32Ne)
	c.block(opIf)
	c.get(kn)
	mix(&c, h)
	c.byte(opElse)
	c.get(h)
	c.get(kn)
	c.i64(hashK)
	c.byte(opI64Mul)
	c.byte(opI64Xor)
	c.set(h)
	c.get(kn)
	c.byte(opI32WrapI64)
	c.set(n)
	c.block(opBlock)
	c.block(opLoop)
	c.get(i)
	c.i32(8)
	c.byte(opI32Add)
	c.get(n)
	c.byte(opI32GtU)
	c.brIf(1)
	c.get(kp)
	c.get(i)
	c.byte(opI32Add)
	c.mem(opI64Load, 0)
	mix(&c, h)
	c.get(i)
	c.i32(8)
	c.byte(opI32Add)
	c.set(i)
	c.br(0)
	c.end()
	c.end()
	// the last few bytes as one little-endian word
	c.get(i)
	c.get(n)
	c.byte(opI32LtU)
	c.block(opIf)
	c.get(n)
	c.i32(1)
	c.byte(opI32Sub)
	c.set(j)
	c.block(opBlock)
	c.block(opLoop)
	c.get(w)
	c.i64(8)
	c.byte(opI64Shl)
	c.get(kp)
	c.get(j)
	c.byte(opI32Add)
	c.mem(opI64Load8U, 0)
	c.byte(opI64Or)
	c.set(w)
	c.get(j)
	c.get(i)
	c.byte(opI32Eq)
	c.brIf(1)
	c.get(j)
	c.i32(1)
	c.byte(opI32Sub)
	c.set(j)
	c.br(0)
	c.end()
	c.end()
	c.get(w)
	mix(&c, h)
	c.end()
	c.end()
	// Probe from the hash's slot.
	c.get(mask)
	c.i32(1)
	c.byte(opI32Sub)
	c.set(mask)
	c.get(mo)
	c.mem(opI64Load, l.MapIndex)
	c.byte(opI32WrapI64)
	c.set(idx)
	c.get(h)
	c.byte(opI32WrapI64)
	c.get(mask)
	c.byte(opI32And)
	c.set(s)
	c.block(opLoop)
	c.get(idx)
	c.get(s)
	c.i32(4)
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.mem(opI32Load, 0)
	c.tee(e)
	c.byte(opI32Eqz)
	c.block(opIf)
	c.get(s)
	c.byte(opI64ExtendU)
	c.i64(32)
	c.byte(opI64Shl)
	c.byte(opReturn)
	c.end()
	entry(e, 1)
	same(func() {
		c.get(e)
		c.byte(opI64ExtendU)
	})
	c.get(s)
	c.i32(1)
	c.byte(opI32Add)
	c.get(mask)
	c.byte(opI32And)
	c.set(s)
	c.br(0)
	c.end()
	c.byte(opUnreachable)
	c.end()
	return c
}

// copyValue copies the Value at local src+srcOff to local dst+dstOff.
func copyValue(c *code, l *machine.Layout, src, srcOff, dst, dstOff uint32) {
	for w := uint32(0); w < l.ValueSize; w += 8 {
		c.get(dst)
		c.get(src)
		c.mem(opI64Load, srcOff+w)
		c.mem(opI64Store, dstOff+w)
	}
}

// mapSetFn is the helper (map, key, val i32) -> ok i32: map[key] = val,
// as mapObj.set does it, when the key is there, or when the keys and
// values have room for one more and the index (if any) stays at most half
// full; otherwise (or past MaxMap) the interpreter's.
func (g *gen) mapSetFn() code {
	const (
		mo, key, val    = 0, 1, 2
		e, n, dst, ilen = 3, 4, 5, 6
		r               = 7
	)
	l := &g.l
	var c code
	locals(&c, 4, 1, 0)
	c.block(opBlock) // $fail
	c.get(mo)
	c.get(key)
	c.byte(opCall)
	c.u32(g.fnFind)
	c.tee(r)
	c.i64(0)
	c.byte(opI64LtS)
	c.brIf(0)
	c.get(r)
	c.byte(opI32WrapI64)
	c.tee(e)
	c.block(opIf) // there: replace its value
	c.get(mo)
	c.mem(opI64Load, l.MapVals)
	c.byte(opI32WrapI64)
	c.get(e)
	c.i32(1)
	c.byte(opI32Sub)
	c.i32(int32(l.ValueSize))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(dst)
	copyValue(&c, l, val, 0, dst, 0)
	c.i32(1)
	c.byte(opReturn)
	c.end()
	c.get(mo)
	c.mem(opI64Load, l.MapKeys+l.SliceLen)
	c.byte(opI32WrapI64)
	c.tee(n)
	c.i32(int32(l.MaxMap))
	c.byte(opI32GeU)
	c.brIf(0)
	for _, off := range []uint32{l.MapKeys, l.MapVals} {
		c.get(n)
		c.get(mo)
		c.mem(opI64Load, off+l.SliceCap)
		c.byte(opI32WrapI64)
		c.byte(opI32GeU)
		c.brIf(0)
	}
	// unindexed: at most LinearMax keys; indexed: at most half full
	c.get(mo)
	c.mem(opI64Load, l.MapIndex+l.SliceLen)
	c.byte(opI32WrapI64)
	c.tee(ilen)
	c.byte(opI32Eqz)
	c.block(opIf)
	c.get(n)
	c.i32(1)
	c.byte(opI32Add)
	c.i32(int32(l.LinearMax))
	c.byte(opI32GtU)
	c.brIf(1)
	c.byte(opElse)
	c.get(n)
	c.i32(1)
	c.byte(opI32Add)
	c.i32(1)
	c.byte(opI32Shl)
	c.get(ilen)
	c.byte(opI32GtU)
	c.brIf(1)
	c.end()
	for _, v := range []struct{ off, src uint32 }{{l.MapKeys, key}, {l.MapVals, val}} {
		c.get(mo)
		c.mem(opI64Load, v.off)
		c.byte(opI32WrapI64)
		c.get(n)
		c.i32(int32(l.ValueSize))
		c.byte(opI32Mul)
		c.byte(opI32Add)
		c.set(dst)
		copyValue(&c, l, v.src, 0, dst, 0)
		c.get(mo)
		c.get(n)
		c.i32(1)
		c.byte(opI32Add)
		c.byte(opI64ExtendU)
		c.mem(opI64Store, v.off+l.SliceLen)
	}
	c.get(ilen)
	c.block(opIf)
	c.get(mo)
	c.mem(opI64Load, l.MapIndex)
	c.byte(opI32WrapI64)
	c.get(r)
	c.i64(32)
	c.byte(opI64ShrU)
	c.byte(opI32WrapI64)
	c.i32(4)
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.get(n)
	c.i32(1)
	c.byte(opI32Add)
	c.mem(opI32Store, 0)
	c.end()
	c.i32(1)
	c.byte(opReturn)
	c.end() // $fail
	c.i32(0)
	c.end()
	return c
}
