// strs.go compiles what makes strings: str of an int and string +, their
// bytes taken from the machine's pool, and the helpers that scan bytes.
// Anything the code does not take (a full slab, a longer string, an
// error) is handed back for the interpreter to do as it always does.

package wasmgen

import "github.com/runehost/runehost/guest/machine"

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
func (fg *fgen) refit(pc, end int) { fg.exitUnlessFits(end, pc+1) }

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
	succeed(&c)
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
	succeed(&c)
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
