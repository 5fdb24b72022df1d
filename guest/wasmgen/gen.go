// Package wasmgen compiles a Rune program's bytecode to a WebAssembly module
// whose code runs on the machine's own memory, step for step as the
// interpreter would.
//
// The module imports the guest's memory ("guest" "memory") and exports
// enter(m i32, end i64) -> i32: run from the innermost frame of the machine
// at address m while its charged steps are below end. Each Rune function
// becomes one wasm function over its basic blocks (compile.Leaders). A
// block runs only if all of its steps fit below end; otherwise, and at
// anything the code does not take (an allocation, an error, a builtin), it
// writes the machine's registers back and returns, and the interpreter
// goes on from that instruction. The machine's state is the interpreter's
// own, so either can continue the other's work at any boundary, and a
// checkpoint cannot tell which ran. docs/design.md, "Compiled progs".
package wasmgen

import (
	"errors"
	"fmt"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

// Version is the generator's own version, bumped on each change to the
// code it emits. (No cache needs it: wazero's is keyed by the module's
// bytes, and the Runtime's lives no longer than the process.)
const Version = 6

// ErrTooLarge is returned for a program beyond what the generator compiles.
var ErrTooLarge = errors.New("wasmgen: program too large to compile")

// MaxCode is the largest program, in instructions, that is compiled;
// MaxFuncCode the largest function. Beyond them the interpreter runs the
// code: wazero's compile time grows faster than the code, and one huge
// expression gains nothing from compiling it.
const (
	MaxCode     = 1 << 18
	MaxFuncCode = 1 << 13
)

// Function type indexes.
const (
	typeFunc   = iota // (m i32, pc i32, end i64) -> i32: one Rune function
	typeEnter         // (m i32, end i64) -> i32
	typeUnary         // (addr i32) -> i32
	typeBinary        // (x i32, y i32) -> i32
	typeArith         // (x i32, y i32, dst i32) -> i32
	typeStrInt        // (n i64, dst i32, m i32) -> i32
	typeQuad          // (a, b, c, d i32) -> i32
	typeFind          // (map i32, key i32) -> i64
)

// Results of a Rune function's wasm function.
const (
	statusExit     = 0 // registers written back; the interpreter goes on
	statusReturned = 1 // returned to the caller's frame, now innermost
)

// Compile returns the wasm module for p, laid out for l.
func Compile(p *compile.Program, l machine.Layout) ([]byte, error) {
	total := 0
	for _, f := range p.Funcs {
		total += len(f.Code)
	}
	if total > MaxCode || len(p.Funcs) > compile.MaxFuncs {
		return nil, ErrTooLarge
	}
	g := &gen{p: p, l: l, n: uint32(len(p.Funcs))}
	g.fnEnter = g.n
	g.fnTruth = g.n + 1
	g.fnEq = g.n + 2
	g.fnCmp = g.n + 3
	g.fnArith = g.n + 4 // add, sub, mul, div, mod
	g.fnStrInt = g.fnArith + uint32(len(arithOps))
	g.fnConcat = g.fnStrInt + 1
	g.fnMemEq = g.fnStrInt + 2
	g.fnFind = g.fnStrInt + 3
	g.fnMapSet = g.fnStrInt + 4
	g.fnASCII = g.fnStrInt + 5

	var bodies []code
	for _, f := range p.Funcs {
		bodies = append(bodies, g.function(f))
	}
	bodies = append(bodies, g.enter(), g.truth(), g.eq(), g.cmp())
	for _, op := range arithOps {
		bodies = append(bodies, g.arith(op))
	}
	bodies = append(bodies, g.strIntFn(), g.concatFn(), g.memEqFn(), g.findFn(), g.mapSetFn(), g.asciiFn())
	return g.module(bodies), nil
}

// gen is the state of one program's compilation.
type gen struct {
	p *compile.Program
	l machine.Layout
	n uint32 // Rune functions

	fnEnter, fnTruth, fnEq, fnCmp, fnArith                 uint32
	fnStrInt, fnConcat, fnMemEq, fnFind, fnMapSet, fnASCII uint32
}

func (g *gen) module(bodies []code) []byte {
	var m code
	m.byte(0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00)

	var types code
	sig := func(params []byte, results ...byte) {
		types.byte(0x60)
		types.vec(params)
		types.vec(results)
	}
	types.u32(8)
	sig([]byte{tI32, tI32, tI64}, tI32)
	sig([]byte{tI32, tI64}, tI32)
	sig([]byte{tI32}, tI32)
	sig([]byte{tI32, tI32}, tI32)
	sig([]byte{tI32, tI32, tI32}, tI32)
	sig([]byte{tI64, tI32, tI32}, tI32)
	sig([]byte{tI32, tI32, tI32, tI32}, tI32)
	sig([]byte{tI32, tI32}, tI64)
	m.section(1, types)

	var imports code
	imports.u32(1)
	imports.name("guest")
	imports.name("memory")
	imports.byte(0x02, 0x00) // memory, no maximum
	imports.u32(0)
	m.section(2, imports)

	var funcs code
	funcs.u32(uint32(len(bodies)))
	for i := range bodies {
		switch {
		case uint32(i) < g.n:
			funcs.u32(typeFunc)
		case uint32(i) == g.fnEnter:
			funcs.u32(typeEnter)
		case uint32(i) == g.fnTruth:
			funcs.u32(typeUnary)
		case uint32(i) == g.fnEq || uint32(i) == g.fnCmp:
			funcs.u32(typeBinary)
		case uint32(i) == g.fnStrInt:
			funcs.u32(typeStrInt)
		case uint32(i) == g.fnConcat:
			funcs.u32(typeQuad)
		case uint32(i) == g.fnFind:
			funcs.u32(typeFind)
		case uint32(i) == g.fnASCII:
			funcs.u32(typeBinary)
		default: // the arithmetic, memEq and mapSet
			funcs.u32(typeArith)
		}
	}
	m.section(3, funcs)

	var table code
	table.u32(1)
	table.byte(tFunc, 0x00)
	table.u32(g.n)
	m.section(4, table)

	var exports code
	exports.u32(1)
	exports.name("enter")
	exports.byte(0x00)
	exports.u32(g.fnEnter)
	m.section(7, exports)

	var elems code
	elems.u32(1)
	elems.u32(0) // active, table 0, funcref
	elems.i32(0)
	elems.end()
	elems.u32(g.n)
	for i := uint32(0); i < g.n; i++ {
		elems.u32(i)
	}
	m.section(9, elems)

	var codes code
	codes.u32(uint32(len(bodies)))
	for _, b := range bodies {
		codes.vec(b)
	}
	m.section(10, codes)
	return m
}

// locals declares a body's locals: counts of i32, i64 and f64, in that
// order after the parameters.
func locals(b *code, n32, n64, nf uint32) {
	b.u32(3)
	b.u32(n32)
	b.byte(tI32)
	b.u32(n64)
	b.byte(tI64)
	b.u32(nf)
	b.byte(tF64)
}

// enter runs the innermost frame's function, and on a return the caller's,
// until one hands back.
func (g *gen) enter() code {
	const (
		m, end = 0, 1
		fr, fn = 2, 3
		idx    = 4
	)
	l := &g.l
	var b code
	locals(&b, 3, 0, 0)
	b.block(opLoop)
	// fr = frames + (len-1)*FrameSize
	b.get(m)
	b.mem(opI64Load, l.MachineFrames)
	b.byte(opI32WrapI64)
	b.get(m)
	b.mem(opI64Load, l.MachineFrames+l.SliceLen)
	b.byte(opI32WrapI64)
	b.i32(1)
	b.byte(opI32Sub)
	b.i32(int32(l.FrameSize))
	b.byte(opI32Mul)
	b.byte(opI32Add)
	b.tee(fr)
	b.mem(opI64Load, l.FrameFn)
	b.byte(opI32WrapI64)
	b.tee(fn)
	b.mem(opI64Load, l.FuncIndex)
	b.i64(int64(g.n))
	b.byte(opI64GeU)
	b.block(opIf)
	b.i32(statusExit)
	b.byte(opReturn)
	b.end()
	b.get(m)
	b.get(fr)
	b.mem(opI64Load, l.FramePC)
	b.byte(opI32WrapI64)
	b.get(end)
	b.get(fn)
	b.mem(opI64Load, l.FuncIndex)
	b.byte(opI32WrapI64)
	b.byte(opCallIndirect)
	b.u32(typeFunc)
	b.u32(0)
	b.tee(idx)
	b.i32(statusReturned)
	b.byte(opI32Eq)
	b.brIf(0)
	b.get(idx)
	b.byte(opReturn)
	b.end()
	b.byte(opUnreachable)
	b.end()
	return b
}

// refuse is the body of a function the generator does not compile: it
// hands every entry back.
func refuse() code {
	var b code
	locals(&b, 0, 0, 0)
	b.i32(statusExit)
	b.end()
	return b
}

// compilable reports why f is not compiled, if it is not.
func compilable(f *compile.Funcode) error {
	if len(f.Code) > MaxFuncCode {
		return fmt.Errorf("%s: %d instructions, more than %d", f.Name, len(f.Code), MaxFuncCode)
	}
	return checkDepths(f, compile.Leaders(f))
}

// checkDepths reports whether the compiler's recorded stack depths agree
// with the instruction set's effects along every edge, which the generated
// code relies on to address operands statically.
func checkDepths(f *compile.Funcode, lead []bool) error {
	n := len(f.Code)
	if len(f.Depths) != n || n == 0 {
		return fmt.Errorf("%s: depths missing", f.Name)
	}
	for pc, ins := range f.Code {
		op, arg := compile.Decode(ins)
		d := int(f.Depths[pc])
		if d < 0 || d > f.MaxStack {
			return fmt.Errorf("%s: depth %d at %d", f.Name, d, pc)
		}
		after, ok := effect(op, arg, d)
		if !ok {
			continue // handed over: the interpreter keeps its own account
		}
		if after < 0 || after > f.MaxStack {
			return fmt.Errorf("%s: depth %d after %d", f.Name, after, pc)
		}
		switch op {
		case compile.JMP, compile.JMPF, compile.JMPT:
			if arg >= n || int(f.Depths[arg]) != after {
				return fmt.Errorf("%s: jump at %d to %d", f.Name, pc, arg)
			}
			if op == compile.JMP {
				continue
			}
		case compile.NEXT, compile.NEXT2:
			if arg >= n || int(f.Depths[arg]) != d-1 {
				return fmt.Errorf("%s: loop exit at %d to %d", f.Name, pc, arg)
			}
		case compile.RETURN:
			continue
		}
		if pc+1 >= n {
			return fmt.Errorf("%s: falls off its end at %d", f.Name, pc)
		}
		if int(f.Depths[pc+1]) != after {
			return fmt.Errorf("%s: depth at %d is %d, want %d", f.Name, pc+1, f.Depths[pc+1], after)
		}
	}
	return nil
}

// effect is the depth after an instruction the generator compiles, and
// false for one it hands over.
func effect(op compile.Opcode, arg, d int) (int, bool) {
	if compile.Handed[op] {
		return 0, false
	}
	switch op {
	case compile.NOP, compile.NEG, compile.NOT, compile.NEWCELL, compile.WRAPCELL, compile.ATTR:
		return d, true
	case compile.POP, compile.SETLOCAL, compile.SETCELL, compile.SETFREE, compile.SETGLOBAL,
		compile.ADD, compile.SUB, compile.MUL, compile.DIV, compile.MOD,
		compile.EQ, compile.NE, compile.LT, compile.LE, compile.GT, compile.GE,
		compile.JMPF, compile.JMPT, compile.INDEX, compile.RETURN:
		return d - 1, true
	case compile.DUP, compile.NIL, compile.TRUE, compile.FALSE, compile.CONST, compile.SMALLINT,
		compile.LOCAL, compile.CELL, compile.FREE, compile.LOCALREF, compile.FREEREF,
		compile.GLOBAL, compile.BUILTIN, compile.NEXT:
		return d + 1, true
	case compile.DUP2, compile.NEXT2:
		return d + 2, true
	case compile.SETINDEX:
		return d - 3, true
	case compile.SETATTR:
		return d - 2, true
	case compile.JMP:
		return d, true
	case compile.CALL:
		return d - arg, true
	case compile.LIST:
		return d - arg + 1, true
	case compile.MAP:
		return d - 2*arg + 1, true
	case compile.ITER:
		return d, true
	}
	return 0, false
}

// Compiled marks, by function index, the functions of p that Compile
// compiles (1) and those it hands over whole (0).
func Compiled(p *compile.Program) []byte {
	out := make([]byte, len(p.Funcs))
	for i, f := range p.Funcs {
		if compilable(f) == nil {
			out[i] = 1
		}
	}
	return out
}

// Uncompiled lists the functions of p the generator hands over whole, with
// why: their code is run by the interpreter alone.
func Uncompiled(p *compile.Program) []string {
	var out []string
	for _, f := range p.Funcs {
		if err := compilable(f); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}
