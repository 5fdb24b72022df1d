// bench_test.go measures tools: the cost of fuel, of stopping on the wall
// clock, a tool's start cold and cached, and runs per second.

package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/internal/testtools"
)

// BenchmarkToolWork runs wc over 2 MiB: metered or not, able to stop on the
// wall clock or not. Compare ns/op side by side.
func BenchmarkToolWork(b *testing.B) {
	in := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2<<20/44))
	wc := testtools.Build(b, "wc")
	for _, c := range []struct {
		name             string
		metered, onClose bool
	}{{"plain", false, false}, {"fuel", true, false}, {"clock", false, true}, {"fuel+clock", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := newRunner(context.Background(), "off", 0, c.onClose)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(context.Background())
			r.unmetered = !c.metered
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

// BenchmarkToolStart measures one small run of wc: cold (compiled from
// nothing), cached (a new runner, wazero's compilation cache on disk), and
// warm (a runner that compiled it already: tool runs per second).
func BenchmarkToolStart(b *testing.B) {
	wc := testtools.Build(b, "wc")
	in := Config{Stdin: []byte("a b c\n")}
	cache := filepath.Join(b.TempDir(), "cache")
	os.MkdirAll(cache, 0o755)
	b.Run("cold", func(b *testing.B) {
		for range b.N {
			r, _ := NewRunner(context.Background(), "off", 0)
			r.Run(context.Background(), wc, in)
			r.Close(context.Background())
		}
	})
	b.Run("cached", func(b *testing.B) {
		r, _ := NewRunner(context.Background(), cache, 0)
		r.Run(context.Background(), wc, in) // fills the cache
		r.Close(context.Background())
		b.ResetTimer()
		for range b.N {
			r, _ := NewRunner(context.Background(), cache, 0)
			r.Run(context.Background(), wc, in)
			r.Close(context.Background())
		}
	})
	b.Run("warm", func(b *testing.B) {
		r, _ := NewRunner(context.Background(), "off", 0)
		defer r.Close(context.Background())
		r.Run(context.Background(), wc, in)
		b.ResetTimer()
		for range b.N {
			r.Run(context.Background(), wc, in)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	})
}
