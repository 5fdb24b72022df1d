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
	starlarkmath "go.starlark.net/lib/math"
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
var progNames = []string{"fib", "loop", "strbuild", "maps", "sort", "nbody", "spectral", "fannkuch", "bintrees"}

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

// starlarkPredeclared are the names a program may use without loading them:
// the math module (nbody and spectral need math.sqrt).
var starlarkPredeclared = starlark.StringDict{"math": starlarkmath.Module}

// starlarkEngine compiles once; each run executes the program's top level
// in a new Thread and reads the global `result`.
var starlarkEngine = &engine{
	name: "starlark",
	prepare: func(src []byte) (runner, error) {
		isPredeclared := starlarkPredeclared.Has
		_, prog, err := starlark.SourceProgramOptions(starlarkOptions, "prog.star", src, isPredeclared)
		if err != nil {
			return nil, err
		}
		return func() (int64, error) {
			thread := &starlark.Thread{Name: "bench"}
			globals, err := prog.Init(thread, starlarkPredeclared)
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
	"nbody":    func() int64 { return nbody(10000) },
	"spectral": func() int64 { return spectral(100) },
	"fannkuch": func() int64 { return fannkuch(8) },
	"bintrees": func() int64 { return bintrees(11) },
}

// The float references below round every product to float64 with an
// explicit conversion before it is added, so that the compiler cannot fuse
// the two into one FMA (the Go spec allows that; the interpreters never
// do), and so they compute exactly what the programs do, operation by
// operation. Constants are variables, not Go constants, so that they are
// computed in float64 too, not exactly.

// nbody is progs/nbody.*: the Jovian planets, steps steps of 0.01.
func nbody(steps int) int64 {
	pi := 3.141592653589793
	solarMass := 4 * pi * pi
	days := 365.24
	x := []float64{0.0, 4.84143144246472090e+00, 8.34336671824457987e+00, 1.28943695621391310e+01, 1.53796971148509165e+01}
	y := []float64{0.0, -1.16032004402742839e+00, 4.12479856412430479e+00, -1.51111514016986312e+01, -2.59193146099879641e+01}
	z := []float64{0.0, -1.03622044471123109e-01, -4.03523417114321381e-01, -2.23307578892655734e-01, 1.79258772950371181e-01}
	vx := []float64{0.0, 1.66007664274403694e-03 * days, -2.76742510726862411e-03 * days, 2.96460137564761618e-03 * days, 2.68067772490389322e-03 * days}
	vy := []float64{0.0, 7.69901118419740425e-03 * days, 4.99852801234917238e-03 * days, 2.37847173959480950e-03 * days, 1.62824170038242295e-03 * days}
	vz := []float64{0.0, -6.90460016972063023e-05 * days, 2.30417297573763929e-05 * days, -2.96589568540237556e-05 * days, -9.51592254519715870e-05 * days}
	mass := []float64{solarMass, 9.54791938424326609e-04 * solarMass, 2.85885980666130812e-04 * solarMass, 4.36624404335156298e-05 * solarMass, 5.15138902046611451e-05 * solarMass}
	n := len(mass)

	var px, py, pz float64
	for i := range n {
		px += float64(vx[i] * mass[i])
		py += float64(vy[i] * mass[i])
		pz += float64(vz[i] * mass[i])
	}
	vx[0] = -px / solarMass
	vy[0] = -py / solarMass
	vz[0] = -pz / solarMass

	dt := 0.01
	for range steps {
		for i := range n {
			xi, yi, zi, mi := x[i], y[i], z[i], mass[i]
			for j := i + 1; j < n; j++ {
				dx := xi - x[j]
				dy := yi - y[j]
				dz := zi - z[j]
				d2 := float64(dx*dx) + float64(dy*dy) + float64(dz*dz)
				mag := dt / float64(d2*math.Sqrt(d2))
				mj := mass[j]
				vx[i] -= float64(dx * mj * mag)
				vy[i] -= float64(dy * mj * mag)
				vz[i] -= float64(dz * mj * mag)
				vx[j] += float64(dx * mi * mag)
				vy[j] += float64(dy * mi * mag)
				vz[j] += float64(dz * mi * mag)
			}
		}
		for i := range n {
			x[i] += float64(dt * vx[i])
			y[i] += float64(dt * vy[i])
			z[i] += float64(dt * vz[i])
		}
	}

	var e float64
	for i := range n {
		e += float64(0.5 * mass[i] * (float64(vx[i]*vx[i]) + float64(vy[i]*vy[i]) + float64(vz[i]*vz[i])))
		for j := i + 1; j < n; j++ {
			dx := x[i] - x[j]
			dy := y[i] - y[j]
			dz := z[i] - z[j]
			e -= float64(mass[i]*mass[j]) / math.Sqrt(float64(dx*dx)+float64(dy*dy)+float64(dz*dz))
		}
	}
	return int64(float64(e * 1e9)) // truncates toward zero, as int() does
}

// spectral is progs/spectral.*: the spectral norm of A for size n.
func spectral(n int) int64 {
	a := func(i, j int) float64 {
		ij := i + j
		return 1.0 / float64(ij*(ij+1)/2+i+1)
	}
	mulAv := func(v, av []float64) {
		for i := range n {
			var s float64
			for j := range n {
				s += float64(a(i, j) * v[j])
			}
			av[i] = s
		}
	}
	mulAtv := func(v, atv []float64) {
		for i := range n {
			var s float64
			for j := range n {
				s += float64(a(j, i) * v[j])
			}
			atv[i] = s
		}
	}
	u := make([]float64, n)
	for i := range u {
		u[i] = 1.0
	}
	v := make([]float64, n)
	tmp := make([]float64, n)
	for range 10 {
		mulAv(u, tmp)
		mulAtv(tmp, v)
		mulAv(v, tmp)
		mulAtv(tmp, u)
	}
	var vbv, vv float64
	for i := range n {
		vbv += float64(u[i] * v[i])
		vv += float64(v[i] * v[i])
	}
	return int64(float64(math.Sqrt(vbv/vv) * 1e9))
}

// fannkuch is progs/fannkuch.*: fannkuch-redux of n, as checksum*100 + the
// most flips.
func fannkuch(n int) int64 {
	perm1 := make([]int, n)
	for i := range perm1 {
		perm1[i] = i
	}
	perm := make([]int, n)
	count := make([]int, n)
	maxFlips, checksum, permCount := 0, 0, 0
	r := n
	for {
		for ; r != 1; r-- {
			count[r-1] = r
		}
		copy(perm, perm1)
		flips := 0
		for k := perm[0]; k != 0; k = perm[0] {
			for i, j := 0, k; i < j; i, j = i+1, j-1 {
				perm[i], perm[j] = perm[j], perm[i]
			}
			flips++
		}
		maxFlips = max(maxFlips, flips)
		if permCount%2 == 0 {
			checksum += flips
		} else {
			checksum -= flips
		}
		for {
			if r == n {
				return int64(checksum*100 + maxFlips)
			}
			p0 := perm1[0]
			copy(perm1[:r], perm1[1:r+1])
			perm1[r] = p0
			count[r]--
			if count[r] > 0 {
				break
			}
			r++
		}
		permCount++
	}
}

// tree is a node of bintrees; a leaf has two nil children.
type tree struct{ left, right *tree }

// bintrees is progs/bintrees.*: binary-trees to depth maxDepth, as the sum
// of every node count checked.
func bintrees(maxDepth int) int64 {
	var build func(d int) *tree
	build = func(d int) *tree {
		if d == 0 {
			return &tree{}
		}
		return &tree{build(d - 1), build(d - 1)}
	}
	var check func(t *tree) int64
	check = func(t *tree) int64 {
		if t.left == nil {
			return 1
		}
		return 1 + check(t.left) + check(t.right)
	}
	const minDepth = 4
	total := check(build(maxDepth + 1)) // the stretch tree
	longLived := build(maxDepth)
	for d := minDepth; d <= maxDepth; d += 2 {
		iters := 1 << (maxDepth - d + minDepth)
		for range iters {
			total += check(build(d))
		}
	}
	return total + check(longLived)
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
