// scan_bench_test.go: the one pass alone, over text with no trigger, over
// log lines, and over hostile texts.

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

// BenchmarkHostile: texts built to make a reader read far, many times
// over: each costs a bounded read per trigger, not a read to the end.
func BenchmarkHostile(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"pem-no-end", strings.Repeat("-----BEGIN RSA PRIVATE KEY-----", 2000)},
		{"unclosed-quotes", strings.Repeat(`key="x `, 10000)},
		{"header-no-cut", strings.Repeat("X-Key: a ", 7000)},
		{"token-no-digit", strings.Repeat("xoxb-aaaa", 7000)},
		{"schemes", strings.Repeat("a://", 16000)},
		{"curl-quotes", strings.Repeat(` -u "`, 12000)},
		{"one-name", strings.Repeat("key", 20000)},
		{"jwt-prefixes", strings.Repeat("eyJ-", 16000)},
		{"block-scalars-in-json", strings.Repeat(`\nkey: |`, 8000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				scan(c.text)
			}
		})
	}
}
