// exec_test.go checks how the loop asks Compiler for a program's code.

package machine_test

import (
	"testing"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

// Until Compiler answers for good, a long slice asks again as it goes;
// once it has, it is not asked again.
func TestCompilerAskedAgain(t *testing.T) {
	prog, err := compile.Compile([]byte("var s = 0\nfor i in range(100000) { s += i % 7 }\nreturn s"))
	if err != nil {
		t.Fatal(err)
	}
	var asked []uint64
	final := false
	machine.Compiler = func(p *compile.Program, steps uint64) (machine.Compiled, bool) {
		asked = append(asked, steps)
		return nil, final
	}
	defer func() { machine.Compiler = nil }()
	m, err := machine.New(prog, machine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.Run(1 << 40)
	if len(asked) < 5 || asked[0] != 0 || asked[1] == 0 {
		t.Fatalf("asked at %v", asked)
	}
	if v, err := m.Result(); err != nil || v != int64(299995) {
		t.Fatalf("result %v, %v", v, err)
	}
	asked, final = nil, true
	m, _ = machine.New(prog, machine.Config{})
	m.Run(1 << 40)
	if len(asked) != 1 {
		t.Fatalf("asked %d times after a final answer", len(asked))
	}
}
