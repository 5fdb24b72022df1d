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
	"github.com/runehost/runehost/store/jetstream"
)

// BenchmarkEngineActsBackends runs b.N acts spread over 1 and 32
// invocations on each backend and reports acts per second and the median
// and 99th percentile of the time between one invocation's acts.
func BenchmarkEngineActsBackends(b *testing.B) {
	top := b
	var urls []string // the cluster, started once for every sub-benchmark
	backends := []struct {
		name string
		open func(b *testing.B) (*store.Store, error)
	}{
		{"badger", func(b *testing.B) (*store.Store, error) { return store.Open(store.Options{Dir: b.TempDir()}) }},
		{"jetstream-r1", func(b *testing.B) (*store.Store, error) {
			return jetstream.Open(store.Options{Dir: b.TempDir()}, jetstream.Config{})
		}},
		{"jetstream-r3", func(b *testing.B) (*store.Store, error) {
			if urls == nil {
				_, urls = natstest.Cluster(top, 3)
			}
			return jetstream.Open(store.Options{}, jetstream.Config{URLs: urls, Replicas: 3, Shared: true, Stream: fmt.Sprintf("BENCH%d", time.Now().UnixNano())})
		}},
	}
	for _, workers := range []int{1, 32} {
		for _, be := range backends {
			b.Run(fmt.Sprintf("invocations=%d/store=%s", workers, be.name), func(b *testing.B) {
				s, err := be.open(b)
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
	e, _, err := Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() }) // on a shared store, a host that claims its trees
	if err != nil {
		b.Fatal(err)
	}
	defer e.StopClaims()
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
	syncs, written, trips, cpu := s.Syncs(), s.Written(), s.Trips(), cpuTime()
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
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(per*workers), "cpu-µs/act") // this process: on R3, the cluster's nodes too
	b.ReportMetric(float64(s.Written()-written)/float64(per*workers), "B/act")
	if n := s.Syncs() - syncs; n > 0 {
		b.ReportMetric(float64(per*workers)/float64(n), "acts/sync")
	}
	if t := s.Trips(); t.Commits > trips.Commits { // requests to the servers, per act (admission included)
		acts := float64(per * workers)
		b.ReportMetric(float64(t.Reads-trips.Reads)/acts, "reads/act")
		b.ReportMetric(float64(t.Scans-trips.Scans)/acts, "scans/act")
		b.ReportMetric(float64(t.Commits-trips.Commits)/acts, "commits/act")
		b.ReportMetric(float64(t.Messages-trips.Messages)/acts, "msgs/act")
	}
	slices.Sort(gaps)
	if len(gaps) > 0 {
		b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkStreamCommits commits b.N transactions straight to the store,
// each like an act's in steady state (two records read, msgs written, a
// record's claim checked), from 32 goroutines, on an R3 stream of a
// three-node cluster in this process: the store's and the cluster's part
// of an act, with no engine, for docs/cluster.md's projection.
func BenchmarkStreamCommits(b *testing.B) {
	_, urls := natstest.Cluster(b, 3)
	for _, msgs := range []int{5, 13} {
		b.Run(fmt.Sprintf("msgs=%d", msgs), func(b *testing.B) {
			s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: urls, Replicas: 3, Shared: true, Stream: fmt.Sprintf("COMMITS%d", time.Now().UnixNano())})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const workers = 32
			per := max(b.N/workers, 1)
			val := make([]byte, 200)
			cpu := cpuTime()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						err := s.Retry(store.Synced, func(tx *store.Tx) error {
							var v []byte
							if _, err := tx.Get(store.K("inv", w), &v); err != nil {
								return err
							}
							if _, err := tx.Get(store.K("claim", w), &v); err != nil {
								return err
							}
							for m := range msgs {
								if err := tx.Put(store.K("ev", w, i, m), val); err != nil {
									return err
								}
							}
							return tx.Put(store.K("inv", w), val)
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*workers)/b.Elapsed().Seconds(), "commits/s")
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(per*workers), "cpu-µs/commit")
		})
	}
}

type opFunc func(*Operation)

func (f opFunc) Do(_ context.Context, op *Operation) (any, error) { f(op); return int64(1), nil }

// BenchmarkHostsScaling runs b.N acts over 32 invocations admitted through
// 1 and through 3 hosts (engines with loops, each on a connection of its
// own) sharing one R3 stream of a three-node cluster in this process: all
// on one machine, so it shows what sharing costs more than what it gains.
func BenchmarkHostsScaling(b *testing.B) {
	_, urls := natstest.Cluster(b, 3)
	for _, hosts := range []int{1, 3} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			stream := fmt.Sprintf("SCALE%d", time.Now().UnixNano())
			var es []*Engine
			for i := range hosts {
				s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: []string{urls[i%len(urls)]}, Replicas: 3, Shared: true, Stream: stream})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				e, _, err := Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
				if err != nil {
					b.Fatal(err)
				}
				defer e.StopClaims()
				e.Ward().Grant(AnyProg, "noop")
				e.Adapters["noop"] = opFunc(func(*Operation) {})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); (&Loop{E: e, Workers: 32 / hosts}).Run(ctx) }()
				defer func() { cancel(); <-done }()
				es = append(es, e)
			}
			const invocations = 32
			per := max(b.N/invocations, 1)
			src := []byte(fmt.Sprintf("var i = 0\nwhile i < %d { act \"noop\" {}; i += 1 }", per))
			b.ResetTimer()
			var ids []string
			for w := range invocations {
				e := es[w%hosts]
				id, err := e.NewInvocationID()
				if err != nil {
					b.Fatal(err)
				}
				if err := e.Admit(context.Background(), id, fmt.Sprintf("p%d", w), "", src, nil, 1<<40, 1); err != nil {
					b.Fatal(err)
				}
				ids = append(ids, id)
			}
			for _, id := range ids {
				for {
					st, err := es[0].State(id)
					if err == nil && st.Status.Terminal() {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(per*invocations)/b.Elapsed().Seconds(), "acts/s")
		})
	}
}

// BenchmarkTakeover measures how long after a host stops renewing its claims
// (an act's effect done, its outcome not recorded: a kill) another host has
// taken its tree over and finished it, with claims of 900 ms.
func BenchmarkTakeover(b *testing.B) {
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		j := newJournal()
		es := sharedHosts(b, 2, j)
		a, o := es[0], es[1]
		id, _ := a.NewInvocationID()
		gate := make(chan struct{})
		j.block[fmt.Sprintf("%s#%d", id, 2)] = gate
		runLoop(b, a)
		if err := a.Admit(context.Background(), id, "p", "", []byte(claimProg), nil, 1<<30, 1); err != nil {
			b.Fatal(err)
		}
		for j.count(fmt.Sprintf("%s#%d", id, 2)) == 0 {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		close(a.claims.stop)
		<-a.claims.done
		stopped := time.Now()
		runLoop(b, o)
		waitDone(b, o, []string{id}, 20*ClaimFor)
		took = append(took, time.Since(stopped))
		b.StopTimer()
		close(gate)
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "takeover-ms")
	b.ReportMetric(float64(ClaimFor.Milliseconds()), "claim-ms")
}
