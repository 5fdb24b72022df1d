// bench_test.go measures durable act round trips: propose, attempt (synced),
// outcome (synced), consume, on a store on disk.

package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

func BenchmarkActRoundTrip(b *testing.B) {
	for _, workers := range []int{1, 32} {
		b.Run(fmt.Sprintf("invocations=%d", workers), func(b *testing.B) {
			s, err := store.Open(store.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			l := NewLedger(s)
			r := reply(b, "ok")
			var next atomic.Uint64
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / workers
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					inv := fmt.Sprintf("inv-%d", w)
					for i := 0; i < per; i++ {
						id := OpID{inv, next.Add(1)}
						if _, err := l.Propose(Operation{Invocation: inv, Ordinal: id.Ordinal, Tag: "t"}); err != nil {
							b.Error(err)
							return
						}
						if _, err := l.Attempt(id, Attempt{Grant: "g", Executor: "e", Generation: 1}); err != nil {
							b.Error(err)
							return
						}
						if _, err := l.Record(id, Outcome{Reply: r}); err != nil {
							b.Error(err)
							return
						}
						if _, err := l.Consume(id); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*workers)/b.Elapsed().Seconds(), "acts/s")
		})
	}
}

// BenchmarkActLatency measures one act through the engine, on disk: the
// slice up to the act, its checkpoint and attempt (synced), dispatch, the
// outcome and its consumption (buffered, flushed by the next act's synced
// commit). It reports the median and the 99th percentile of the time
// between one act's dispatch and the next's.
func BenchmarkActLatency(b *testing.B) { actLatency(b, "") }

// BenchmarkActLatencyHeap is BenchmarkActLatency for a prog that holds a
// heap of some size while it acts: each act's slice commits its
// checkpoint (synced), so this is what storing a large checkpoint costs a
// slice's commit.
func BenchmarkActLatencyHeap(b *testing.B) {
	for _, heap := range []int{0, 100_000, 1_000_000} { // ints: about 5 bytes each in the checkpoint
		b.Run(fmt.Sprintf("ints=%d", heap), func(b *testing.B) {
			actLatency(b, fmt.Sprintf("let heap = range(%d)\n", heap))
		})
	}
}

// actLatency runs b.N+1 acts after prelude and reports their spacing.
func actLatency(b *testing.B, prelude string) {
	s, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	e.Ward().Grant(AnyProg, "noop")
	var times []time.Duration
	last := time.Time{}
	e.Adapters["noop"] = adapterFunc(func() {
		now := time.Now()
		if !last.IsZero() {
			times = append(times, now.Sub(last))
		}
		last = now
	})
	src := fmt.Sprintf(`%svar i = 0
while i < %d { act "noop" {}; i += 1 }`, prelude, b.N+1) // a loop, not range(n): a list in every checkpoint
	b.ResetTimer()
	if _, err := e.Start(context.Background(), "r1", "p", []byte(src), nil, 1<<40, 1); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
	}
}

type adapterFunc func()

func (f adapterFunc) Do(context.Context, *Operation) (any, error) { f(); return int64(1), nil }

// BenchmarkSliceReservation measures the allowance's cost per slice as the
// engine pays it: a synced reservation before the slice, and a settlement
// after it that rides (buffered) with the checkpoint of a yield.
func BenchmarkSliceReservation(b *testing.B) {
	s, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a := NewAccounts(s)
	if _, err := a.Open("r1", 1<<62); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		n, err := a.Reserve("r1", MaxSlice)
		if err != nil {
			b.Fatal(err)
		}
		err = s.Update(store.Buffered, func(tx *store.Tx) error {
			_, err := changeAllowance(tx, "r1", settle("r1", n, n/2))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineActs measures acts per second through the whole engine,
// with 1 and 32 invocations acting at once.
func BenchmarkEngineActs(b *testing.B) {
	for _, workers := range []int{1, 32} {
		b.Run(fmt.Sprintf("invocations=%d", workers), func(b *testing.B) {
			s, err := store.Open(store.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			engineActs(b, s, workers) // backends_bench_test.go
		})
	}
}
