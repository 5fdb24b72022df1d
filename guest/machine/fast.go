// fast.go holds the fast path: a small call-free loop over the hottest opcodes.

package machine

import "github.com/runehost/runehost/guest/compile"

// fastOn turns the fast path on; tests turn it off to check that it changes
// nothing (fast_test.go).
var fastOn = true

// fastOps are the opcodes fast may handle; slow hands back before one of them.
var fastOps = func() (t [256]bool) {
	for _, op := range []compile.Opcode{
		compile.NOP, compile.POP, compile.DUP, compile.DUP2, compile.NIL, compile.TRUE, compile.FALSE,
		compile.CONST, compile.SMALLINT, compile.LOCAL, compile.SETLOCAL, compile.CELL, compile.SETCELL,
		compile.FREE, compile.SETFREE, compile.LOCALREF, compile.FREEREF, compile.GLOBAL, compile.SETGLOBAL,
		compile.BUILTIN, compile.NEG, compile.NOT, compile.ADD, compile.SUB, compile.MUL, compile.DIV,
		compile.MOD, compile.EQ, compile.NE, compile.LT, compile.LE, compile.GT, compile.GE,
		compile.JMP, compile.JMPF, compile.JMPT, compile.INDEX, compile.SETINDEX, compile.CALL,
		compile.RETURN, compile.NEXT, compile.NEXT2,
	} {
		t[op] = true
	}
	return t
}()

// fastTakes is whether fast is likely to take ins from this stack. Where
// that turns on the operands (a call of a builtin, a map's element, a
// string to add), slow keeps the instruction rather than return only to be
// handed it back: each change of loop costs both loops' entry and exit.
func fastTakes(ins uint32, stack []Value, sp int) bool {
	if !fastOps[ins&0xff] {
		return false
	}
	switch compile.Opcode(ins) {
	case compile.CALL:
		f := sp - int(ins>>8) - 1
		return f < 0 || stack[f].k == Func
	case compile.INDEX:
		return sp < 2 || stack[sp-2].k == List
	case compile.SETINDEX:
		return sp < 3 || stack[sp-3].k == List
	case compile.ADD:
		return sp < 1 || stack[sp-1].k != Str
	}
	return true
}

