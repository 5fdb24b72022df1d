// compiled_test.go checks compiled progs (guest/wasmgen) against the
// guest's interpreter: the same results, steps, errors and checkpoints.

package wasmvm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/guest/port/porttest"
)

func runtimeWith(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = filepath.Join(os.TempDir(), "runehost-test-wazero-cache")
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// switching is a Runtime whose compiled code hands back at once at a random
// third of its entries, so that compiled and interpreted runs alternate at
// arbitrary leaders, besides those where a block does not fit.
func switching(t testing.TB, seed uint64) *Runtime {
	return runtimeWith(t, Config{jitSync: true, jitSkip: skipper(seed)})
}

// skipper is true at a random third of its calls.
func skipper(seed uint64) func() bool {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 7))
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(3) == 0
	}
}

var (
	mixedOnce sync.Once
	mixed     *Runtime
)

// mixedRuntime is one switching Runtime for the fuzz targets, never closed.
func mixedRuntime(t testing.TB) *Runtime {
	mixedOnce.Do(func() {
		r, err := New(context.Background(), Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), jitSync: true, jitSkip: skipper(11)})
		if err != nil {
			t.Fatal(err)
		}
		mixed = r
	})
	if mixed == nil {
		t.Fatal("no switching runtime")
	}
	return mixed
}

// alternating steps each slice on one of two runtimes, picked at random: a
// machine checkpointed by one is resumed by the other.
type alternating struct {
	a, b port.RuntimePort
	mu   sync.Mutex
	rng  *rand.Rand
}

func (x *alternating) Load(ctx context.Context, src []byte) (port.Info, error) {
	if _, err := x.b.Load(ctx, src); err != nil {
		return port.Info{}, err
	}
	return x.a.Load(ctx, src)
}

func (x *alternating) Start(ctx context.Context, in port.Input) ([]byte, error) {
	if _, err := x.b.Load(ctx, in.Source); err != nil {
		return x.a.Start(ctx, in) // the same compile error, from a
	}
	return x.a.Start(ctx, in)
}

func (x *alternating) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	x.mu.Lock()
	rt := x.a
	if x.rng.IntN(2) == 0 {
		rt = x.b
	}
	x.mu.Unlock()
	return rt.Step(ctx, req)
}

var compiledSizes = []uint64{1, 2, 3, 7, 64, 1000}

// maxBytes bounds what the runs of one prog in slices below 1000 steps
// decode: slices times checkpoint size.
const maxBytes = 24 << 20

// peak is a RuntimePort that keeps the size of its largest checkpoint.
type peak struct {
	port.RuntimePort
	max int
}

func (p *peak) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	r, err := p.RuntimePort.Step(ctx, req)
	if err == nil {
		p.max = max(p.max, len(r.Checkpoint))
	}
	return r, err
}

// TestCompiledMatchesInterpreted runs every golden prog compiled at every
// slice size, and at every other size compiled with switches to the
// interpreter at random entries or resumed by turns compiled and
// interpreted, against the interpreter alone: each slice's result, steps
// and checkpoint are the same.
func TestCompiledMatchesInterpreted(t *testing.T) {
	compiled := testRuntime(t)
	interp := runtimeWith(t, Config{Interpret: true})
	mixed := switching(t, 1)
	turns := &alternating{a: compiled, b: interp, rng: rand.New(rand.NewPCG(2, 3))}
	before := compiled.jitEnters.Load()
	for _, file := range porttest.ProgFiles(t, "..") {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			src := readProg(t, file)
			s := porttest.ParseScript(t, src)
			if s.CompileErr != "" {
				return
			}
			in := port.Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: name}
			pk := &peak{RuntimePort: compiled}
			whole, _ := lockstep(t, pk, interp, in, 1000, echoReply)
			for i, size := range compiledSizes {
				// A long prog in tiny slices takes minutes and shows
				// nothing the first few thousand slices do not.
				if whole != nil && whole.Used/size*uint64(pk.max+4096) > maxBytes {
					continue
				}
				// Compiled at every size (1000 is the run above); switching
				// and turns at every other.
				rts := []port.RuntimePort{compiled, []port.RuntimePort{mixed, turns}[i%2]}
				if size == 1000 {
					rts = []port.RuntimePort{mixed, turns}
				}
				for _, rt := range rts {
					lockstep(t, rt, interp, in, size, echoReply)
				}
			}
			// Many slices a Step (an emit ends the run at its slice's end,
			// compiled code runs across the boundaries between).
			for _, n := range [][2]uint64{{64, 16}, {1000, 7}} {
				if whole == nil || whole.Used/(n[0]*n[1])*uint64(pk.max+4096) <= maxBytes {
					lockstepN(t, compiled, interp, in, n[0], n[1], echoReply)
				}
			}
		})
	}
	if compiled.jitEnters.Load() == before {
		t.Fatal("no compiled code ran")
	}
}

