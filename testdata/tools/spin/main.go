// Command spin never stops: fuel or the clock must stop it.
package main

func main() {
	n := 0
	for {
		n++
	}
}
