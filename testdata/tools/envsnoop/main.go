// Command envsnoop prints its whole environment, one variable a line, and
// then the variables named in its arguments, marked as found or missing.
package main

import (
	"fmt"
	"os"
)

func main() {
	for _, kv := range os.Environ() {
		fmt.Println("env", kv)
	}
	for _, name := range os.Args[1:] {
		if v, ok := os.LookupEnv(name); ok {
			fmt.Printf("found %s=%s\n", name, v)
		} else {
			fmt.Printf("missing %s\n", name)
		}
	}
}
