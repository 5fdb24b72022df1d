// Command wholeproc measures what a user runs: the CPU (user and system)
// of whole `runehost run` processes, sandboxed and --native side by side,
// interleaved, and prints the medians with the start-up subtracted.
//
//	go build -o /tmp/rh ./cmd/runehost
//	cd bench && go run ./wholeproc -rh /tmp/rh -n 7 progs/classic/*.rune progs/*.rune
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

func main() {
	rh := flag.String("rh", "runehost", "the runehost binary")
	n := flag.Int("n", 5, "runs of each prog in each mode")
	hello := flag.String("startup", "../testdata/progs/hello.rune", "the prog whose time is the start-up")
	flag.Parse()
	flags := []string{"run", "--no-store", "--quiet", "--limit", "1000000000"}
	modes := []struct {
		name  string
		extra []string
	}{{"sandbox", nil}, {"native", []string{"--native"}}}
	measure := func(prog string) [2]time.Duration {
		var t [2][]time.Duration
		for range *n {
			for i, m := range modes {
				args := append(append(slices.Clone(flags), m.extra...), prog)
				cmd := exec.Command(*rh, args...)
				if err := cmd.Run(); err != nil {
					fmt.Fprintf(os.Stderr, "%s %v: %v\n", *rh, args, err)
					os.Exit(1)
				}
				t[i] = append(t[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
		}
		return [2]time.Duration{median(t[0]), median(t[1])}
	}
	base := measure(*hello)
	fmt.Printf("%-32s %9s %9s %7s\n", "prog", "sandbox", "native", "ratio")
	fmt.Printf("%-32s %9s %9s %7s\n", "(start-up)", ms(base[0]), ms(base[1]), "")
	for _, prog := range flag.Args() {
		m := measure(prog)
		s, nat := m[0]-base[0], m[1]-base[1]
		fmt.Printf("%-32s %9s %9s %7.2f\n", prog, ms(s), ms(nat), float64(s)/float64(max(nat, time.Millisecond)))
	}
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
