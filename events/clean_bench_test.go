// clean_bench_test.go: events.Clean over a log file in the CLI's 64 KiB
// chunks (REDACT_LOG names the file; make bench-redact writes one).

package events

import (
	"os"
	"strings"
	"testing"

	"github.com/runehost/runehost/events/redact"
)

func BenchmarkCleanLog(b *testing.B) {
	name := os.Getenv("REDACT_LOG")
	if name == "" {
		text := strings.Repeat("2026-12-01T10:00:00Z INFO GET /v1/users?page=2 200 12ms user=ada\n", 1<<14)
		b.Run("inline", func(b *testing.B) { cleanChunks(b, text) })
		return
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("file", func(b *testing.B) { cleanChunks(b, string(raw)) })
}

func cleanChunks(b *testing.B, text string) {
	r := redact.New()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		for at := 0; at < len(text); {
			end := min(at+64<<10, len(text))
			if nl := strings.LastIndexByte(text[at:end], '\n'); nl >= 0 && end < len(text) {
				end = at + nl + 1
			}
			_ = Clean(r, text[at:end], 0)
			at = end
		}
	}
}
