// opcode.go holds the instruction set; each opcode is annotated with its stack effect.

package compile

import "fmt"

// Opcode is a machine instruction. An instruction is a uint32 holding the
// opcode in its low 8 bits and an unsigned operand in its high 24 bits.
type Opcode uint8

// The instruction set. "x y - z" pops y then x and pushes z; [a] is the operand.
const (
	NOP       Opcode = iota // -
	POP                     // x -
	DUP                     // x - x x
	DUP2                    // x y - x y x y
	NIL                     // - nil
	TRUE                    // - true
	FALSE                   // - false
	CONST                   // - consts[a]
	SMALLINT                // - int(a)
	LOCAL                   // - locals[a]
	SETLOCAL                // x -              locals[a] = x
	CELL                    // - cell(locals[a]).v
	SETCELL                 // x -              cell(locals[a]).v = x
	NEWCELL                 // -                locals[a] = new empty cell
	WRAPCELL                // -                locals[a] = new cell holding locals[a]
	FREE                    // - free[a].v
	SETFREE                 // x -              free[a].v = x
	LOCALREF                // - cell           the cell in locals[a], to capture
	FREEREF                 // - cell           free[a], to capture
	GLOBAL                  // - globals[a]
	SETGLOBAL               // x -              globals[a] = x
	BUILTIN                 // - builtin[a]
	LIST                    // x1 ... xa - list
	MAP                     // k1 v1 ... ka va - map
	FUNC                    // c1 ... cn - closure of funcs[a] over n captured cells
	NEG                     // x - -x
	NOT                     // x - !x
	ADD                     // x y - x+y
	SUB                     // x y - x-y
	MUL                     // x y - x*y
	DIV                     // x y - x/y
	MOD                     // x y - x%y
	EQ                      // x y - x==y
	NE                      // x y - x!=y
	LT                      // x y - x<y
	LE                      // x y - x<=y
	GT                      // x y - x>y
	GE                      // x y - x>=y
	JMP                     // -                pc = a
	JMPF                    // x -              if !truth(x) { pc = a }
	JMPT                    // x -              if truth(x) { pc = a }
	INDEX                   // x i - x[i]
	SETINDEX                // x i v -          x[i] = v
	ATTR                    // x - x.consts[a]
	SETATTR                 // x v -            x.consts[a] = v
	CALL                    // f x1 ... xa - result
	RETURN                  // x -              return x to the caller
	ITER                    // x - iterator
	NEXT                    // it - it v        or, when exhausted: pop it and pc = a
	NEXT2                   // it - it k v      or, when exhausted: pop it and pc = a
	TRY                     // -                push a handler whose catch starts at a
	ENDTRY                  // -                pop the innermost handler
	THROW                   // x -              raise x as an error
	ACT                     // args - reply     suspend for host act acttags[a]
	AWAIT                   // sel - event      suspend for a recorded event
	numOpcodes
)

var opcodeNames = [...]string{
	NOP: "nop", POP: "pop", DUP: "dup", DUP2: "dup2", NIL: "nil", TRUE: "true", FALSE: "false",
	CONST: "const", SMALLINT: "smallint", LOCAL: "local", SETLOCAL: "setlocal", CELL: "cell",
	SETCELL: "setcell", NEWCELL: "newcell", WRAPCELL: "wrapcell", FREE: "free", SETFREE: "setfree",
	LOCALREF: "localref", FREEREF: "freeref", GLOBAL: "global", SETGLOBAL: "setglobal",
	BUILTIN: "builtin", LIST: "list", MAP: "map", FUNC: "func", NEG: "neg", NOT: "not",
	ADD: "add", SUB: "sub", MUL: "mul", DIV: "div", MOD: "mod", EQ: "eq", NE: "ne",
	LT: "lt", LE: "le", GT: "gt", GE: "ge", JMP: "jmp", JMPF: "jmpf", JMPT: "jmpt",
	INDEX: "index", SETINDEX: "setindex", ATTR: "attr", SETATTR: "setattr", CALL: "call",
	RETURN: "return", ITER: "iter", NEXT: "next", NEXT2: "next2", TRY: "try", ENDTRY: "endtry",
	THROW: "throw", ACT: "act", AWAIT: "await",
}

func (op Opcode) String() string {
	if op < numOpcodes {
		return opcodeNames[op]
	}
	return fmt.Sprintf("op(%d)", op)
}

// NumOpcodes is the number of defined opcodes; larger values are invalid.
const NumOpcodes = int(numOpcodes)

// MaxArg is the largest operand an instruction can hold.
const MaxArg = 1<<24 - 1

// Encode packs an instruction.
func Encode(op Opcode, arg int) uint32 { return uint32(op) | uint32(arg)<<8 }

// Decode unpacks an instruction.
func Decode(ins uint32) (Opcode, int) { return Opcode(ins), int(ins >> 8) }
