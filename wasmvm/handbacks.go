// handbacks.go counts where compiled code hands back to the interpreter,
// by instruction and builtin: the profile that says what to compile next.

package wasmvm

import (
	"cmp"
	"slices"

	"github.com/tetratelabs/wazero/api"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

// HandBack is an instruction at which compiled code handed a run back to
// the interpreter (Config.Profile), and how often it did. A block that
// does not fit in what is left of a slice is handed back at its first
// instruction too: profile with long slices.
type HandBack struct {
	Prog    [32]byte // the program's hash
	Fn, PC  int      // the function's index and the instruction's
	Op      string   // the instruction, by name
	Builtin string   // for a CALL of a builtin, its name
	N       int      // how many times
}

// handBackKey is where one hand-back happened; builtin is -1 for an
// instruction that is not a call of one.
type handBackKey struct {
	prog        [32]byte
	fn, pc, bin int
}

// HandBacks returns the hand-backs counted so far, the most frequent
// first. Without Config.Profile there are none.
func (r *Runtime) HandBacks() []HandBack {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []HandBack
	for k, n := range r.handBacks {
		hb := HandBack{Prog: k.prog, Fn: k.fn, PC: k.pc, N: n}
		if ins, ok := r.instruction(k.prog, k.fn, k.pc); ok {
			hb.Op = compile.Opcode(ins).String()
		}
		if k.bin >= 0 && k.bin < len(compile.Builtins) {
			hb.Builtin = compile.Builtins[k.bin]
		}
		out = append(out, hb)
	}
	slices.SortFunc(out, func(a, b HandBack) int {
		return cmp.Or(b.N-a.N, a.Fn-b.Fn, a.PC-b.PC)
	})
	return out
}

// noteHandBack counts where compiled code entered at machine m with the
// limit end left the run, unless it left at the limit. It reads the
// machine's innermost frame from the guest's memory by the layout.
func (r *Runtime) noteHandBack(mem api.Memory, prog [32]byte, m uint32, end uint64) {
	l := &machine.TheLayout
	read := func(addr uint64) uint64 {
		v, _ := mem.ReadUint64Le(uint32(addr))
		return v
	}
	if read(uint64(m)+uint64(l.MachineSteps)) >= end {
		return // the limit, not a hand-back
	}
	frames := read(uint64(m) + uint64(l.MachineFrames))
	n := read(uint64(m) + uint64(l.MachineFrames) + uint64(l.SliceLen))
	if n == 0 || n > uint64(l.MaxFrames) {
		return
	}
	top := frames + (n-1)*uint64(l.FrameSize)
	fn := int(read(read(top+uint64(l.FrameFn)) + uint64(l.FuncIndex)))
	pc := int(read(top + uint64(l.FramePC)))
	bin := -1
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handBacks == nil {
		r.handBacks = make(map[handBackKey]int)
	}
	ins, ok := r.instruction(prog, fn, pc)
	if !ok {
		return // not an instruction of the program: a frame the guest broke
	}
	if compile.Opcode(ins) == compile.CALL {
		// The callee sits under the call's arguments on the stack.
		stack, sp := read(uint64(m)+uint64(l.MachineStack)), read(uint64(m)+uint64(l.MachineSP))
		if at := sp - 1 - uint64(ins>>8); at < sp {
			v := stack + at*uint64(l.ValueSize)
			kind, _ := mem.ReadByte(uint32(v + uint64(l.ValueKind)))
			if uint32(kind) == l.KindBuiltin {
				bin = int(read(v + uint64(l.ValueN)))
			}
		}
	}
	r.handBacks[handBackKey{prog, fn, pc, bin}]++
}

// instruction is the instruction at pc of function fn of the program of
// hash prog, from its source, compiled once for the profile. r.mu is held.
func (r *Runtime) instruction(prog [32]byte, fn, pc int) (uint32, bool) {
	if r.profiled == nil {
		r.profiled = make(map[[32]byte]*compile.Program)
	}
	p, ok := r.profiled[prog]
	if !ok {
		p, _ = compile.Compile(r.sources[prog])
		r.profiled[prog] = p
	}
	if p == nil || fn < 0 || fn >= len(p.Funcs) || pc < 0 || pc >= len(p.Funcs[fn].Code) {
		return 0, false
	}
	return uint32(p.Funcs[fn].Code[pc]), true
}
