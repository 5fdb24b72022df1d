// bench_test.go measures an MCP tool call through the sandbox: one act,
// through the engine, that starts the WASI server, initializes it, calls
// echo and closes it.

package mcp_test

import (
	"slices"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/acttest"
)

// BenchmarkCallWASI reports the median (p50-ms) and p99 of one mcp.call of
// the WASI test server, the module compiled already.
func BenchmarkCallWASI(b *testing.B) {
	e := engine(b, nil)
	acttest.Grant(b, e, "mcp.call:demo")
	src := `return (act "mcp.call" {server: "demo", tool: "echo", arguments: {text: "hi"}}).text`
	if got, _ := acttest.Run(b, e, src, nil); got != `"hi"` { // compiles the module
		b.Fatal(got)
	}
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if got, _ := acttest.Run(b, e, src, nil); got != `"hi"` {
			b.Fatal(got)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
