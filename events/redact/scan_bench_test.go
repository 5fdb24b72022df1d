// scan_bench_test.go: the automaton's pass alone, over text with no
// trigger and over log lines.

package redact

import (
	"strings"
	"testing"
)

func BenchmarkScan(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"none", strings.Repeat("The quick brown fox jumps over the lazy dog; 0123456789 times.\n", 16000)},
		{"log", strings.Repeat(`{"ts":"2026-12-01T10:00:00Z","level":"info","msg":"GET https://api.example.com/v1/users?page=2 200","key":"user:42"}`+"\n", 9000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				scan(c.text)
			}
		})
	}
}
