// bench_test.go measures durable act round trips: propose, attempt (synced),
// outcome (synced), consume, on a store on disk.

package host

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

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
