// bench_test.go measures tools: the cost of fuel, of stopping on the wall
// clock, a tool's start cold and cached, and runs per second.

package tool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/testtools"
)

// BenchmarkToolWork runs wc over 2 MiB: unmetered; metered with the plain
// check and no clock on computation (the Rune guest's build); metered with
// safepoints and the clock as the interrupt (the tools' build); wazero's
// own stop on the clock. Compare ns/op side by side.
func BenchmarkToolWork(b *testing.B) {
	in := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2<<20/44))
	wc := testtools.Build(b, "wc")
	for _, c := range []struct {
		name                    string
		metered, plain, onClose bool
	}{{"plain", false, false, false}, {"fuel", true, true, false}, {"fuel+interrupt", true, false, false},
		{"clock", false, false, true}, {"fuel+clock", true, true, true}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := newRunner(context.Background(), "off", 0, c.onClose)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(context.Background())
			r.unmetered, r.plainFuel, r.noInterrupt = !c.metered, c.plain, c.plain
			if res, err := r.Run(context.Background(), wc, Config{Stdin: in}); err != nil || !res.OK() {
				b.Fatalf("%+v %v", res, err)
			}
			b.ResetTimer()
			for range b.N {
				r.Run(context.Background(), wc, Config{Stdin: in})
			}
		})
	}
}

// BenchmarkToolTimeoutLatency runs spin, which never calls the host, until
// a deadline 20ms on, and reports the time from the deadline to Run
// returning (its median and 99th percentile over b.N runs): with the fuel
// counter as the interrupt, and with wazero's close on context done.
func BenchmarkToolTimeoutLatency(b *testing.B) {
	spin := testtools.Build(b, "spin")
	for _, c := range []struct {
		name    string
		onClose bool
	}{{"interrupt", false}, {"closeOnDone", true}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := newRunner(context.Background(), "off", 0, c.onClose)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(context.Background())
			r.unmetered = c.onClose
			r.compile(context.Background(), spin)
			var lat []time.Duration
			for range b.N {
				deadline := time.Now().Add(20 * time.Millisecond)
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				res, err := r.Run(ctx, spin, Config{Fuel: MaxFuel, Timeout: time.Hour})
				lat = append(lat, time.Since(deadline))
				cancel()
				if err != nil || res.Stop != TimedOut && !(c.onClose && res.Stop == Trapped) {
					b.Fatalf("%+v %v", res, err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
		})
	}
}

// BenchmarkToolStart measures one small run of wc in this process: cold (compiled from
// nothing), cached (a new runner, wazero's compilation cache on disk), and
// warm (a runner that compiled it already: tool runs per second).
func BenchmarkToolStart(b *testing.B) {
	wc := testtools.Build(b, "wc")
	in := Config{Stdin: []byte("a b c\n")}
	cache := filepath.Join(b.TempDir(), "cache")
	os.MkdirAll(cache, 0o755)
	b.Run("cold", func(b *testing.B) {
		for range b.N {
			r, _ := newRunner(context.Background(), "off", 0, false)
			r.Run(context.Background(), wc, in)
			r.Close(context.Background())
		}
	})
	b.Run("cached", func(b *testing.B) {
		r, _ := newRunner(context.Background(), cache, 0, false)
		r.Run(context.Background(), wc, in) // fills the cache
		r.Close(context.Background())
		b.ResetTimer()
		for range b.N {
			r, _ := newRunner(context.Background(), cache, 0, false)
			r.Run(context.Background(), wc, in)
			r.Close(context.Background())
		}
	})
	b.Run("warm", func(b *testing.B) {
		r, _ := newRunner(context.Background(), "off", 0, false)
		defer r.Close(context.Background())
		r.Run(context.Background(), wc, in)
		b.ResetTimer()
		for range b.N {
			r.Run(context.Background(), wc, in)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	})
}

// BenchmarkToolRun is a small run of wc as a user's act gets it, p50 and
// p99 over b.N runs, side by side: in this process (the tool compiled
// already); in a worker kept from the run before (the same tool, mounts,
// environment and owner: an agent's acts); the first run of its kind in a
// worker from the warm pool (runs spaced, as acts come: the pool refills
// between them); back to back (the pool may be empty); and with no pool
// (a worker started for the run, its tool read from wazero's cache on
// disk). cpu-ms is this process's and its workers' CPU time, the workers
// stopped first.
func BenchmarkToolRun(b *testing.B) {
	wc := testtools.Build(b, "wc")
	cache := filepath.Join(b.TempDir(), "cache")
	for _, c := range []struct {
		name      string
		worker    bool
		warm      int
		keep      int
		spaced    bool
		sameOwner bool
	}{
		{"in-process", false, 0, 0, false, true},
		{"worker-kept", true, 1, 1, false, true},
		{"worker-warm", true, 1, 0, true, false},
		{"worker-back-to-back", true, 1, 0, false, false},
		{"worker-cold", true, 0, 0, false, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			var r *Runner
			var err error
			if c.worker {
				r, err = New(context.Background(), Options{CacheDir: cache, Warm: c.warm, Keep: c.keep})
			} else {
				r, err = newRunner(context.Background(), cache, 0, false)
			}
			if err != nil {
				b.Fatal(err)
			}
			in := Config{Stdin: []byte("a b c\n")}
			if res, err := r.Run(context.Background(), wc, in); err != nil || !res.OK() {
				b.Fatalf("%+v %v", res, err)
			}
			var lat []time.Duration
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				if c.spaced {
					b.StopTimer()
					waitWarm(r)
					b.StartTimer()
				}
				if !c.sameOwner {
					in.Owner = strconv.Itoa(i)
				}
				start := time.Now()
				res, err := r.Run(context.Background(), wc, in)
				lat = append(lat, time.Since(start))
				if err != nil || !res.OK() {
					b.Fatalf("%+v %v", res, err)
				}
			}
			b.StopTimer()
			r.Close(context.Background())
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// waitWarm waits until the pool has a worker ready for every tool it keeps.
func waitWarm(r *Runner) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		r.workers.mu.Lock()
		ready := true
		for _, s := range r.workers.warm {
			ready = ready && len(s.ready) > 0
		}
		r.workers.mu.Unlock()
		if ready {
			return
		}
	}
}

// cpuTime is this process's and its reaped children's CPU time.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}
