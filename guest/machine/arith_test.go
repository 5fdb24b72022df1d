// arith_test.go checks int and float arithmetic at the edges, on both the
// interpreter's fast paths and the general ones.

package machine

import (
	"fmt"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

func eval(t *testing.T, expr string) string {
	t.Helper()
	src := fmt.Sprintf("let f = fn (x) { return x }\nreturn str(%s)", expr)
	p, err := compile.Compile([]byte(src))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	m, err := New(p, Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.Run(1 << 20)
	switch m.Status() {
	case checkpoint.Done:
		r, _ := m.Result()
		return r.(string)
	case checkpoint.Failed:
		return m.Failure().Kind + ": " + m.Failure().Msg
	}
	return m.Status().String()
}

func TestArithmetic(t *testing.T) {
	const min = "(-9223372036854775807 - 1)"
	for _, tc := range []struct{ expr, want string }{
		{"7 / 2", "3"}, {"-7 / 2", "-3"}, {"7 % -3", "1"}, {"-7 % 3", "-1"},
		{"7.0 / 2", "3.5"}, {"7 / 2.0", "3.5"}, {"1 / 0", "zero_division: division by zero"},
		{"1 % 0", "zero_division: modulo by zero"}, {"1.5 / 0", "zero_division: division by zero"},
		{"9223372036854775807 + 1", "overflow: integer overflow in 9223372036854775807 + 1"},
		{min + " - 1", "overflow: integer overflow in -9223372036854775808 - 1"},
		{"-1 * " + min, "overflow: integer overflow in -1 * -9223372036854775808"},
		{min + " * -1", "overflow: integer overflow in -9223372036854775808 * -1"},
		{"f(-1) * f(" + min + ")", "overflow: integer overflow in -1 * -9223372036854775808"},
		{min + " / -1", "overflow: integer overflow in -9223372036854775808 / -1"},
		{min + " % -1", "0"},
		{"4294967296 * 4294967296", "overflow: integer overflow in 4294967296 * 4294967296"},
		{"3037000499 * 3037000499", "9223372030926249001"},
		{"-f(" + min + ")", "overflow: integer overflow in -(-9223372036854775808)"},
		{"abs(" + min + ")", "overflow: integer overflow in abs(-9223372036854775808)"},
		{"1 + 2.5", "3.5"}, {"0.1 + 0.2", "0.30000000000000004"}, {"2.0 * 3", "6.0"},
		{"1 == 1.0", "true"}, {"[1, [2]] == [1, [2.0]]", "true"}, {"{a: 1, b: 2} == {b: 2, a: 1}", "true"},
		{"\"a\" * 3", "aaa"}, {"[1] * 3", "[1, 1, 1]"}, {"\"a\" + 1", "type: unsupported operands for +: str and int"},
		{"1 < \"a\"", "type: cannot compare int with str"},
		{"int(1e19)", "overflow: int: 1e+19 does not fit in an int"},
		{"floor(-1.5)", "-2"}, {"round(2.5)", "2"}, {"ceil(1.2)", "2"},
	} {
		if got := eval(t, tc.expr); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
}