// TestCompiledHostile: progs that run away, bounded by the same limits at
// the same steps compiled as interpreted, in one slice and in small ones.
// (TestParity runs the parity test's hostile progs compiled, against the
// native interpreter.)
func TestCompiledHostile(t *testing.T) {
	compiled := testRuntime(t)
	interp := runtimeWith(t, Config{Interpret: true})
	for _, tc := range []struct{ name, src, want string }{
		{"deep recursion", "fn f(n) { return f(n + 1) + 1 }\nreturn f(0)", "error"},
		{"endless loop", "var i = 0\nwhile true { i += 1 }", "error"},
		{"endless recursion in a loop", "fn f(n) { if n == 0 { return 0 } return f(n - 1) }\nwhile true { f(900) }", "error"},
		{"list bomb in a loop", "var l = [1]\nwhile true { l = l + l }", "error"},
		{"overflow", "var i = 1\nwhile true { i = i * 3 + 1 }", "error"},
		{"overflow by adding", "var i = 1\nwhile true { i = i + i }", "error"},
		{"overflow by subtracting", "var i = -1\nwhile true { i = i - 9223372036854775807 }", "error"},
		{"division by zero", "var i = 10\nwhile true { i = 100 / (i - 1) }", "error"},
		{"caught in a loop", "var n = 0\nwhile true { try { n += 1\nthrow n } catch e { n += e } }", "error"},
		{"map bomb", "var m = {}\nvar i = 0\nwhile true { m[str(i)] = i\nm[i] = i\ni += 1 }", "error"},
		{"append bomb", "var l = []\nwhile true { append(l, len(l)) }", "error"},
		{"string growth", "var s = \"\"\nwhile true { s = s + \"xy\" }", "error"},
		{"strings kept", "var l = []\nvar i = 0\nwhile true { append(l, str(i) + \"-\" + str(-i))\ni += 1 }", "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []struct{ limit, slice uint64 }{{5_000_000, 1 << 40}, {200_000, 1000}, {20_000, 7}} {
				in := port.Input{Source: []byte(tc.src), Limit: run.limit, Invocation: "hostile"}
				_, got := lockstep(t, compiled, interp, in, run.slice, echoReply)
				if !matches(got, tc.want) {
					t.Fatalf("slice %d: got %s, want %s", run.slice, got, tc.want)
				}
			}
		})
	}
}

