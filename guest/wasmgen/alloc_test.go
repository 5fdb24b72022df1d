// alloc_test.go checks which map literals the generator makes itself.

package wasmgen

import (
	"testing"

	"github.com/runehost/runehost/guest/compile"
)

// TestLiteralKeys: a MAP's keys are taken as names only when each was
// pushed by a string CONST that nothing after it could change, all
// different, and no jump from outside lands among the literal's code.
func TestLiteralKeys(t *testing.T) {
	p := &compile.Program{Consts: []compile.Const{
		{Kind: compile.ConstString, Str: "a"}, {Kind: compile.ConstString, Str: "b"}, {Kind: compile.ConstInt, Int: 1},
	}}
	type ins struct {
		op  compile.Opcode
		arg int
	}
	cases := []struct {
		name string
		code []ins
		want bool
	}{
		{"names", []ins{{compile.CONST, 0}, {compile.SMALLINT, 1}, {compile.CONST, 1}, {compile.SMALLINT, 2}, {compile.MAP, 2}, {compile.RETURN, 0}}, true},
		{"value with a call", []ins{{compile.CONST, 0}, {compile.GLOBAL, 0}, {compile.SMALLINT, 1}, {compile.CALL, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, true},
		{"same name twice", []ins{{compile.CONST, 0}, {compile.SMALLINT, 1}, {compile.CONST, 0}, {compile.SMALLINT, 2}, {compile.MAP, 2}, {compile.RETURN, 0}}, false},
		{"an int key", []ins{{compile.CONST, 2}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, false},
		{"a computed key", []ins{{compile.LOCAL, 0}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, false},
		{"the key changed after", []ins{{compile.CONST, 0}, {compile.NEG, 0}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, false},
		{"a key computed from constants", []ins{{compile.CONST, 0}, {compile.CONST, 1}, {compile.ADD, 0}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, false},
		{"a key indexed", []ins{{compile.CONST, 0}, {compile.SMALLINT, 1}, {compile.INDEX, 0}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, false},
		{"a value that is an empty list", []ins{{compile.CONST, 0}, {compile.LIST, 0}, {compile.MAP, 1}, {compile.RETURN, 0}}, true},
		{"a value computed", []ins{{compile.CONST, 0}, {compile.SMALLINT, 1}, {compile.SMALLINT, 2}, {compile.ADD, 0}, {compile.MAP, 1}, {compile.RETURN, 0}}, true},
		{"a jump in from outside", []ins{{compile.JMP, 2}, {compile.CONST, 0}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, false},
		{"a jump to its start", []ins{{compile.JMP, 1}, {compile.CONST, 0}, {compile.SMALLINT, 1}, {compile.MAP, 1}, {compile.RETURN, 0}}, true},
	}
	for _, tc := range cases {
		f := &compile.Funcode{}
		d := 0
		at := -1
		for i, in := range tc.code {
			f.Code = append(f.Code, compile.Encode(in.op, in.arg))
			f.Depths = append(f.Depths, int32(d))
			switch in.op {
			case compile.CONST, compile.SMALLINT, compile.LOCAL, compile.GLOBAL, compile.LIST:
				d++
			case compile.ADD, compile.INDEX:
				d--
			case compile.CALL:
				d -= in.arg
			case compile.MAP:
				d -= 2*in.arg - 1
				at = i
			}
		}
		n := int(f.Code[at] >> 8)
		if got := literalKeys(p, f, at, n); got != tc.want {
			t.Errorf("%s: literalKeys = %v, want %v", tc.name, got, tc.want)
		}
	}
}
