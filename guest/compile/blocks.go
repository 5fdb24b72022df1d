// blocks.go holds the basic blocks of a function, as the wasm compiler cuts them.

package compile

// Handed marks the opcodes that compiled code always hands to the
// interpreter: they allocate, suspend or unwind. Every other opcode is
// compiled, with its uncommon cases handed over too.
var Handed = func() (t [256]bool) {
	for _, op := range []Opcode{FUNC, NEWCELL, WRAPCELL, TRY, ENDTRY, THROW, ACT, AWAIT} {
		t[op] = true
	}
	for i := int(numOpcodes); i < len(t); i++ {
		t[i] = true // invalid: the interpreter faults
	}
	return t
}()

// Leaders marks the first instruction of each basic block of f: the entry,
// every jump target, and every instruction after a jump, a call, a return
// or a handed opcode. Compiled code is entered only at a leader, so the
// interpreter, having run an instruction the compiled code handed it, runs
// on to the next leader and hands back there.
func Leaders(f *Funcode) []bool {
	lead := make([]bool, len(f.Code)+1)
	lead[0] = true
	for pc, ins := range f.Code {
		op, arg := Decode(ins)
		switch op {
		case JMP, JMPF, JMPT, NEXT, NEXT2, TRY:
			if arg <= len(f.Code) {
				lead[arg] = true
			}
			lead[pc+1] = true
		case CALL, RETURN:
			lead[pc+1] = true
		default:
			if Handed[op] {
				lead[pc+1] = true
			}
		}
	}
	return lead[:len(f.Code)]
}

// Digest is a checksum of what compiled code relies on in p: every
// function's code, depths and frame sizes, and the constants. The sandbox's
// host compiles p from its source again, and compares digests before it
// runs code compiled from its own copy.
func (p *Program) Digest() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= prime
			v >>= 8
		}
	}
	mix(uint64(len(p.Funcs)))
	for _, f := range p.Funcs {
		mix(uint64(f.Index))
		mix(uint64(f.NumParams))
		mix(uint64(len(f.Locals)))
		mix(uint64(f.NumFree))
		mix(uint64(f.MaxStack))
		mix(uint64(len(f.Code)))
		for i, ins := range f.Code {
			mix(uint64(ins)<<32 | uint64(uint32(f.Depths[i])))
		}
	}
	mix(uint64(len(p.Consts)))
	for _, c := range p.Consts {
		mix(uint64(c.Kind))
		mix(uint64(c.Int))
		mix(uint64(len(c.Str)))
	}
	mix(uint64(len(p.Globals)))
	return h
}
