package wasmgen_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/wasmgen"
)

// TestValid compiles every golden prog and has wazero validate and compile
// the module.
func TestValid(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/progs/*.rune")
	more, _ := filepath.Glob("../../bench/progs/*.rune")
	files = append(files, more...)
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := compile.Compile(src)
		if err != nil {
			continue // a prog whose expected outcome is a compile error
		}
		bin, err := wasmgen.Compile(p, machine.TheLayout)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := rt.CompileModule(ctx, bin); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
	}
}

func TestUncompiled(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/progs/*.rune")
	n, bad := 0, 0
	for _, f := range files {
		src, _ := os.ReadFile(f)
		p, err := compile.Compile(src)
		if err != nil {
			continue
		}
		n += len(p.Funcs)
		for _, u := range wasmgen.Uncompiled(p) {
			bad++
			t.Logf("%s: %s", filepath.Base(f), u)
		}
	}
	t.Logf("%d of %d functions uncompiled", bad, n)
}
