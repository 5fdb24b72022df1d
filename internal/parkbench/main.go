// Command parkbench measures a store with many parked invocations: it admits
// N invocations that each wait for an event (through the real engine), then
// times `runehost ps` and `runehost send` (which wakes and finishes one of
// them) as child processes and reports their peak RSS. Run it with
// `make park` (PARK_N, default 100000).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

const prog = `let n = input
let ev = await {key: "go"}
return n + ev`

func main() {
	n := flag.Int("n", 100_000, "parked invocations")
	workers := flag.Int("workers", 32, "admitting goroutines")
	dir := flag.String("dir", "", "the store (a fresh temporary one when empty)")
	measure := flag.String("measure", "", "measure the commands with this runehost binary on -dir (what a parking run does in a fresh process)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the parking to this file")
	sends := flag.Bool("sends", false, "only time sends in process to the invocations parked in -dir")
	flag.Parse()
	if *measure != "" {
		measureCommands(*measure, *dir, *n)
		return
	}
	if *sends {
		measureSends(*dir, *n, 200)
		return
	}
	tmp, err := os.MkdirTemp("", "parkbench")
	check(err)
	defer os.RemoveAll(tmp)
	if *dir == "" {
		*dir = filepath.Join(tmp, "store")
	}
	bin := filepath.Join(tmp, "runehost")
	build := exec.Command("go", "build", "-o", bin, "./cmd/runehost")
	build.Stderr = os.Stderr
	check(build.Run())

	if *profile != "" {
		f, err := os.Create(*profile)
		check(err)
		check(pprof.StartCPUProfile(f))
	}
	start := time.Now()
	s, err := store.Open(store.Options{Dir: *dir})
	check(err)
	e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
	check(err)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(*n) {
					return
				}
				id, err := e.NewInvocationID()
				check(err)
				in, err := checkpoint.EncodeData(i)
				check(err)
				st, err := e.Start(context.Background(), id, "parked", []byte(prog), in, 100_000, 1)
				check(err)
				if st.Status != host.Waiting {
					check(fmt.Errorf("%s is %s, not waiting", id, st.Status))
				}
			}
		}()
	}
	wg.Wait()
	check(s.Close())
	if *profile != "" {
		pprof.StopCPUProfile()
	}
	took := time.Since(start)
	fmt.Printf("park: %d invocations parked in %s (%.0f a second, %d admitting goroutines)\n", *n, took.Round(time.Millisecond), float64(*n)/took.Seconds(), *workers)

	// The commands are timed from a fresh, small process: a child's peak
	// RSS as the kernel reports it includes its parent's pages until it
	// execs, and this one holds 100,000 invocations' worth of garbage.
	self, err := os.Executable()
	check(err)
	m := exec.Command(self, "-measure", bin, "-dir", *dir, "-n", fmt.Sprint(*n))
	m.Stdout, m.Stderr = os.Stdout, os.Stderr
	check(m.Run())
	measureSends(*dir, *n, 200)
}

// measureSends times Engine.Deliver, what the server does for a send, to
// k invocations picked at random among the n parked, in this process.
func measureSends(dir string, n, k int) {
	s, err := store.Open(store.Options{Dir: dir})
	check(err)
	defer s.Close()
	e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
	check(err)
	payload, err := checkpoint.EncodeData(int64(1))
	check(err)
	var d []time.Duration
	for _, i := range rand.Perm(n)[:k] {
		start := time.Now()
		check(e.Deliver(fmt.Sprintf("r%d", i+1), "go", payload))
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	fmt.Printf("park: %d sends in process (Engine.Deliver): p50 %s, p99 %s\n", k, d[k/2].Round(10*time.Microsecond), d[k*99/100].Round(10*time.Microsecond))
}

func measureCommands(bin, dir string, n int) {
	for _, args := range [][]string{
		{"ps"},
		{"ps", "--status", "running"},
		{"send", fmt.Sprintf("r%d", n/2), "go", "1"},
	} {
		var best, first time.Duration
		var rss int64
		for range 3 {
			d, f, r := run(bin, dir, args...)
			if best == 0 || d < best {
				best, first = d, f
			}
			rss = max(rss, r)
			if args[0] == "send" {
				break // once: the invocation is finished after it
			}
		}
		fmt.Printf("park: runehost %v: %s (best of 3; first output after %s), peak RSS %d MB\n", args, best.Round(time.Millisecond), first.Round(time.Millisecond), rss/1024)
	}
}

// run runs runehost on the store and returns its wall time, the time to
// its first output, and its peak RSS (KiB).
func run(bin, dir string, args ...string) (time.Duration, time.Duration, int64) {
	c := exec.Command(bin, append(args, "--store", dir, "--native")...)
	if args[0] == "ps" {
		c = exec.Command(bin, append(args, "--store", dir)...)
	}
	out, err := c.StdoutPipe()
	check(err)
	c.Stderr = os.Stderr
	start := time.Now()
	check(c.Start())
	var first time.Duration
	buf := make([]byte, 64<<10)
	for {
		k, err := out.Read(buf)
		if k > 0 && first == 0 {
			first = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	check(c.Wait())
	d := time.Since(start)
	return d, first, c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "park:", err)
		os.Exit(1)
	}
}
