// modules_test.go tests gathering a source set, its encoding, and the
// import errors (missing modules, cycles) with their positions.

package modules_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/modules"
)

// tree writes files (slash names) under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadPlainWithoutImports(t *testing.T) {
	dir := tree(t, map[string]string{"p.rune": "return 1\n"})
	src, err := modules.Load(filepath.Join(dir, "p.rune"), nil)
	if err != nil || string(src) != "return 1\n" {
		t.Fatalf("got %q, %v; want the file as it is", src, err)
	}
}

func TestLoadSetAndHash(t *testing.T) {
	files := map[string]string{
		"p.rune":     "import \"lib/a.rune\" as a\nimport \"std/json.rune\" as json\nreturn a.f()\n",
		"lib/a.rune": "import \"b.rune\" as b\nfn f() { return b.x }\n",
		"lib/b.rune": "let x = 7\n",
	}
	dir := tree(t, files)
	src, err := modules.Load(filepath.Join(dir, "p.rune"), nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := modules.Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lib/a.rune", "lib/b.rune", "p.rune", "std/json.rune"}
	var got []string
	for n := range set.Files {
		got = append(got, n)
	}
	if len(got) != len(want) || set.Main != "p.rune" {
		t.Fatalf("set %v main %s, want %v", got, set.Main, want)
	}
	if !strings.HasPrefix(string(modules.Encode(set)), modules.Magic) || string(modules.Encode(set)) != string(src) {
		t.Fatal("the encoding is not canonical")
	}
	p, err := compile.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	// The hash covers every file: a change to a nested import changes it.
	if err := os.WriteFile(filepath.Join(dir, "lib/b.rune"), []byte("let x = 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src2, err := modules.Load(filepath.Join(dir, "p.rune"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := compile.Compile(src2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash == p2.Hash {
		t.Fatal("a changed import left the program hash as it was")
	}
}

func TestLoadLibraryPath(t *testing.T) {
	lib := tree(t, map[string]string{"util/u.rune": "import \"v.rune\" as v\nlet n = v.n + 1\n", "util/v.rune": "let n = 1\n"})
	dir := tree(t, map[string]string{"p.rune": "import \"util/u.rune\" as u\nreturn u.n\n"})
	if _, err := modules.Load(filepath.Join(dir, "p.rune"), nil); err == nil || !strings.Contains(err.Error(), "RUNEHOST_PATH") {
		t.Fatalf("without the library path: %v", err)
	}
	src, err := modules.Load(filepath.Join(dir, "p.rune"), []string{lib})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.Compile(src); err != nil {
		t.Fatal(err)
	}
}

func TestImportErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing", map[string]string{"p.rune": "let a = 1\n  import \"nope.rune\" as n\n"},
			`2:3: module "nope.rune" not found`},
		{"missing in a module", map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "\n\nimport \"x/y.rune\" as y\n"},
			`a.rune:3:1: module "x/y.rune" not found`},
		{"missing std", map[string]string{"p.rune": "import \"std/nope.rune\" as n\n"},
			`1:1: module "std/nope.rune" not found: tried the standard library's std/nope.rune`},
		{"cycle", map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "import \"b.rune\" as b\n", "b.rune": "let x = 1\nimport \"a.rune\" as a\n"},
			"b.rune:2:1: import cycle: a.rune -> b.rune -> a.rune"},
		{"self", map[string]string{"p.rune": "import \"p.rune\" as me\n"},
			"1:1: import cycle: p.rune -> p.rune"},
		{"not .rune", map[string]string{"p.rune": "import \"a.txt\" as a\n"},
			`1:1: import path "a.txt" does not end in .rune`},
		{"nested", map[string]string{"p.rune": "if true {\n  import \"a.rune\" as a\n}\n"},
			"2:3: import only at the top level of a file"},
		{"no as", map[string]string{"p.rune": "import \"a.rune\"\n"},
			"1:16: got newline, want as NAME after the import path"},
		{"syntax error in a module", map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "let = 1\n"},
			"a.rune:1:5: got =, want identifier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tree(t, c.files)
			_, err := modules.Load(filepath.Join(dir, "p.rune"), nil)
			if c.name == "nested" || c.name == "no as" {
				src, _ := os.ReadFile(filepath.Join(dir, "p.rune"))
				_, err = compile.Compile(src) // Load leaves a main file that does not parse to the compiler
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %s…", err, c.want)
			}
		})
	}
}

// The compiler checks a source set itself too: it may come from anywhere.
func TestCompileSetErrors(t *testing.T) {
	enc := func(files map[string]string) []byte {
		s := &modules.Set{Main: "p.rune", Files: map[string][]byte{}}
		for n, src := range files {
			s.Files[n] = []byte(src)
		}
		return modules.Encode(s)
	}
	for _, c := range []struct {
		src  []byte
		want string
	}{
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "import \"p.rune\" as p\n"}), "a.rune:1:1: import cycle: p.rune -> a.rune -> p.rune"},
		{enc(map[string]string{"p.rune": "\nimport \"a.rune\" as a\n"}), `2:1: module "a.rune" is not in the source set`},
		{[]byte("import \"std/json.rune\" as j\n"), `1:1: module "std/json.rune" is not in the source set`},
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\nreturn a.nope\n", "a.rune": "let x = 1\n"}), "2:9: a.nope undefined: a.rune has no top-level nope"},
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\na.x = 2\n", "a.rune": "let x = 1\n"}), "2:5: cannot assign to a.x: a module's names are read-only"},
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\nreturn a\n", "a.rune": "let x = 1\n"}), "2:8: a is a module, not a value: use a.NAME"},
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\nlet a = 1\n", "a.rune": "let x = 1\n"}), "2:5: a redeclared: it names an import"},
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "if true { return 1 }\n"}), "a.rune:1:11: return at the top level of a module"},
		{enc(map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "let y = undefined_name\n"}), "a.rune:1:9: undefined: undefined_name"},
		{enc(map[string]string{"p.rune": "let secret = 1\nimport \"a.rune\" as a\n", "a.rune": "fn f() { return secret }\n"}), "a.rune:1:17: undefined: secret"},
		{[]byte(modules.Magic + "6 3\np.rune1;2"), "1:1: source set: truncated entry"},
	} {
		_, err := compile.Compile(c.src)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s…", c.src, err, c.want)
		}
	}
}

func TestActTagsAcrossModules(t *testing.T) {
	dir := tree(t, map[string]string{
		"p.rune":     "import \"lib/a.rune\" as a\nact \"fs.read\" {path: \"x\"}\nreturn a.go()\n",
		"lib/a.rune": "fn go() { return act \"web.fetch\" {url: \"u\"} }\n",
	})
	src, err := modules.Load(filepath.Join(dir, "p.rune"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.ActTags, ","); got != "web.fetch,fs.read" {
		t.Fatalf("act tags %s, want web.fetch,fs.read", got)
	}
}

func TestStdCompiles(t *testing.T) {
	for _, name := range []string{"std/agent.rune", "std/retry.rune", "std/json.rune", "std/mcp.rune"} {
		src, ok := modules.Std(name)
		if !ok {
			t.Fatalf("%s is not embedded", name)
		}
		s := modules.Encode(&modules.Set{Main: "p.rune", Files: map[string][]byte{"p.rune": []byte("import \"" + name + "\" as m\n"), name: src}})
		if _, err := compile.Compile(s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
