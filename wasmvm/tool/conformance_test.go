// conformance_test.go runs the WASI test suite (github.com/WebAssembly/
// wasi-testsuite, its prebuilt wasm32-wasip1 tests), kept outside the
// repository, when RUNEHOST_WASI_TESTSUITE names its tests directory:
// each test as its adapters run it, its root directory mounted at "/".

package tool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// wasiFloor is how many of the suite's 72 wasm32-wasip1 tests passed
// when it was first run here (docs/sandbox.md): never fewer.
const wasiFloor = 59

func TestWASITestsuite(t *testing.T) {
	dir := os.Getenv("RUNEHOST_WASI_TESTSUITE")
	if dir == "" {
		t.Skip("RUNEHOST_WASI_TESTSUITE is not set (the tests directory of a wasi-testsuite checkout, its prebuilt branch)")
	}
	floor := wasiFloor
	if n, err := strconv.Atoi(os.Getenv("RUNEHOST_WASI_TESTSUITE_MIN")); err == nil {
		floor = n
	}
	wasms, _ := filepath.Glob(filepath.Join(dir, "*", "testsuite", "wasm32-wasip1", "*.wasm"))
	sort.Strings(wasms)
	if len(wasms) == 0 {
		t.Fatalf("no wasm32-wasip1 tests under %s", dir)
	}
	r := runner(t, 0)
	passed := 0
	for _, w := range wasms {
		name, _ := filepath.Rel(dir, w)
		var spec struct {
			Root     string            `json:"root"`
			Args     []string          `json:"args"`
			Env      map[string]string `json:"env"`
			ExitCode uint32            `json:"exit_code"`
			Stdout   *string           `json:"stdout"`
		}
		if b, err := os.ReadFile(w[:len(w)-len(".wasm")] + ".json"); err == nil {
			if err := json.Unmarshal(b, &spec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		module, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Name: filepath.Base(w), Args: spec.Args, Timeout: time.Minute}
		for k, v := range spec.Env {
			cfg.Env = append(cfg.Env, k+"="+v)
		}
		sort.Strings(cfg.Env)
		if spec.Root != "" {
			root := filepath.Join(t.TempDir(), spec.Root)
			if out, err := exec.Command("cp", "-a", filepath.Join(filepath.Dir(w), spec.Root), root).CombinedOutput(); err != nil {
				t.Fatalf("%s: copying its root: %v %s", name, err, out)
			}
			cfg.Mounts = []Mount{{Host: root, Guest: "/", Write: true}}
		}
		res, err := r.Run(context.Background(), module, cfg)
		switch {
		case err != nil:
			t.Logf("FAIL %s: %v", name, err)
		case res.Stop != Exited || res.ExitCode != spec.ExitCode:
			t.Logf("FAIL %s: %s %d, want exit %d: %.300s", name, res.Stop, res.ExitCode, spec.ExitCode, res.Stderr)
		case spec.Stdout != nil && string(res.Stdout) != *spec.Stdout:
			t.Logf("FAIL %s: stdout %q, want %q", name, res.Stdout, *spec.Stdout)
		default:
			passed++
		}
	}
	t.Logf("passed %d of %d", passed, len(wasms))
	if passed < floor {
		t.Errorf("passed %d of %d, fewer than %d", passed, len(wasms), floor)
	}
}
