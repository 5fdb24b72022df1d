// modules_test.go: runehost run and check read a prog's imports; the grant
// preflight sees the act tags of every module; errors name the module.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// progTree writes files (slash names) under a new directory; it returns the path of p.rune.
func progTree(t *testing.T, files map[string]string) string {
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
	return filepath.Join(dir, "p.rune")
}

func TestRunModules(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	lib := t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "shared.rune"), []byte("let greeting = \"hi\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNEHOST_PATH", lib)
	f := progTree(t, map[string]string{
		"p.rune": `import "lib/files.rune" as files
import "std/json.rune" as json
import "shared.rune" as shared
return [files.read("x"), json.at({a: [1, 2]}, "a.1", 0), shared.greeting]`,
		"lib/files.rune": `fn read(p) {
  try { return act "fs.read" {path: p} } catch e { return e.kind }
}`,
	})
	code, out, errs := invoke(t, "check", f)
	if code != exitOK || !strings.Contains(out, "acts: fs.read") {
		t.Fatalf("check: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = invoke(t, "run", f)
	if code != exitOK || out != `["denied",2,"hi"]`+"\n" || !strings.Contains(errs, "grants: p has no grant for act fs.read") {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = invoke(t, "run", "--strict-grants", f)
	if code != exitUsage || !strings.Contains(errs, "refused by --strict-grants: p has no grant for fs.read") {
		t.Fatalf("strict: exit %d, stderr %q", code, errs)
	}
}

func TestModuleErrors(t *testing.T) {
	missing := progTree(t, map[string]string{"p.rune": "let a = 1\nimport \"nope.rune\" as n\n"})
	code, _, errs := invoke(t, "run", "--no-store", missing)
	if code != exitUsage || !strings.Contains(errs, missing+":2:1: module \"nope.rune\" not found") {
		t.Fatalf("missing: exit %d, stderr %q", code, errs)
	}
	cycle := progTree(t, map[string]string{"p.rune": "import \"a.rune\" as a\n", "a.rune": "import \"p.rune\" as p\n"})
	code, _, errs = invoke(t, "check", cycle)
	if code != exitUsage || !strings.Contains(errs, "a.rune:1:1: import cycle: p.rune -> a.rune -> p.rune") {
		t.Fatalf("cycle: exit %d, stderr %q", code, errs)
	}
	boom := progTree(t, map[string]string{"p.rune": "import \"m/b.rune\" as b\nreturn b.f()\n", "m/b.rune": "fn f() {\n  return 1 / 0\n}\n"})
	code, _, errs = invoke(t, "run", "--no-store", boom)
	if code != exitFailed || !strings.Contains(errs, "runehost: m/b.rune:2:12: zero_division: division by zero") || !strings.Contains(errs, "at f at m/b.rune:2:12") {
		t.Fatalf("runtime error: exit %d, stderr %q", code, errs)
	}
}

// A stored run goes on with the source set it started with; migrate with
// the prog's file gathers its imports again and refuses a changed one.
func TestModulesChangedImport(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := progTree(t, map[string]string{
		"p.rune":     "import \"lib/k.rune\" as k\nlet v = await {key: \"go\"}\nreturn k.k() + v\n",
		"lib/k.rune": "fn k() { return 10 }\n",
	})
	if code, _, errs := invoke(t, "run", f); code != exitWaiting {
		t.Fatalf("run: %d %s", code, errs)
	}
	saved := filepath.Join(t.TempDir(), "cp")
	if code, _, errs := invoke(t, "inspect", "r1", "--save-checkpoint", saved); code != exitOK {
		t.Fatalf("inspect: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "migrate", "r1", saved, "--source", f, "--dry-run"); code != exitOK {
		t.Fatalf("the same set: %d %s", code, errs)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(f), "lib", "k.rune"), []byte("fn k() { return 20 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := invoke(t, "migrate", "r1", saved, "--source", f, "--dry-run")
	if code != exitFailed || !strings.Contains(errs, "the prog or one of its modules changed since the checkpoint was made") {
		t.Fatalf("a changed import: %d %s", code, errs)
	}
	if code, out, errs := invoke(t, "send", "r1", "go", "5"); code != exitOK || out != "15\n" {
		t.Fatalf("send: %d %q %s", code, out, errs)
	}
}
