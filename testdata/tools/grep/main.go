// Command grep prints the lines of stdin (or of the files named after the
// pattern) that contain its first argument; it exits 1 when none does.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grep PATTERN [FILE...]")
		os.Exit(2)
	}
	var inputs []io.Reader
	for _, name := range os.Args[2:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grep:", err)
			os.Exit(2)
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = append(inputs, os.Stdin)
	}
	found := false
	for _, in := range inputs {
		s := bufio.NewScanner(in)
		for s.Scan() {
			if strings.Contains(s.Text(), os.Args[1]) {
				fmt.Println(s.Text())
				found = true
			}
		}
	}
	if !found {
		os.Exit(1)
	}
}
