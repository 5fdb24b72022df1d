// Command wc counts the lines, words and bytes of stdin.
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
	fmt.Printf("%d %d %d\n", lines, words, bytes)
}