// fast runs instructions while the charged steps are below end, as slow
// would, but only the common cases of the opcodes in fastOps: plain values,
// int and float arithmetic, list elements, calls of closures. At anything
// else (another opcode, an error to raise, a charge beyond the one step, an
// allocation) it stops before the instruction, having changed nothing for
// it, and slow takes it. So it charges exactly what slow charges, and it
// calls nothing: in wasm every call spills the loop's registers to memory.
func (m *Machine) fast(end uint64) {
	var (
		fr      = &m.frames[len(m.frames)-1]
		code    = fr.fn.Code
		pc      = fr.pc
		base    = fr.base
		free    []*cellObj
		stack   = m.stack
		sp      = m.sp
		steps   = m.steps
		consts  = m.consts
		globals = m.globals
	)
	if fr.closure != nil {
		free = fr.closure.cells
	}
	for steps < end {
		ins := code[pc]
		arg := int(ins >> 8)
		switch compile.Opcode(ins) {
		case compile.NOP: // -
		case compile.POP: // x -
			sp--
		case compile.DUP: // x - x x
			stack[sp] = stack[sp-1]
			sp++
		case compile.DUP2: // x y - x y x y
			stack[sp] = stack[sp-2]
			stack[sp+1] = stack[sp-1]
			sp += 2
		case compile.NIL: // - nil
			stack[sp] = nilValue
			sp++
		case compile.TRUE: // - true
			stack[sp] = trueValue
			sp++
		case compile.FALSE: // - false
			stack[sp] = falseValue
			sp++
		case compile.CONST: // - consts[a]
			stack[sp] = consts[arg]
			sp++
		case compile.SMALLINT: // - int(a)
			stack[sp] = Value{k: Int, n: uint64(arg)}
			sp++
		case compile.LOCAL, compile.LOCALREF: // - locals[a]
			stack[sp] = stack[base+arg]
			sp++
		case compile.SETLOCAL: // x -
			sp--
			stack[base+arg] = stack[sp]
		case compile.CELL: // - cell(locals[a]).v
			c := stack[base+arg]
			if c.k != cellKind {
				goto out // a fault
			}
			v := c.cell().v
			if v.k == undefKind {
				goto out // an error
			}
			stack[sp] = v
			sp++
		case compile.SETCELL: // x -
			c := stack[base+arg]
			if c.k != cellKind {
				goto out
			}
			sp--
			c.cell().v = stack[sp]
		case compile.FREE: // - free[a].v
			v := free[arg].v
			if v.k == undefKind {
				goto out
			}
			stack[sp] = v
			sp++
		case compile.SETFREE: // x -
			sp--
			free[arg].v = stack[sp]
		case compile.FREEREF: // - cell
			stack[sp] = Value{k: cellKind, p: ptr(free[arg])}
			sp++
		case compile.GLOBAL: // - globals[a]
			v := globals[arg]
			if v.k == undefKind {
				goto out
			}
			stack[sp] = v
			sp++
		case compile.SETGLOBAL: // x -
			sp--
			globals[arg] = stack[sp]
		case compile.BUILTIN: // - builtin[a]
			stack[sp] = Value{k: Builtin, n: uint64(arg)}
			sp++
		case compile.NEG: // x - -x
			x := &stack[sp-1]
			switch {
			case x.k == Int && x.int() != minInt:
				*x = intValue(-x.int())
			case x.k == Float:
				*x = floatValue(-x.float())
			default:
				goto out
			}
		case compile.NOT: // x - !x
			stack[sp-1] = boolValue(!truth(stack[sp-1]))
		case compile.ADD, compile.SUB: // x y - x+y, x-y
			x, y := stack[sp-2], stack[sp-1]
			var r Value
			if x.k == Int && y.k == Int {
				a, b := x.int(), y.int()
				var c int64
				if compile.Opcode(ins) == compile.ADD {
					c = a + b
					if (c^a)&(c^b) < 0 {
						goto out
					}
				} else {
					c = a - b
					if (a^b)&(c^a) < 0 {
						goto out
					}
				}
				r = intValue(c)
			} else {
				a, b, ok := fastNumbers(x, y)
				if !ok {
					goto out // strings, lists, a type error
				}
				if compile.Opcode(ins) == compile.ADD {
					r = floatValue(a + b)
				} else {
					r = floatValue(a - b)
				}
			}
			sp--
			stack[sp-1] = r
		case compile.MUL, compile.DIV, compile.MOD: // x y - x*y, x/y, x%y
			x, y := stack[sp-2], stack[sp-1]
			var r Value
			if x.k == Int && y.k == Int {
				a, b := x.int(), y.int()
				var c int64
				switch compile.Opcode(ins) {
				case compile.MUL:
					// Factors of 32 bits cannot overflow; slow checks the others
					// by a division, which in wasm is a call (runtime.wasmDiv).
					if a != int64(int32(a)) || b != int64(int32(b)) {
						goto out
					}
					c = a * b
				case compile.DIV:
					if b == 0 || b == -1 {
						goto out
					}
					// The magnitudes' quotient, truncated toward zero as Go's:
					// unsigned division is no call in wasm.
					c = int64(uabs(a) / uabs(b))
					if (a < 0) != (b < 0) {
						c = -c
					}
				default:
					if b == 0 || b == -1 {
						goto out
					}
					c = a % b
				}
				r = intValue(c)
			} else {
				a, b, ok := fastNumbers(x, y)
				if !ok {
					goto out // repetition, a type error
				}
				switch compile.Opcode(ins) {
				case compile.MUL:
					r = floatValue(a * b)
				case compile.DIV:
					if b == 0 {
						goto out
					}
					r = floatValue(a / b)
				default:
					goto out // math.Mod is a call
				}
			}
			sp--
			stack[sp-1] = r
		case compile.EQ, compile.NE: // x y - x==y, x!=y
			x, y := stack[sp-2], stack[sp-1]
			var eq bool
			switch {
			case x.k != y.k:
				if (x.k == Int || x.k == Float) && (y.k == Int || y.k == Float) {
					goto out // an int and a float: compared exactly by slow
				}
			case x.k == Nil:
				eq = true
			case x.k == Bool || x.k == Int || x.k == Builtin:
				eq = x.n == y.n
			case x.k == Float:
				eq = x.float() == y.float()
			default:
				goto out // strings, lists and maps are charged as they are compared
			}
			if compile.Opcode(ins) == compile.NE {
				eq = !eq
			}
			sp--
			stack[sp-1] = boolValue(eq)
		case compile.LT, compile.LE, compile.GT, compile.GE: // x y - x<y ...
			x, y := stack[sp-2], stack[sp-1]
			var c int
			switch {
			case x.k == Int && y.k == Int:
				switch {
				case x.int() < y.int():
					c = -1
				case x.int() > y.int():
					c = 1
				}
			case x.k == Float && y.k == Float:
				a, b := x.float(), y.float()
				switch {
				case a < b:
					c = -1
				case a > b:
					c = 1
				case a == b:
				default:
					c = unordered
				}
			default:
				goto out
			}
			var r bool
			switch compile.Opcode(ins) {
			case compile.LT:
				r = c < 0
			case compile.LE:
				r = c <= 0
			case compile.GT:
				r = c > 0 && c != unordered
			default:
				r = c >= 0 && c != unordered
			}
			sp--
			stack[sp-1] = boolValue(r)
		case compile.JMP: // -
			pc = arg
			steps++
			continue
		case compile.JMPF, compile.JMPT: // x -
			t := truth(stack[sp-1])
			sp--
			steps++
			if t == (compile.Opcode(ins) == compile.JMPT) {
				pc = arg
				continue
			}
			pc++
			continue
		case compile.INDEX: // x i - x[i]
			x, i := stack[sp-2], stack[sp-1]
			if x.k != List || i.k != Int {
				goto out
			}
			elems := x.list().elems
			j := i.int()
			if j < 0 {
				j += int64(len(elems))
			}
			if j < 0 || j >= int64(len(elems)) {
				goto out
			}
			sp--
			stack[sp-1] = elems[j]
		case compile.SETINDEX: // x i v -
			x, i := stack[sp-3], stack[sp-2]
			if x.k != List || i.k != Int {
				goto out
			}
			elems := x.list().elems
			j := i.int()
			if j < 0 {
				j += int64(len(elems))
			}
			if j < 0 || j >= int64(len(elems)) {
				goto out
			}
			elems[j] = stack[sp-1]
			sp -= 3
		case compile.CALL: // f x1 ... xa - result
			f := stack[sp-arg-1]
			if f.k != Func {
				goto out
			}
			cl := f.fn()
			callee := cl.fn
			n := len(m.frames)
			newBase := sp - arg
			nl := len(callee.Locals)
			if arg != callee.NumParams || n >= MaxFrames || n == cap(m.frames) || newBase+nl+callee.MaxStack+1 > len(stack) {
				goto out // an error, or the frames or the stack to grow
			}
			fr.pc = pc + 1
			for i := newBase + arg; i < newBase+nl; i++ {
				stack[i] = nilValue
			}
			sp = newBase + nl
			m.frames = m.frames[:n+1]
			fr = &m.frames[n]
			*fr = frame{fn: callee, closure: cl, base: newBase}
			code, pc, base, free = callee.Code, 0, newBase, cl.cells
			steps++
			continue
		case compile.RETURN: // x -
			depth := len(m.frames) - 1
			if depth == 0 {
				goto out // the result must be checked as data
			}
			r := stack[sp-1]
			for n := len(m.handlers); n > 0 && m.handlers[n-1].frame == depth; n-- {
				m.handlers = m.handlers[:n-1]
			}
			m.frames = m.frames[:depth]
			sp = base - 1
			stack[sp] = r
			sp++
			fr = &m.frames[depth-1]
			code, pc, base = fr.fn.Code, fr.pc, fr.base
			free = nil
			if fr.closure != nil {
				free = fr.closure.cells
			}
			steps++
			continue
		case compile.NEXT, compile.NEXT2: // it - it v, it - it k v, or it - and pc = a
			itv := stack[sp-1]
			if itv.k != iterKind {
				goto out
			}
			it := itv.iter()
			var k, v Value
			switch it.src.k {
			case List:
				elems := it.src.list().elems
				if it.pos >= len(elems) {
					sp--
					pc = arg
					steps++
					continue
				}
				k, v = intValue(int64(it.pos)), elems[it.pos]
			case Map:
				mo := it.src.mapv()
				if it.pos >= len(mo.keys) {
					sp--
					pc = arg
					steps++
					continue
				}
				k, v = mo.keys[it.pos], mo.vals[it.pos]
				if compile.Opcode(ins) == compile.NEXT {
					v = k
				}
			default:
				goto out // characters of a string
			}
			it.pos++
			if compile.Opcode(ins) == compile.NEXT2 {
				stack[sp] = k
				sp++
			}
			stack[sp] = v
			sp++
		default:
			goto out
		}
		pc++
		steps++
	}
out:
	fr.pc = pc
	m.sp = sp
	m.steps = steps
}

// fastNumbers is numbers, for the float operators.
func fastNumbers(x, y Value) (a, b float64, ok bool) {
	switch x.k {
	case Int:
		a = float64(x.int())
	case Float:
		a = x.float()
	default:
		return 0, 0, false
	}
	switch y.k {
	case Int:
		b = float64(y.int())
	case Float:
		b = y.float()
	default:
		return 0, 0, false
	}
	return a, b, true
}

func uabs(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}
