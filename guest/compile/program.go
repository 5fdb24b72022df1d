// program.go holds the compiled program: functions, constants and act tags.

package compile

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/runehost/runehost/guest/syntax"
)

// Version is the semantics version of the Rune machine: the language, the
// instruction set, the built-in table and its order, the step cost table and
// the texts of runtime errors. A checkpoint records it; bump it on any change
// a running prog could observe, and old checkpoints are refused.
const Version = 2

// Program is a compiled prog. It is a pure function of its source.
type Program struct {
	Hash      [32]byte // sha256 of the source
	Source    []byte   // the plain source, or the encoded source set (package modules)
	Consts    []Const
	Funcs     []*Funcode // Funcs[0] is the entry function
	Globals   []string   // global slot names; input and state first
	GlobalPos []syntax.Pos
	ActTags   []string // every act tag in the source and its modules, in the order compiled
}

// ConstKind says which field of a Const is meaningful.
type ConstKind uint8

// Constant kinds.
const (
	ConstInt ConstKind = iota
	ConstFloat
	ConstString
)

// Const is an entry of the constant pool.
type Const struct {
	Kind  ConstKind
	Int   int64
	Float float64
	Str   string
}

// Funcode is one compiled function.
type Funcode struct {
	Index     int
	Name      string
	File      string // the module it is from; "" for the main file
	Pos       syntax.Pos
	NumParams int
	Locals    []string // slot names, parameters first
	NumFree   int
	FreeNames []string // names of the captured variables
	MaxStack  int
	Code      []uint32
	Lines     []syntax.Pos // position of each instruction
	Depths    []int32      // operand stack depth before each instruction
}

// Position returns the source position of the instruction at pc.
func (f *Funcode) Position(pc int) syntax.Pos {
	if pc >= 0 && pc < len(f.Lines) {
		return f.Lines[pc]
	}
	return f.Pos
}

// Where returns the source position of the instruction at pc as text:
// line:col in the main file, FILE:line:col in a module.
func (f *Funcode) Where(pc int) string {
	if f.File != "" {
		return f.File + ":" + f.Position(pc).String()
	}
	return f.Position(pc).String()
}

// HashSource returns the program hash of src.
func HashSource(src []byte) [32]byte { return sha256.Sum256(src) }

// Disassemble returns a readable listing of p, for debugging and tests.
func (p *Program) Disassemble() string {
	var b strings.Builder
	for _, f := range p.Funcs {
		fmt.Fprintf(&b, "fn %d %s params=%d locals=%v free=%d maxstack=%d\n", f.Index, f.Name, f.NumParams, f.Locals, f.NumFree, f.MaxStack)
		for pc, ins := range f.Code {
			op, arg := Decode(ins)
			fmt.Fprintf(&b, "  %4d %-9s %d\t; %s\n", pc, op, arg, f.Lines[pc])
		}
	}
	return b.String()
}
