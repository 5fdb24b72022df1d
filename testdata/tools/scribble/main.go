// Command scribble tries to change files: each argument is OP:PATH[:PATH2],
// OP one of trunc (open read-only with O_TRUNC), create (read-only with
// O_CREATE|O_EXCL), write, mkdir, remove, rename. It prints "ok OP PATH" or
// "denied OP PATH: error" for each.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	for _, arg := range os.Args[1:] {
		parts := strings.SplitN(arg, ":", 3)
		if len(parts) < 2 {
			fmt.Println("bad", arg)
			continue
		}
		op, path := parts[0], parts[1]
		var err error
		switch op {
		case "trunc":
			var f *os.File
			if f, err = os.OpenFile(path, os.O_RDONLY|os.O_TRUNC, 0); err == nil {
				f.Close()
			}
		case "create":
			var f *os.File
			if f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				f.Close()
			}
		case "write":
			err = os.WriteFile(path, []byte("scribbled"), 0o644)
		case "mkdir":
			err = os.Mkdir(path, 0o755)
		case "remove":
			err = os.Remove(path)
		case "rename":
			if len(parts) < 3 {
				fmt.Println("bad", arg)
				continue
			}
			err = os.Rename(path, parts[2])
		}
		if err != nil {
			fmt.Printf("denied %s %s: %v\n", op, path, err)
		} else {
			fmt.Printf("ok %s %s\n", op, path)
		}
	}
}
