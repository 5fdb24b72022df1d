// Command racer reads and writes through a directory while the host swaps it
// for a symlink that leads out: arguments DIR STOP. Until STOP exists it
// reads DIR/f, writes DIR/w, makes and removes DIR/m and opens DIR/n with
// O_CREATE; then it prints how often each content was read, and the errors.
// It writes STOP.ready after its first round, so the host starts swapping
// while it runs.
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

func main() {
	dir, stop := os.Args[1], os.Args[2]
	seen := map[string]int{}
	rounds := 0
	for {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		if b, err := os.ReadFile(dir + "/f"); err != nil {
			seen["read error"]++
		} else {
			seen[string(b)]++
		}
		if err := os.WriteFile(dir+"/w", []byte("written by the tool"), 0o644); err != nil {
			seen["write error"]++
		}
		if os.Mkdir(dir+"/m", 0o755) == nil {
			os.Remove(dir + "/m")
		}
		if f, err := os.OpenFile(dir+"/n", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
			f.Write([]byte("n"))
			f.Close()
		}
		rounds++
		if rounds == 1 {
			os.WriteFile(stop+".ready", nil, 0o644)
		}
	}
	var lines []string
	for k, n := range seen {
		lines = append(lines, fmt.Sprintf("%q %d", k, n))
	}
	slices.Sort(lines)
	fmt.Printf("rounds %d\n%s\n", rounds, strings.Join(lines, "\n"))
}
