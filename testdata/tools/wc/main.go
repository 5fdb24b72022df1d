// Command wc counts the lines, words and bytes of stdin; -l, -w and -c
// print only those counts, as wc(1) does.
package main

import (
	"bufio"
	"fmt"
	"os"
	"unicode"
)

func main() {
	r := bufio.NewReader(os.Stdin)
	lines, words, bytes, in := 0, 0, 0, false
	for {
		c, n, err := r.ReadRune()
		if err != nil {
			break
		}
		bytes += n
		if c == '\n' {
			lines++
		}
		if unicode.IsSpace(c) {
			in = false
		} else if !in {
			in, words = true, words+1
		}
	}
	show := map[string]bool{}
	for _, a := range os.Args[1:] {
		switch a {
		case "-l", "-w", "-c":
			show[a] = true
		default:
			fmt.Fprintf(os.Stderr, "wc: unknown flag %s (want -l, -w or -c)\n", a)
			os.Exit(2)
		}
	}
	if len(show) == 0 {
		fmt.Printf("%d %d %d\n", lines, words, bytes)
		return
	}
	var out []any
	for _, f := range []struct {
		flag string
		n    int
	}{{"-l", lines}, {"-w", words}, {"-c", bytes}} {
		if show[f.flag] {
			out = append(out, f.n)
		}
	}
	fmt.Println(out...)
}