// A prog whose module an earlier process kept on disk runs compiled from
// its first step, however short its run.
func TestKeptModuleBoundAtOnce(t *testing.T) {
	dir := t.TempDir()
	src := []byte("var s = 0\nfor i in range(1000) { s += i }\nreturn s")
	first := runtimeWith(t, Config{CacheDir: dir})
	if err := first.Compile(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if !keptOnDisk(CacheDirOf(dir), src) {
		t.Fatal("the compile kept no module")
	}
	next := runtimeWith(t, Config{CacheDir: dir}) // a new process's
	interp := runtimeWith(t, Config{Interpret: true})
	lockstep(t, next, interp, port.Input{Source: src, Invocation: "short"}, 1<<40, echoReply)
	if next.jitEnters.Load() == 0 {
		t.Fatal("a short run of a prog with a kept module was interpreted")
	}
}

// TestCompiledInBackground: by default a prog is compiled only once a run
// has taken compileAt steps (a short run never), beside the interpreter,
// which goes on until the code is ready, mid-slice; nothing differs.
// Later runs use the code from the start.
func TestCompiledInBackground(t *testing.T) {
	bg := runtimeWith(t, Config{})
	interp := runtimeWith(t, Config{Interpret: true})
	// A source of this run's own: an earlier run of the tests kept the
	// module of any other on disk, which is bound at once.
	short := port.Input{Source: fmt.Appendf(nil, "// %d\nvar s = 0\nfor i in range(1000) { s += i }\nreturn s", time.Now().UnixNano()), Invocation: "short"}
	lockstep(t, bg, interp, short, 1<<40, echoReply)
	if len(bg.jit) != 0 {
		t.Fatal("a short run had its prog compiled")
	}
	// A run of a small prog past compileAtLeast has it compiled, long
	// before compileAfter.
	medium := port.Input{Source: fmt.Appendf(nil, "// %d\nvar s = 0\nfor i in range(6000) { s += i }\nreturn s", time.Now().UnixNano()), Invocation: "medium"}
	if _, got := lockstep(t, bg, interp, medium, 1<<40, echoReply); !strings.HasPrefix(got, "done after 42759 steps") {
		t.Fatalf("medium: %s", got)
	}
	bg.mu.Lock()
	mc := bg.jit[compile.HashSource(medium.Source)]
	bg.mu.Unlock()
	if mc == nil {
		t.Fatal("a run of 42,759 steps did not have its prog compiled")
	}
	long := port.Input{Source: []byte("var s = 0\nvar i = 0\nwhile i < 300000 { s += i % 7\ni += 1 }\nreturn s"), Limit: 1 << 30, Invocation: "long"}
	for _, slice := range []uint64{1 << 40, 100_000} {
		if _, got := lockstep(t, bg, interp, long, slice, echoReply); got != "done after 4500010 steps, 5 bytes of result" {
			t.Fatalf("slice %d: %s", slice, got)
		}
	}
	if bg.jitEnters.Load() == 0 {
		t.Fatal("no compiled code ran")
	}
	// A short prog run often enough is compiled too.
	code := func() *jitCode {
		bg.mu.Lock()
		defer bg.mu.Unlock()
		return bg.jit[compile.HashSource(short.Source)]
	}
	for i := 1; i < compileRuns; i++ { // one run above
		if lockstep(t, bg, interp, short, 1<<40, echoReply); code() != nil && i < compileRuns-1 {
			t.Fatalf("compiled after %d runs", i+1)
		}
	}
	jc := code()
	if jc == nil {
		t.Fatalf("not compiled after %d runs", compileRuns)
	}
	<-jc.done
	before := bg.jitEnters.Load()
	lockstep(t, bg, interp, short, 1<<40, echoReply)
	if bg.jitEnters.Load() == before {
		t.Fatal("a short prog compiled was interpreted")
	}
	// A short run of a compiled prog uses its code at once.
	long.Limit, long.Invocation = 1000, "again"
	before = bg.jitEnters.Load()
	lockstep(t, bg, interp, long, 1<<40, echoReply)
	if bg.jitEnters.Load() == before {
		t.Fatal("a prog compiled before was interpreted")
	}
}

// TestCompileAhead: after Compile, a prog's runs are compiled from their
// first step; a prog that does not compile says why.
func TestCompileAhead(t *testing.T) {
	r := runtimeWith(t, Config{})
	ctx := context.Background()
	src := []byte("var s = 0\nfor i in range(100) { s += i }\nreturn s")
	if err := r.Compile(ctx, src); err != nil {
		t.Fatal(err)
	}
	lockstep(t, r, runtimeWith(t, Config{Interpret: true}), port.Input{Source: src, Invocation: "ahead"}, 1<<40, echoReply)
	if r.jitEnters.Load() == 0 {
		t.Fatal("no compiled code ran")
	}
	if err := r.Compile(ctx, []byte("return (")); err == nil || !strings.Contains(err.Error(), "1:9") {
		t.Fatalf("a bad prog: %v", err)
	}
}

// TestManyProgsOnAnInstance: an instance binds at most jitPerInstance
// compiled progs; the next is interpreted there, and the instance is then
// replaced by a fresh one, which compiles it.
func TestManyProgsOnAnInstance(t *testing.T) {
	defer func(n int) { jitPerInstance = n }(jitPerInstance)
	jitPerInstance = 2
	r := runtimeWith(t, Config{PoolSize: 1, jitSync: true})
	interp := runtimeWith(t, Config{Interpret: true})
	var first *instance
	for i := range 4 {
		src := []byte(fmt.Sprintf("var s = 0\nfor i in range(50) { s += i * %d }\nreturn s", i))
		before := r.jitEnters.Load()
		lockstep(t, r, interp, port.Input{Source: src, Invocation: "many"}, 1<<40, echoReply)
		compiled := r.jitEnters.Load() > before
		switch i {
		case 0:
			first = r.pool[0]
		case 1:
			if len(r.pool) != 1 || r.pool[0] != first || !compiled {
				t.Fatal("the second prog was not compiled on the same instance")
			}
		case 2:
			if compiled || len(r.pool) != 0 {
				t.Fatalf("the third prog ran compiled (%v), or its instance was kept (%d idle)", compiled, len(r.pool))
			}
		case 3:
			if !compiled || len(r.pool) != 1 || r.pool[0] == first {
				t.Fatal("a fresh instance did not compile the fourth")
			}
		}
	}
}

// TestInterpretedRunsNoCompiledCode: Interpret is what it says.
func TestInterpretedRunsNoCompiledCode(t *testing.T) {
	interp := runtimeWith(t, Config{Interpret: true})
	in := port.Input{Source: []byte("fn fib(n) { if n < 2 { return n } return fib(n - 1) + fib(n - 2) }\nreturn fib(15)"), Invocation: "fib"}
	lockstep(t, interp, testRuntime(t), in, 100, echoReply)
	if n := interp.jitEnters.Load(); n != 0 {
		t.Fatalf("%d compiled entries", n)
	}
}

// TestKeptModules: a prog's module is kept on disk beside wazero's cache,
// and a new Runtime on the same directory uses it without compiling the
// source again; a damaged file is ignored, and generated and written anew.
func TestKeptModules(t *testing.T) {
	if buildID() == "" {
		t.Skip("no Go build ID in this executable (not ELF): modules are not kept")
	}
	ctx := context.Background()
	dir := t.TempDir()
	src := []byte("fn f(n) { return n * 2 }\nvar t = 0\nfor i in range(2000) { t += f(i) }\nreturn t")
	run := func() (string, int64) {
		r, err := New(ctx, Config{CacheDir: dir, jitSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(ctx)
		if err := r.Compile(ctx, src); err != nil {
			t.Fatal(err)
		}
		cp, err := r.Start(ctx, port.Input{Source: src, Invocation: "kept"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return describe(res), r.jitEnters.Load()
	}
	want, enters := run()
	if enters == 0 {
		t.Fatal("no compiled code ran")
	}
	path := jitPath(dir, src)
	digest, fns, bin, err := readJit(path)
	if err != nil {
		t.Fatalf("kept module: %v", err)
	}
	p, err := compile.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if digest != p.Digest() {
		t.Fatal("kept module: wrong digest")
	}
	// A kept module that is whole but says another digest is read, and
	// refused at bind: the prog runs interpreted.
	writeJit(path, digest+1, fns, bin)
	if got, enters := run(); got != want || enters != 0 {
		t.Fatalf("kept module of another digest: %s with %d entries, want %s interpreted", got, enters, want)
	}
	// A damaged one is generated again, and written anew.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xFF
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, enters := run(); got != want || enters == 0 {
		t.Fatalf("after a damaged file: %s with %d entries, want %s compiled", got, enters, want)
	}
	if d, _, _, err := readJit(path); err != nil || d != digest {
		t.Fatalf("kept module not written anew: %v", err)
	}
}
