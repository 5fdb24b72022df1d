// Command grow allocates until the memory limit stops it.
package main

var keep [][]byte

func main() {
	for {
		keep = append(keep, make([]byte, 1<<20))
	}
}
