// fuzz_test.go fuzzes the parser: any input gives a tree or an error, never a panic.

package syntax

import (
	"strings"
	"testing"

	"github.com/runehost/runehost/guest/port/porttest"
)

func addProgSeeds(f *testing.F) {
	porttest.AddProgSeeds(f, "../..")
	f.Add([]byte(strings.Repeat("[", 500)))
	f.Add([]byte("let s = \"\\u{110000}\""))
	f.Add([]byte("x = `raw"))
}

func FuzzParse(f *testing.F) {
	addProgSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse(src)
		if err == nil && file == nil {
			t.Fatal("nil file without error")
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T", err)
			}
		}
	})
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"let = 1", "1:5: got =, want identifier"},
		{"x +", "1:4: got end of file, want an expression"},
		{"x +\n", "2:1: got end of file, want an expression"},
		{"if x { }\nelse { }", "2:1: else must be on the same line as the } before it"},
		{"let s = \"abc", "1:9: unterminated string literal"},
		{"a < b < c", "1:7: comparison operators do not chain; use &&"},
		{"x = 99999999999999999999", "1:5: integer literal 99999999999999999999 overflows int64"},
		{strings.Repeat("[", 200), "1:101: nesting too deep (more than 100 levels)"},
		{"let x = 1 let y = 2", "1:11: got let after statement, want newline or ;"},
		{"{a: 1}", "1:1: a block cannot stand alone; a map literal is not a statement"},
		{"let s = \"\\q\"", "1:10: unknown escape sequence \\q"},
		{"x = 1 # y", "1:7: unexpected character '#'"},
	} {
		_, err := Parse([]byte(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}

func TestParseSourceLimit(t *testing.T) {
	_, err := Parse(make([]byte, MaxSource+1))
	if err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("got %v", err)
	}
}
