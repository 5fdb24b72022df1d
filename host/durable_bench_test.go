// durable_bench_test.go measures what durability costs a compute-bound
// prog: the engine on a store on disk against the same machine stepped in
// memory, with nothing kept (runehost run --no-store), natively and in the
// sandbox.

package host

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/wasmvm"
)

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports its CPU time per run beside the wall
// time: on a shared machine the CPU is the steadier figure.
func loop(b *testing.B, f func(i int)) {
	benchCPU = 0
	for i := 0; b.Loop(); i++ {
		f(i)
	}
	b.ReportMetric(float64(benchCPU.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// benchCPU is the CPU time of the timed parts of a benchmark's runs.
var benchCPU time.Duration

// timed runs f, its CPU time counted in benchCPU.
func timed(f func()) {
	c := cpuTime()
	f()
	benchCPU += cpuTime() - c
}

// computeRuntimes are the machines the benchmarks compare.
func computeRuntimes(b *testing.B) map[string]port.RuntimePort {
	rt, err := wasmvm.New(context.Background(), wasmvm.Config{PoolSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(context.Background()) })
	return map[string]port.RuntimePort{"native": port.NewNative(), "sandbox": rt}
}

// inMemory steps a prog to its end as runehost run --no-store does: lazy
// slices of slice steps.
func inMemory(b *testing.B, rt port.RuntimePort, src, input []byte, slice uint64) {
	ctx := context.Background()
	cp, err := rt.Start(ctx, port.Input{Source: src, Input: input, Invocation: "m", Limit: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	for {
		req := port.Request{Checkpoint: cp, Slice: slice, Lazy: true}
		if cp == nil {
			req.Invocation = "m"
		}
		res, err := rt.Step(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		cp = res.Checkpoint
		switch res.Kind {
		case port.Yield:
			continue
		case port.Done:
			return
		default:
			b.Fatalf("%s: %v", res.Kind, res.Err)
		}
	}
}

// durably runs a prog as runehost run does: admitted, then its tree driven
// by the scheduler, on a store on disk. Opening and closing the store (tens
// of milliseconds, a process's fixed cost) are not timed.
func durably(b *testing.B, rt port.RuntimePort, src, input []byte, n int) {
	b.StopTimer()
	s, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}()
	e, _, err := Open(s, rt, func() int64 { return time.Now().UnixMilli() })
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	inv := fmt.Sprintf("r%d", n)
	timed(func() {
		if _, err := e.Start(context.Background(), inv, "p", src, input, 1<<40, 1); err != nil {
			b.Fatal(err)
		}
		st, err := e.RunTree(context.Background(), inv)
		if err != nil || st.Status != Completed {
			b.Fatalf("%+v %v", st, err)
		}
	})
}

func computeProg(b *testing.B, name string, n int64) ([]byte, []byte) {
	src, err := os.ReadFile("../testdata/compute/" + name)
	if err != nil {
		b.Fatal(err)
	}
	in, err := checkpoint.EncodeData(n)
	if err != nil {
		b.Fatal(err)
	}
	return src, in
}

// BenchmarkDurableCompute: nbody (2,000 leapfrog steps, 3.1M machine
// steps), durably against in memory, each runtime; compare the pairs.
func BenchmarkDurableCompute(b *testing.B) {
	src, in := computeProg(b, "nbody.rune", 2000)
	for name, rt := range computeRuntimes(b) {
		b.Run(name+"/memory", func(b *testing.B) {
			loop(b, func(int) { timed(func() { inMemory(b, rt, src, in, port.DefaultSlice) }) })
		})
		b.Run(name+"/durable", func(b *testing.B) {
			loop(b, func(i int) { durably(b, rt, src, in, i) })
		})
	}
}

// BenchmarkAppendSlices: a 400,000-int append loop durably in default
// slices, against the machine in memory in one slice.
func BenchmarkAppendSlices(b *testing.B) {
	src, in := computeProg(b, "append.rune", 400_000)
	rt := port.NewNative()
	b.Run("one-slice", func(b *testing.B) {
		loop(b, func(int) { timed(func() { inMemory(b, rt, src, in, 1<<40) }) })
	})
	b.Run("durable", func(b *testing.B) {
		loop(b, func(i int) { durably(b, rt, src, in, i) })
	})
}
