// bench_test.go measures the sandbox: slicing, fuel, resuming parked invocations.

package wasmvm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/wasmvm/fuel"
)

// longLoop is a long computation with little state.
var longLoop = []byte(`var s = 0
var i = 0
while i < 300000 { s = s + i % 7; i += 1 }
return s`)

// runAll runs src to its end in slices of the given size.
func runAll(b *testing.B, rt port.RuntimePort, src []byte, slice uint64) {
	runAllLazy(b, rt, src, slice, false)
}

func runAllLazy(b *testing.B, rt port.RuntimePort, src []byte, slice uint64, lazy bool) {
	runAllBatched(b, rt, src, slice, lazy, 1)
}

// runAllBatched is runAllLazy with up to slices slices a Step.
func runAllBatched(b *testing.B, rt port.RuntimePort, src []byte, slice uint64, lazy bool, slices uint64) {
	ctx := context.Background()
	cp, err := rt.Start(ctx, port.Input{Source: src, Limit: 1 << 40, Invocation: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for {
		req := port.Request{Checkpoint: cp, Slice: slice, Lazy: lazy, Slices: slices}
		if cp == nil {
			req.Invocation = "bench"
		}
		r, err := rt.Step(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if r.Kind == port.Done {
			return
		}
		if r.Kind != port.Yield {
			b.Fatalf("%s: %v", r.Kind, r.Err)
		}
		cp = r.Checkpoint
	}
}

// BenchmarkSlicing runs the same long loop unsliced and in 1000-step slices,
// in the sandbox and natively.
func BenchmarkSlicing(b *testing.B) {
	sb := testRuntime(b)
	for _, rt := range []struct {
		name string
		rt   port.RuntimePort
	}{{"sandbox", sb}, {"native", port.NewNative()}} {
		for _, slice := range []uint64{1 << 40, 1000} {
			name := rt.name + "/unsliced"
			if slice == 1000 {
				name = rt.name + "/slice1000"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					runAll(b, rt.rt, longLoop, slice)
				}
			})
		}
		b.Run(rt.name+"/slice1000-lazy", func(b *testing.B) {
			for b.Loop() {
				runAllLazy(b, rt.rt, longLoop, 1000, true)
			}
		})
		// Many lazy slices a crossing (port.Request.Slices), as the
		// engine asks for them.
		b.Run(rt.name+"/slice1000-lazy-64", func(b *testing.B) {
			for b.Loop() {
				runAllBatched(b, rt.rt, longLoop, 1000, true, 1024)
			}
		})
	}
}

// unmeteredGuest builds the guest without fuel, to measure what fuel costs.
func unmeteredGuest(b *testing.B) []byte {
	out := filepath.Join(b.TempDir(), "raw.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, "./guest/wasm")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkFuel runs the long loop unsliced on the metered guest and on the
// same guest built without fuel.
func BenchmarkFuel(b *testing.B) {
	// Both from one build of the current sources, so that only fuel differs.
	raw := unmeteredGuest(b)
	metered, err := fuel.Inject(raw)
	if err != nil {
		b.Fatal(err)
	}
	cache := filepath.Join(os.TempDir(), "wasmvm-fuel-bench")
	plainRT, err := New(context.Background(), Config{CacheDir: cache, Module: raw, unmetered: true})
	if err != nil {
		b.Fatal(err)
	}
	defer plainRT.Close(context.Background())
	meteredRT, err := New(context.Background(), Config{CacheDir: cache, Module: metered})
	if err != nil {
		b.Fatal(err)
	}
	defer meteredRT.Close(context.Background())
	for _, rt := range []struct {
		name string
		rt   *Runtime
	}{{"metered", meteredRT}, {"unmetered", plainRT}} {
		b.Run(rt.name, func(b *testing.B) {
			for b.Loop() {
				runAll(b, rt.rt, longLoop, 1<<40)
			}
		})
	}
}

// parked is a prog whose checkpoint at its act is 10 KB (10,011 bytes).
var parked = []byte(`var l = []
for i in range(475) { append(l, {n: i, s: "item"}) }
let r = act "wait" {}
return len(l) + r`)

// BenchmarkResume resumes a parked invocation from its 10 KB checkpoint
// with a warm pool: decode, reply, run to the end, encode, all in the guest,
// and the host's checks of the answer. It reports the median (p50) and p99
// of single resumes in wall time, and the process's CPU time per resume
// (the guest's collector included), which a busy machine disturbs less.
func BenchmarkResume(b *testing.B) {
	sb := testRuntime(b)
	ctx := context.Background()
	cp, err := sb.Start(ctx, port.Input{Source: parked})
	if err != nil {
		b.Fatal(err)
	}
	r, err := sb.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 30})
	if err != nil || r.Kind != port.Act {
		b.Fatal(r, err)
	}
	reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	req := port.Request{Checkpoint: r.Checkpoint, Reply: reply, Slice: 1000}
	if err := sb.Warm(ctx, 2); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	cpu0 := processCPU()
	for b.Loop() {
		t0 := time.Now()
		res, err := sb.Step(ctx, req)
		if err != nil || res.Kind != port.Done {
			b.Fatal(res, err)
		}
		times = append(times, time.Since(t0))
	}
	cpu := processCPU() - cpu0
	slices.Sort(times)
	b.ReportMetric(float64(len(r.Checkpoint)), "checkpoint-bytes")
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(len(times)), "cpu-µs/op")
	}
}

