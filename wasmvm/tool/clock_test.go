// clock_test.go holds a tool to its wall clock while it computes, and the
// host's own configuration out of every tool's environment.

package tool

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/testtools"
)

// spin with fuel for many minutes stops on its clock, reported as the clock
// and not as fuel, and the runner goes on serving. (How soon after the
// deadline is measured by BenchmarkToolTimeoutLatency, not asserted here.)
func TestClockStopsComputation(t *testing.T) {
	r := runner(t, 0)
	for _, procs := range []int{0, 1} {
		if procs == 1 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		}
		start := time.Now()
		res := run(t, r, "spin", Config{Fuel: MaxFuel, Timeout: 300 * time.Millisecond})
		if took := time.Since(start); res.Stop != TimedOut || took > time.Minute {
			t.Fatalf("GOMAXPROCS %d: spin with %d fuel and 300ms: %+v after %s", runtime.GOMAXPROCS(0), uint64(MaxFuel), res, took)
		}
		if !strings.Contains(res.Detail, "300ms") || res.FuelUsed == 0 || res.FuelUsed >= MaxFuel {
			t.Errorf("detail %q, fuel used %d", res.Detail, res.FuelUsed)
		}
	}
	if res := run(t, r, "wc", Config{Stdin: []byte("a b\n")}); !res.OK() || string(res.Stdout) != "1 2 4\n" {
		t.Fatalf("wc after: %+v", res)
	}
}

// More tools computing at once than the process has Ps: each still stops.
func TestClockStopsManyTools(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	r := runner(t, 0)
	spin := testtools.Build(t, "spin")
	done := make(chan *Result, 4)
	for range 4 {
		go func() {
			res, err := r.Run(context.Background(), spin, Config{Fuel: MaxFuel, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
	}
	for range 4 {
		select {
		case res := <-done:
			if res == nil || res.Stop != TimedOut {
				t.Errorf("%+v", res)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the tools did not stop")
		}
	}
}

// A cancelled context stops a computing tool too, as "cancelled".
func TestCancelStopsComputation(t *testing.T) {
	r := runner(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := r.Run(ctx, testtools.Build(t, "spin"), Config{Fuel: MaxFuel, Timeout: time.Hour})
	if err != nil || res.Stop != TimedOut || res.Detail != "cancelled" {
		t.Fatalf("%+v %v", res, err)
	}
}

// Fuel still runs out as fuel, all of it used, with the clock far away.
func TestFuelStillFuel(t *testing.T) {
	r := runner(t, 0)
	if res := run(t, r, "spin", Config{Fuel: 10_000_000, Timeout: time.Hour}); res.Stop != OutOfFuel || res.FuelUsed != 10_000_000 {
		t.Fatalf("%+v", res)
	}
}

// More fuel than a run may have is refused before it starts, not wrapped
// into a negative count that stops it at once.
func TestFuelBounded(t *testing.T) {
	r := runner(t, 0)
	for _, f := range []uint64{MaxFuel + 1, 1 << 63, ^uint64(0)} {
		if _, err := r.Run(context.Background(), testtools.Build(t, "wc"), Config{Fuel: f}); !errors.Is(err, ErrConfig) {
			t.Errorf("fuel %d: %v", f, err)
		}
	}
}

// The host's own configuration never reaches a tool: by its name, nor by
// its value under another name.
func TestHostEnvRefused(t *testing.T) {
	t.Setenv("RUNEHOST_MODEL_KEY", "sk-the-model-key-0123456789")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-the-slack-token-0123")
	r := runner(t, 0)
	for _, kv := range []string{
		"RUNEHOST_MODEL_KEY=sk-the-model-key-0123456789", "SLACK_BOT_TOKEN=x", "RUNEHOST_MODEL_FAST_KEY=y", "SLACK_APP_TOKEN=z",
		"RUNEHOST_STORE=/tmp/s", "MY_KEY=sk-the-model-key-0123456789", "WRAPPED=Bearer xoxb-the-slack-token-0123;",
	} {
		_, err := r.Run(context.Background(), testtools.Build(t, "envsnoop"), Config{Env: []string{kv}})
		if !errors.Is(err, ErrHostEnv) {
			t.Errorf("%s: %v", kv, err)
		}
	}
	if res := run(t, r, "envsnoop", Config{Env: []string{"HOME=/home/ada"}, Args: []string{"HOME"}}); !strings.Contains(string(res.Stdout), "found HOME=/home/ada") {
		t.Errorf("an ordinary variable: %s", res.Stdout)
	}
}
