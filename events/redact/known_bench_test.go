// known_bench_test.go: the cost of taking the host's secrets out of a text,
// in every form, against the raw-only replacement it replaced.

package redact

import (
	"strings"
	"testing"
)

var benchSecrets = []string{"sk-model-key-Qx81Zz77Lm00aa", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "xapp-1-A0123456789-0123456789012-abcdef", "8f14e45fceea167a5a36dedd4bea2543", "hunter2-password-long"}

func benchText(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString("Tool wc said: exit 0: 3 files, 1,204 lines; {\"path\": \"/data/notes.txt\", \"ok\": true} ")
	}
	return b.String()[:n]
}

func BenchmarkHostSecrets(b *testing.B) {
	r := New(benchSecrets...)
	for _, size := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}} {
		text := benchText(size.n)
		b.Run("forms/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				r.Known(text)
			}
		})
		b.Run("raw-only/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s := text
				for _, sec := range benchSecrets {
					s = strings.ReplaceAll(s, sec, Mark)
				}
			}
		})
	}
}

// The whole redactor, formats included, for scale.
func BenchmarkRedactString4KiB(b *testing.B) {
	r := New(benchSecrets...)
	text := benchText(4 << 10)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.String(text)
	}
}