// thousandLines is a prog of 1,000 lines: 49 functions of loops,
// branches, lists and maps, and a main that calls them all.
func thousandLines() []byte {
	var b strings.Builder
	for k := range 49 {
		fmt.Fprintf(&b, `fn f%d(n) {
	var s = 0
	var l = []
	let m = {}
	for i in range(n) {
		if i %% 3 == 0 {
			s += i * %d
		} else if i %% 3 == 1 {
			s -= 1
		} else {
			append(l, i)
		}
	}
	var j = 0
	while j < len(l) {
		m[str(j)] = l[j] + s
		j += 1
	}
	return s + len(m)
}
`, k, k)
	}
	for k := range 19 {
		fmt.Fprintf(&b, "let r%d = f%d(%d)\n", k, k, k)
	}
	b.WriteString("return r0 + f48(3)\n")
	return []byte(b.String())
}

// BenchmarkCompileProg compiles a 1,000-line prog to a wazero module: cold
// (no cache at all), with the caches on disk warm (the module kept beside
// wazero's compilation cache, as a new process finds them), and from the
// Runtime's cache (what every instance but the first does).
func BenchmarkCompileProg(b *testing.B) {
	ctx := context.Background()
	src := thousandLines()
	if n := bytes.Count(src, []byte("\n")); n != 1000 {
		b.Fatalf("%d lines", n)
	}
	compileWith := func(b *testing.B, cache wazero.CompilationCache, dir string) {
		for b.Loop() {
			b.StopTimer()
			rc := wazero.NewRuntimeConfigCompiler()
			if cache != nil {
				rc = rc.WithCompilationCache(cache)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, rc)
			b.StartTimer()
			var jc jitCode
			jc.compile(ctx, rt, src, dir)
			if jc.err != nil {
				b.Fatal(jc.err)
			}
			b.StopTimer()
			rt.Close(ctx)
			b.StartTimer()
		}
	}
	b.Run("cold", func(b *testing.B) { compileWith(b, nil, "") })
	b.Run("disk", func(b *testing.B) {
		dir := b.TempDir()
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
		(&jitCode{}).compile(ctx, rt, src, dir)
		rt.Close(ctx)
		compileWith(b, cache, dir)
	})
	b.Run("memory", func(b *testing.B) {
		r := testRuntime(b)
		hash := compile.HashSource(src)
		r.remember(hash, src)
		jc := r.code(hash)
		if <-jc.done; jc.err != nil {
			b.Fatal(jc.err)
		}
		for b.Loop() {
			if jc := r.code(hash); jc.mod == nil {
				b.Fatal("not cached")
			}
		}
	})
}
