// backends_bench_test.go measures durable act round trips through the whole
// engine on each store backend side by side: Badger, an embedded JetStream
// node (fsync on every write), and a three-node JetStream cluster (R3).

package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/internal/natstest"
	"github.com/runehost/runehost/store"
)

// BenchmarkEngineActsBackends runs b.N acts spread over 1 and 32
// invocations on each backend and reports acts per second and the median
// and 99th percentile of the time between one invocation's acts.
func BenchmarkEngineActsBackends(b *testing.B) {
	top := b
	var urls []string // the cluster, started once for every sub-benchmark
	backends := []struct {
		name string
		open func(b *testing.B) store.Options
	}{
		{"badger", func(b *testing.B) store.Options { return store.Options{Dir: b.TempDir()} }},
		{"jetstream-r1", func(b *testing.B) store.Options {
			return store.Options{Dir: b.TempDir(), JetStream: &store.JetStream{}}
		}},
		{"jetstream-r3", func(b *testing.B) store.Options {
			if urls == nil {
				_, urls = natstest.Cluster(top, 3)
			}
			return store.Options{JetStream: &store.JetStream{URLs: urls, Replicas: 3, Stream: fmt.Sprintf("BENCH%d", time.Now().UnixNano())}}
		}},
	}
	for _, workers := range []int{1, 32} {
		for _, be := range backends {
			b.Run(fmt.Sprintf("invocations=%d/store=%s", workers, be.name), func(b *testing.B) {
				s, err := store.Open(be.open(b))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				engineActs(b, s, workers)
			})
		}
	}
}

// engineActs runs b.N acts over workers invocations of e on s.
func engineActs(b *testing.B, s *store.Store, workers int) {
	e := NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	e.Ward().Grant(AnyProg, "noop")
	var mu sync.Mutex
	last := map[string]time.Time{}
	var gaps []time.Duration
	e.Adapters["noop"] = opFunc(func(op *Operation) {
		now := time.Now()
		mu.Lock()
		if t, ok := last[op.Invocation]; ok {
			gaps = append(gaps, now.Sub(t))
		}
		last[op.Invocation] = now
		mu.Unlock()
	})
	per := max(b.N/workers, 1)
	src := []byte(fmt.Sprintf("var i = 0\nwhile i < %d { act \"noop\" {}; i += 1 }", per))
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Start(context.Background(), fmt.Sprintf("r%d", w+1), fmt.Sprintf("p%d", w), src, nil, 1<<40, 1); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(per*workers)/b.Elapsed().Seconds(), "acts/s")
	slices.Sort(gaps)
	if len(gaps) > 0 {
		b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds()), "p99-µs")
	}
}

type opFunc func(*Operation)

func (f opFunc) Do(_ context.Context, op *Operation) (any, error) { f(op); return int64(1), nil }
