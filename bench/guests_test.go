// guests_test.go times guest builds side by side: the same progs in each, alternated.

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/wasmvm"
)

// TestGuests runs each prog of progs/ in each guest module named by
// RUNE_GUESTS (comma-separated paths to metered guest.wasm files; "" is
// the embedded one) RUNE_ROUNDS times (default 6), alternating the guests
// within each round so that a noisy machine slows them alike, and prints
// the median time of each: the CPU time of the thread that ran it, which a
// machine shared with other work disturbs less than the wall clock (Linux
// only; the guest's collector runs on that thread too). RUNE_PROGS limits the progs (comma-separated
// names or paths to .rune files). Without RUNE_GUESTS it is skipped.
func TestGuests(t *testing.T) {
	names := os.Getenv("RUNE_GUESTS")
	if names == "" {
		t.Skip("RUNE_GUESTS not set")
	}
	rounds := 6
	if s := os.Getenv("RUNE_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	progs := progNames
	if s := os.Getenv("RUNE_PROGS"); s != "" {
		progs = strings.Split(s, ",")
	}
	ctx := context.Background()
	guests := strings.Split(names, ",")
	rts := make([]*wasmvm.Runtime, len(guests))
	for i, g := range guests {
		cfg := wasmvm.Config{CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache")}
		if g != "" {
			b, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Module = b
		}
		rt, err := wasmvm.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		rts[i] = rt
	}
	for _, prog := range progs {
		file := prog
		if !strings.HasSuffix(file, ".rune") {
			file = filepath.Join("progs", prog+".rune")
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		times := make([][]time.Duration, len(rts))
		var want []byte
		for r := -1; r < rounds; r++ { // round -1 warms up
			for i, rt := range rts {
				runtime.LockOSThread()
				start := threadTime()
				cp, err := rt.Start(ctx, port.Input{Source: src, Limit: 1 << 62})
				if err != nil {
					t.Fatal(err)
				}
				res, err := rt.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 62})
				if err != nil {
					t.Fatal(err)
				}
				d := threadTime() - start
				runtime.UnlockOSThread()
				if res.Kind != port.Done {
					t.Fatalf("%s in %s: %s %v", prog, guests[i], res.Kind, res.Err)
				}
				if want == nil {
					want = res.Checkpoint
				} else if !slices.Equal(want, res.Checkpoint) {
					t.Fatalf("%s: guest %s ends in another checkpoint", prog, guests[i])
				}
				if r >= 0 {
					times[i] = append(times[i], d)
				}
			}
		}
		line := fmt.Sprintf("%-10s", filepath.Base(prog))
		base := median(times[0])
		for i := range rts {
			m := median(times[i])
			line += fmt.Sprintf("  %s %8.2f ms (%.2f; min %.2f)", filepath.Base(guests[i]), float64(m)/1e6, float64(m)/float64(base), float64(slices.Min(times[i]))/1e6)
		}
		fmt.Println(line)
	}
}

// threadTime is the CPU time the calling thread has used.
func threadTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}
