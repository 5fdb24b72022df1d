// Package bench compares script engines (Starlark, gopher-lua, Rune) on equivalent programs in progs/.
package bench

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// runner executes one prepared program from a fresh interpreter state and
// returns the integer the program computed.
type runner func() (int64, error)

// engine is one scripting language under test. prepare does all the work
// that can be done once per program (parsing, compiling); the returned
// runner does the per-run work, including creating interpreter state.
type engine struct {
	name    string
	prepare func(src []byte) (runner, error)
}

// engines lists the engines under test. Other files may append to it from
// an init function (the Rune engine does).
var engines = []*engine{starlarkEngine, luaEngine}

// progNames are the programs in progs/, each as progs/NAME.EXT per engine.
var progNames = []string{"fib", "loop", "strbuild", "maps", "sort"}

// engineExt maps an engine name to its program file extension; engines not
// listed use their name as the extension (e.g. "rune" -> NAME.rune).
var engineExt = map[string]string{
	"starlark":  "star",
	"lua":       "lua",
	"rune-wasm": "rune",
}

func progPath(prog string, e *engine) string {
	ext, ok := engineExt[e.name]
	if !ok {
		ext = e.name
	}
	return filepath.Join("progs", prog+"."+ext)
}

// loadProg reads and prepares prog for e. It reports ok=false if e has no
// file for prog.
func loadProg(prog string, e *engine) (r runner, ok bool, err error) {
	src, err := os.ReadFile(progPath(prog, e))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r, err = e.prepare(src)
	if err != nil {
		return nil, true, fmt.Errorf("%s: prepare %s: %w", e.name, progPath(prog, e), err)
	}
	return r, true, nil
}

// starlarkOptions enables the dialect features the programs use.
var starlarkOptions = &syntax.FileOptions{
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// starlarkEngine compiles once; each run executes the program's top level
// in a new Thread and reads the global `result`.
var starlarkEngine = &engine{
	name: "starlark",
	prepare: func(src []byte) (runner, error) {
		isPredeclared := func(string) bool { return false }
		_, prog, err := starlark.SourceProgramOptions(starlarkOptions, "prog.star", src, isPredeclared)
		if err != nil {
			return nil, err
		}
		return func() (int64, error) {
			thread := &starlark.Thread{Name: "bench"}
			globals, err := prog.Init(thread, nil)
			if err != nil {
				var evalErr *starlark.EvalError
				if errors.As(err, &evalErr) {
					return 0, errors.New(evalErr.Backtrace())
				}
				return 0, err
			}
			v, ok := globals["result"]
			if !ok {
				return 0, errors.New("starlark: program did not set global `result`")
			}
			i, ok := v.(starlark.Int)
			if !ok {
				return 0, fmt.Errorf("starlark: result is %s, want int", v.Type())
			}
			n, ok := i.Int64()
			if !ok {
				return 0, fmt.Errorf("starlark: result %s overflows int64", i)
			}
			return n, nil
		}, nil
	},
}

// luaEngine compiles the chunk once; each run creates a new LState (with
// the standard libraries opened) and calls the chunk, which returns the result.
var luaEngine = &engine{
	name: "lua",
	prepare: func(src []byte) (runner, error) {
		chunk, err := parse.Parse(bytes.NewReader(src), "prog.lua")
		if err != nil {
			return nil, err
		}
		proto, err := lua.Compile(chunk, "prog.lua")
		if err != nil {
			return nil, err
		}
		return func() (int64, error) {
			L := lua.NewState(lua.Options{
				SkipOpenLibs: false,
				// table.concat pushes every element and separator onto the
				// data stack (strbuild needs ~2x its part count in slots), so
				// let the registry grow past its default fixed 5120 slots on
				// demand. Growth is additive and copies the whole registry,
				// so use a large step: the default of 32 makes it quadratic.
				RegistryMaxSize:  1 << 22,
				RegistryGrowStep: 1 << 14,
			})
			defer L.Close()
			L.Push(L.NewFunctionFromProto(proto))
			if err := L.PCall(0, 1, nil); err != nil {
				return 0, err
			}
			v := L.Get(-1)
			n, ok := v.(lua.LNumber)
			if !ok {
				return 0, fmt.Errorf("lua: result is %s, want number", v.Type())
			}
			f := float64(n)
			if f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
				return 0, fmt.Errorf("lua: result %v is not an exact integer", f)
			}
			return int64(f), nil
		}, nil
	},
}

// native computes each program's expected result in plain Go.
var native = map[string]func() int64{
	"fib": func() int64 {
		var fib func(n int64) int64
		fib = func(n int64) int64 {
			if n < 2 {
				return n
			}
			return fib(n-1) + fib(n-2)
		}
		return fib(25)
	},
	"loop": func() int64 {
		var s int64
		for i := int64(0); i < 1000000; i++ {
			s += i % 7
		}
		return s
	},
	"strbuild": func() int64 {
		var n int64
		for i := 0; i < 50000; i++ {
			n += int64(len(fmt.Sprint(i)))
		}
		n += 50000 - 1 // separators
		return n + 2*5000
	},
	"maps": func() int64 {
		return 100000 * (100000 - 1) / 2
	},
	"sort": func() int64 {
		l := make([]int64, 0, 50000)
		x := int64(12345)
		for i := 0; i < 50000; i++ {
			x = (x*1103 + 12345) % 2147483648
			l = append(l, x)
		}
		slices.Sort(l)
		return l[0] + l[25000] + l[49999]
	},
}

func TestEnginesAgree(t *testing.T) {
	for _, prog := range progNames {
		t.Run(prog, func(t *testing.T) {
			want := native[prog]()
			ran := 0
			for _, e := range engines {
				r, ok, err := loadProg(prog, e)
				if err != nil {
					t.Error(err)
					continue
				}
				if !ok {
					t.Logf("%s: no %s, skipped", e.name, progPath(prog, e))
					continue
				}
				got, err := r()
				if err != nil {
					t.Errorf("%s: run %s: %v", e.name, progPath(prog, e), err)
					continue
				}
				ran++
				if got != want {
					t.Errorf("%s: %s = %d, want %d", e.name, progPath(prog, e), got, want)
				}
			}
			if ran == 0 {
				t.Errorf("no engine ran %s", prog)
			}
		})
	}
}

func BenchmarkProgs(b *testing.B) {
	for _, prog := range progNames {
		for _, e := range engines {
			r, ok, err := loadProg(prog, e)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				continue
			}
			b.Run(prog+"/"+e.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := r(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
