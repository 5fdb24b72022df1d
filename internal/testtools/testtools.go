// Package testtools builds the test tools of testdata/tools (Go sources) as
// wasm32-wasip1 command modules, once per test process; Go's build cache
// makes a rebuild quick. `make tools` builds the same into testdata/tools/bin.
package testtools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Names are the test tools.
var Names = []string{"cat", "wc", "grep", "spin", "grow", "flood", "escape", "envsnoop", "scribble", "racer", "mcpserver"}

var (
	mu    sync.Mutex
	built = map[string][]byte{}
	dir   string
)

// Root is the repository's root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Build returns the tool's module, building it if this process has not.
func Build(t testing.TB, name string) []byte {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[name]; ok {
		return b
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "runehost-tools")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	out := filepath.Join(dir, name+".wasm")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/tools/"+name)
	cmd.Dir = Root()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building tool %s: %v\n%s", name, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	built[name] = b
	return b
}
