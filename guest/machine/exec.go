// exec.go holds the interpreter loop: one instruction per step.

package machine

import (
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

// slow runs any instruction while the charged steps are below end. With the
// fast path on it returns before an instruction fast may take, having run at
// least one.
func (m *Machine) slow(end uint64) {
	var (
		fr      = &m.frames[len(m.frames)-1]
		fn      = fr.fn
		code    = fn.Code
		pc      = fr.pc
		base    = fr.base
		free    []*cellObj
		stack   = m.stack
		sp      = m.sp
		steps   = m.steps
		consts  = m.consts
		globals = m.globals
		thrown  *rtError
		rethrow Value // an error value thrown as it is
	)
	if fr.closure != nil {
		free = fr.closure.cells
	}
	// save writes the registers back before anything that looks at the machine.
	save := func() {
		fr.pc = pc
		m.sp = sp
		m.steps = steps
	}
	// load reads the registers of the innermost frame.
	load := func() {
		fr = &m.frames[len(m.frames)-1]
		fn, code, pc, base = fr.fn, fr.fn.Code, fr.pc, fr.base
		free = nil
		if fr.closure != nil {
			free = fr.closure.cells
		}
		stack, sp, steps = m.stack, m.sp, m.steps
	}

	for steps < end {
		ins := code[pc]
		pc++
		steps++
		arg := int(ins >> 8)
		switch compile.Opcode(ins) {
		case compile.NOP:
		case compile.POP:
			sp--
		case compile.DUP:
			stack[sp] = stack[sp-1]
			sp++
		case compile.DUP2:
			stack[sp] = stack[sp-2]
			stack[sp+1] = stack[sp-1]
			sp += 2
		case compile.NIL:
			stack[sp] = nilValue
			sp++
		case compile.TRUE:
			stack[sp] = trueValue
			sp++
		case compile.FALSE:
			stack[sp] = falseValue
			sp++
		case compile.CONST:
			stack[sp] = consts[arg]
			sp++
		case compile.SMALLINT:
			stack[sp] = Value{k: Int, n: uint64(arg)}
			sp++
		case compile.LOCAL:
			stack[sp] = stack[base+arg]
			sp++
		case compile.SETLOCAL:
			sp--
			stack[base+arg] = stack[sp]
		case compile.CELL:
			if stack[base+arg].k != cellKind {
				save()
				m.fault("cell slot holds " + typeName(stack[base+arg]))
				return
			}
			v := stack[base+arg].cell().v
			if v.k == undefKind {
				thrown = m.unassigned(fn.Locals[arg])
				goto raise
			}
			stack[sp] = v
			sp++
		case compile.SETCELL:
			if stack[base+arg].k != cellKind {
				save()
				m.fault("cell slot holds " + typeName(stack[base+arg]))
				return
			}
			sp--
			stack[base+arg].cell().v = stack[sp]
		case compile.NEWCELL:
			stack[base+arg] = newCell(undef)
		case compile.WRAPCELL:
			stack[base+arg] = newCell(stack[base+arg])
		case compile.FREE:
			v := free[arg].v
			if v.k == undefKind {
				thrown = m.unassigned(fn.FreeNames[arg])
				goto raise
			}
			stack[sp] = v
			sp++
		case compile.SETFREE:
			sp--
			free[arg].v = stack[sp]
		case compile.LOCALREF:
			stack[sp] = stack[base+arg]
			sp++
		case compile.FREEREF:
			stack[sp] = Value{k: cellKind, p: ptr(free[arg])}
			sp++
		case compile.GLOBAL:
			v := globals[arg]
			if v.k == undefKind {
				thrown = m.unassigned(m.prog.Globals[arg])
				goto raise
			}
			stack[sp] = v
			sp++
		case compile.SETGLOBAL:
			sp--
			globals[arg] = stack[sp]
		case compile.BUILTIN:
			stack[sp] = Value{k: Builtin, n: uint64(arg)}
			sp++
		case compile.LIST:
			elems := make([]Value, arg)
			copy(elems, stack[sp-arg:sp])
			sp -= arg
			steps += uint64(arg / elemsPerStep)
			stack[sp] = listValue(elems)
			sp++
		case compile.MAP:
			mo := &mapObj{}
			for i := sp - 2*arg; i < sp; i += 2 {
				k := stack[i]
				if !isKey(k) {
					thrown = typeErrorf("map key must be str, int or bool, not %s", typeName(k))
					goto raise
				}
				mo.set(k, stack[i+1])
			}
			sp -= 2 * arg
			steps += uint64(arg / elemsPerStep)
			stack[sp] = Value{k: Map, p: ptr(mo)}
			sp++
		case compile.FUNC:
			f := m.prog.Funcs[arg]
			cl := &closureObj{fn: f, cells: make([]*cellObj, f.NumFree)}
			for i := range cl.cells {
				c := stack[sp-f.NumFree+i]
				if c.k != cellKind {
					save()
					m.fault("captured slot holds " + typeName(c))
					return
				}
				cl.cells[i] = c.cell()
			}
			sp -= f.NumFree
			stack[sp] = Value{k: Func, p: ptr(cl)}
			sp++
		case compile.NEG:
			x := stack[sp-1]
			switch x.k {
			case Int:
				if x.int() == minInt {
					thrown = errorf(KindOverflow, "integer overflow in -(%d)", x.int())
					goto raise
				}
				stack[sp-1] = intValue(-x.int())
			case Float:
				stack[sp-1] = floatValue(-x.float())
			default:
				thrown = typeErrorf("cannot negate %s", typeName(x))
				goto raise
			}
		case compile.NOT:
			stack[sp-1] = boolValue(!truth(stack[sp-1]))
		case compile.ADD:
			x, y := stack[sp-2], stack[sp-1]
			if x.k == Int && y.k == Int {
				r := x.int() + y.int()
				if (r^x.int())&(r^y.int()) < 0 {
					thrown = errorf(KindOverflow, "integer overflow in %d + %d", x.int(), y.int())
					goto raise
				}
				sp--
				stack[sp-1] = intValue(r)
				break
			}
			m.steps = steps
			r, err := m.add(x, y)
			steps = m.steps
			if err != nil {
				thrown = err
				goto raise
			}
			sp--
			stack[sp-1] = r
		case compile.SUB:
			x, y := stack[sp-2], stack[sp-1]
			if x.k == Int && y.k == Int {
				r := x.int() - y.int()
				if (x.int()^y.int())&(r^x.int()) < 0 {
					thrown = errorf(KindOverflow, "integer overflow in %d - %d", x.int(), y.int())
					goto raise
				}
				sp--
				stack[sp-1] = intValue(r)
				break
			}
			r, err := arith(compile.SUB, x, y)
			if err != nil {
				thrown = err
				goto raise
			}
			sp--
			stack[sp-1] = r
		case compile.MUL, compile.DIV, compile.MOD:
			if x, y := stack[sp-2], stack[sp-1]; x.k == Int && y.k == Int && y.n != 0 && y.int() != -1 {
				a, b := x.int(), y.int()
				var r int64
				switch compile.Opcode(ins) {
				case compile.MUL:
					r = a * b
					if a != 0 && (r/a != b || a == -1 && b == minInt) {
						goto slowMul
					}
				case compile.DIV:
					r = a / b
				default:
					r = a % b
				}
				sp--
				stack[sp-1] = intValue(r)
				break
			}
		slowMul:
			m.steps = steps
			r, err := m.mulDivMod(compile.Opcode(ins), stack[sp-2], stack[sp-1])
			steps = m.steps
			if err != nil {
				thrown = err
				goto raise
			}
			sp--
			stack[sp-1] = r
		case compile.EQ, compile.NE:
			x, y := stack[sp-2], stack[sp-1]
			var eq bool
			if x.k == Int && y.k == Int {
				eq = x.n == y.n
			} else {
				m.steps = steps
				var err *rtError
				eq, err = m.equal(x, y, 0)
				steps = m.steps
				if err != nil {
					thrown = err
					goto raise
				}
			}
			if compile.Opcode(ins) == compile.NE {
				eq = !eq
			}
			sp--
			stack[sp-1] = boolValue(eq)
		case compile.LT, compile.LE, compile.GT, compile.GE:
			x, y := stack[sp-2], stack[sp-1]
			var c int
			if x.k == Int && y.k == Int {
				switch {
				case x.int() < y.int():
					c = -1
				case x.int() > y.int():
					c = 1
				}
			} else {
				var err *rtError
				if c, err = compare(x, y); err != nil {
					thrown = err
					goto raise
				}
			}
			var r bool // stays false when c is unordered (a NaN)
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
		case compile.JMP:
			pc = arg
		case compile.JMPF:
			sp--
			if !truth(stack[sp]) {
				pc = arg
			}
		case compile.JMPT:
			sp--
			if truth(stack[sp]) {
				pc = arg
			}
		case compile.INDEX:
			x, i := stack[sp-2], stack[sp-1]
			if x.k == List && i.k == Int {
				l := x.list()
				if j := i.int(); j >= 0 && j < int64(len(l.elems)) {
					sp--
					stack[sp-1] = l.elems[j]
					break
				}
			}
			m.steps = steps
			r, err := m.index(x, i)
			steps = m.steps
			if err != nil {
				thrown = err
				goto raise
			}
			sp--
			stack[sp-1] = r
		case compile.SETINDEX:
			m.steps = steps
			err := m.setIndex(stack[sp-3], stack[sp-2], stack[sp-1])
			steps = m.steps
			if err != nil {
				thrown = err
				goto raise
			}
			sp -= 3
		case compile.ATTR:
			r, err := m.attr(stack[sp-1], consts[arg])
			if err != nil {
				thrown = err
				goto raise
			}
			stack[sp-1] = r
		case compile.SETATTR:
			if x := stack[sp-2]; x.k != Map {
				if x.k == Error {
					thrown = typeErrorf("error values are read-only (.%s)", consts[arg].str())
				} else {
					thrown = typeErrorf("%s has no fields (.%s)", typeName(x), consts[arg].str())
				}
				goto raise
			}
			m.steps = steps
			err := m.setIndex(stack[sp-2], consts[arg], stack[sp-1])
			steps = m.steps
			if err != nil {
				thrown = err
				goto raise
			}
			sp -= 2
		case compile.CALL:
			f := stack[sp-arg-1]
			switch f.k {
			case Func:
				cl := f.fn()
				callee := cl.fn
				if arg != callee.NumParams {
					thrown = errorf(KindCall, "%s takes %d argument%s, got %d", callee.Name, callee.NumParams, plural(callee.NumParams), arg)
					goto raise
				}
				if len(m.frames) >= MaxFrames {
					thrown = errorf(KindLimit, "call depth exceeds the limit of %d", MaxFrames)
					goto raise
				}
				fr.pc = pc
				newBase := sp - arg
				nl := len(callee.Locals)
				if need := newBase + nl + callee.MaxStack + 1; need > len(stack) {
					m.sp = sp
					m.ensureStack(need)
					stack = m.stack
				}
				for i := newBase + arg; i < newBase+nl; i++ {
					stack[i] = nilValue
				}
				sp = newBase + nl
				m.frames = append(m.frames, frame{fn: callee, closure: cl, base: newBase})
				fr = &m.frames[len(m.frames)-1]
				fn, code, pc, base, free = callee, callee.Code, 0, newBase, cl.cells
			case Builtin:
				save()
				emits := len(m.emits)
				r, err := builtins[f.n].fn(m, stack[sp-arg:sp])
				if len(m.emits) > emits && m.gridLen != 0 {
					m.emitted(steps - 1) // where this instruction began
					end = m.capped(end)
				}
				steps = m.steps
				if err != nil {
					thrown = err
					goto raise
				}
				sp -= arg
				stack[sp-1] = r
			default:
				thrown = typeErrorf("cannot call %s", typeName(f))
				goto raise
			}
		case compile.RETURN:
			r := stack[sp-1]
			depth := len(m.frames) - 1
			if depth == 0 {
				// The result becomes the prog's state: it must be data.
				_, nodes, err := toDataCounted(r)
				steps += uint64(nodes / elemsPerStep)
				if err != nil {
					thrown = errorf(err.kind, "result must be data: %s", err.msg)
					goto raise
				}
			}
			for n := len(m.handlers); n > 0 && m.handlers[n-1].frame == depth; n-- {
				m.handlers = m.handlers[:n-1]
			}
			m.frames = m.frames[:depth]
			if depth == 0 {
				fr.pc = pc
				m.sp, m.steps = sp, steps
				m.result = r
				m.status = checkpoint.Done
				m.sp = 0
				return
			}
			sp = base - 1
			stack[sp] = r
			sp++
			fr = &m.frames[depth-1]
			fn, code, pc, base = fr.fn, fr.fn.Code, fr.pc, fr.base
			free = nil
			if fr.closure != nil {
				free = fr.closure.cells
			}
		case compile.ITER:
			it, err := m.iterate(stack[sp-1])
			if err != nil {
				thrown = err
				goto raise
			}
			stack[sp-1] = it
		case compile.NEXT, compile.NEXT2:
			two := compile.Opcode(ins) == compile.NEXT2
			if stack[sp-1].k != iterKind {
				save()
				m.fault("iterator slot holds " + typeName(stack[sp-1]))
				return
			}
			k, v, ok := m.next(stack[sp-1].iter(), two)
			if !ok {
				sp--
				pc = arg
				break
			}
			if two {
				stack[sp] = k
				sp++
			}
			stack[sp] = v
			sp++
		case compile.TRY:
			m.handlers = append(m.handlers, handler{frame: len(m.frames) - 1, pc: arg, sp: sp})
		case compile.ENDTRY:
			m.handlers = m.handlers[:len(m.handlers)-1]
		case compile.THROW:
			sp--
			v := stack[sp]
			if v.k != Error {
				m.steps = steps
				s, err := m.toStr(v, 0)
				steps = m.steps
				if err != nil {
					thrown = err
					goto raise
				}
				thrown = &rtError{kind: KindError, msg: s, data: v}
				goto raise
			}
			rethrow = v
			goto raise
		case compile.ACT, compile.AWAIT:
			sp--
			m.pending = stack[sp]
			if compile.Opcode(ins) == compile.ACT {
				m.tag = m.prog.ActTags[arg]
				m.status = checkpoint.Acting
			} else {
				m.status = checkpoint.Awaiting
			}
			save()
			_, nodes, err := toDataCounted(m.pending)
			steps += uint64(nodes / elemsPerStep)
			m.steps = steps
			if err != nil {
				m.status = checkpoint.Runnable
				m.pending = nilValue
				m.tag = ""
				what := "await selector"
				if compile.Opcode(ins) == compile.ACT {
					what = "act arguments"
				}
				thrown = errorf(err.kind, "%s must be data: %s", what, err.msg)
				goto raise
			}
			m.seq++
			return
		default:
			panic(fmt.Sprintf("machine: invalid opcode %d", ins&0xff))
		}
		if fastOn && fastTakes(code[pc], stack, sp) {
			break
		}
		continue
	raise:
		// thrown (a runtime error) or rethrow (an error value) goes to the
		// innermost handler, or ends the machine.
		save()
		v := rethrow
		if thrown != nil {
			v = errorValue(&errorObj{kind: thrown.kind, msg: thrown.msg, data: thrown.data, pos: fn.Where(pc - 1)})
		}
		thrown, rethrow = nil, nilValue
		m.raise(v)
		if m.status != checkpoint.Runnable {
			return
		}
		load()
		if fastOn && fastTakes(code[pc], stack, sp) {
			break
		}
	}
	save()
}

const minInt = -1 << 63

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func newCell(v Value) Value { return Value{k: cellKind, p: ptr(&cellObj{v: v})} }

func (m *Machine) unassigned(name string) *rtError {
	return errorf(KindName, "%s used before its declaration ran", name)
}
