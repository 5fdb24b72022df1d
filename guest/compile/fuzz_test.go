// fuzz_test.go fuzzes the compiler and checks it is a pure function of its source.

package compile

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/port/porttest"
)

func FuzzCompile(f *testing.F) {
	porttest.AddProgSeeds(f, "../..")
	addSetSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Compile(src)
		if err != nil {
			return
		}
		for _, fn := range p.Funcs {
			if len(fn.Code) != len(fn.Lines) || len(fn.Code) != len(fn.Depths) {
				t.Fatalf("%s: code, lines and depths differ in length", fn.Name)
			}
			for pc, ins := range fn.Code {
				op, arg := Decode(ins)
				if int(op) >= NumOpcodes {
					t.Fatalf("%s:%d: invalid opcode %d", fn.Name, pc, op)
				}
				switch op {
				case JMP, JMPF, JMPT, NEXT, NEXT2, TRY:
					if arg > len(fn.Code) {
						t.Fatalf("%s:%d: jump to %d", fn.Name, pc, arg)
					}
				}
				if fn.Depths[pc] < 0 || int(fn.Depths[pc]) > fn.MaxStack {
					t.Fatalf("%s:%d: depth %d outside [0, %d]", fn.Name, pc, fn.Depths[pc], fn.MaxStack)
				}
			}
		}
	})
}

func TestCompileDeterministic(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/progs/*.rune")
	for _, file := range files {
		src, _ := modules.Load(file, nil)
		a, errA := Compile(src)
		b, errB := Compile(src)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: compile is not deterministic", file)
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: two compilations differ", file)
		}
	}
}

// addSetSeeds adds the source set of every testdata prog that imports.
func addSetSeeds(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/progs/*.rune")
	for _, file := range files {
		if b, err := modules.Load(file, nil); err == nil && modules.IsSet(b) {
			f.Add(b)
		}
	}
}
