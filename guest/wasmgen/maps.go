// maps.go compiles a map's index and store: the key's hash (as
// machine.hashKey computes it), a probe of the map's own index, and a
// store in place; a missing key, a full map or an index to grow is
// handed back.

package wasmgen

import (
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

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

// mapIndex compiles the map half of INDEX and ATTR (value nil: the
// entry's value copied to base+dst) and of SETINDEX and SETATTR (value
// pushes the address of the value to store), inside a block of guarded:
// fail is label 1. key pushes the key's address. The container at
// base+ax is not a list.
func (fg *fgen) mapIndex(ax uint32, key, value func(), dst uint32) {
	c := &fg.c
	l := &fg.l
	fg.kind(ax)
	c.i32(int32(l.KindMap))
	c.byte(opI32Ne)
	c.brIf(1)
	fg.pointer(ax)
	if value != nil {
		key()
		value()
		c.byte(opCall)
		c.u32(fg.fnMapSet)
		c.byte(opI32Eqz)
		c.brIf(1)
		return
	}
	c.tee(lA)
	key()
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
	fg.entryValue(dst)
}

// entryValue copies the value of entry lB (counted from 1) of the map at
// lA to the Value at base+dst.
func (fg *fgen) entryValue(dst uint32) {
	c := &fg.c
	c.get(lA)
	c.mem(opI64Load, fg.l.MapVals)
	c.byte(opI32WrapI64)
	c.get(lB)
	c.i32(1)
	c.byte(opI32Sub)
	c.i32(int32(fg.l.ValueSize))
	c.byte(opI32Mul)
	c.byte(opI32Add)
	c.set(lC)
	fg.copy(lC, 0, lBase, dst)
}

// attr compiles ATTR and SETATTR of the field named by constant name: a
// map's entry, as INDEX and SETINDEX with that key; an error value's
// fields, anything else and a missing key are the interpreter's.
func (fg *fgen) attr(pc int, op compile.Opcode, name int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	dx := d - 1
	if op == compile.SETATTR {
		dx = d - 2
	}
	if _, ok := fg.kindOf(fg.vs[dx]); ok {
		fg.exit(pc) // a scalar: no fields
		return
	}
	key := func() { // the constant's address among the machine's
		c.get(lM)
		c.mem(opI64Load, l.MachineConsts)
		c.byte(opI32WrapI64)
		c.i32(int32(uint32(name) * l.ValueSize))
		c.byte(opI32Add)
	}
	fg.guarded(pc, func() {
		ax := fg.addr(dx)
		c.block(opBlock) // as index's if: fail is label 1 inside
		if op == compile.ATTR {
			fg.mapIndex(ax, key, nil, fg.slot(d-1))
		} else {
			fg.mapIndex(ax, key, func() { fg.keyAddr(d - 1) }, 0)
		}
		c.end()
		fg.vs = fg.vs[:dx]
		if op == compile.ATTR {
			fg.vs = append(fg.vs, entry{kind: eMem})
		}
	})
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
	succeed(&c)
	return c
}

// getOf compiles CALL of get with a map, a key and (arg 3) a default, as
// bGet: the entry's value, or the default (nil) for a key not there or of
// a kind maps do not take. A list, and anything else, is the
// interpreter's. The call ends its block.
func (fg *fgen) getOf(pc, arg int) {
	c := &fg.c
	l := &fg.l
	d := len(fg.vs)
	dm := d - arg
	dst := fg.slot(dm - 1)
	if _, ok := fg.kindOf(fg.vs[dm]); ok {
		fg.exit(pc) // a scalar: the interpreter's error
		return
	}
	fg.guarded(pc, func() {
		am := fg.addr(dm)
		fg.kind(am)
		c.i32(int32(l.KindMap))
		c.byte(opI32Ne)
		c.brIf(0)
		fg.pointer(am)
		c.tee(lA)
		fg.keyAddr(dm + 1)
		c.byte(opCall)
		c.u32(fg.fnFind)
		c.tee(lX)
		c.i64(0)
		c.byte(opI64LtS) // not a key
		c.get(lX)
		c.byte(opI32WrapI64)
		c.tee(lB)
		c.byte(opI32Eqz) // not there
		c.byte(opI32Or)
		c.block(opIf)
		if arg == 3 {
			fg.storeFrom(d-1, lBase, dst)
		} else {
			fg.scalar(lBase, dst, l.KindNil, func() { c.i64(0) }, 0)
		}
		c.byte(opElse)
		fg.entryValue(dst)
		c.end()
		fg.vs = fg.vs[:dm-1]
		fg.vs = append(fg.vs, entry{kind: eMem})
	})
}
