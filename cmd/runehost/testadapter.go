// testadapter.go holds the recording test adapter the crash harness uses:
// with RUNEHOST_TEST_ADAPTER=FILE, the act "test.record" {n: N} appends a
// line "INVOCATION#ORDINAL N" to FILE, synced, and answers N * 2 (waiting
// RUNEHOST_TEST_ADAPTER_DELAY_MS before and after the effect). The file
// is the world's record of effects: a line written twice is an act
// dispatched twice.

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
)

type recordAdapter struct {
	path  string
	delay time.Duration // before and after the effect: a window for kills
}

func (a recordAdapter) Do(_ context.Context, op *host.Operation) (any, error) {
	d, err := checkpoint.DecodeData(op.Args)
	if err != nil {
		return nil, err
	}
	m, ok := d.(*checkpoint.Map)
	if !ok {
		return nil, fmt.Errorf("test.record wants {n: int}")
	}
	v, _ := m.Get("n")
	n, ok := v.(int64)
	if !ok {
		return nil, fmt.Errorf("test.record wants {n: int}")
	}
	time.Sleep(a.delay)
	defer time.Sleep(a.delay)
	f, err := os.OpenFile(a.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s#%d %d\n", op.Invocation, op.Ordinal, n); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return n * 2, nil
}

// testAdapters registers the test adapter when the environment asks for it.
func testAdapters(e *host.Engine) {
	if path := os.Getenv("RUNEHOST_TEST_ADAPTER"); path != "" {
		ms, _ := strconv.Atoi(os.Getenv("RUNEHOST_TEST_ADAPTER_DELAY_MS"))
		e.Adapters["test.record"] = recordAdapter{path: path, delay: time.Duration(ms) * time.Millisecond}
	}
}
