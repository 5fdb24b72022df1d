// check.go holds `runehost check`: parse and compile a prog, report errors.

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/guest/compile"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "parse and compile progs, reporting errors as FILE:LINE:COL: message",
		ArgsUsage: "FILE...",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "disassemble", Aliases: []string{"d"}, Usage: "print the compiled bytecode"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitf(exitUsage, "check: no file given (usage: runehost check FILE...)")
			}
			failed := 0
			for _, file := range c.Args().Slice() {
				prog, err := compileFile(file)
				if err != nil {
					fmt.Fprintln(c.App.ErrWriter, err)
					failed++
					continue
				}
				tags := "none"
				if len(prog.ActTags) > 0 {
					tags = strings.Join(prog.ActTags, ", ")
				}
				fmt.Fprintf(c.App.Writer, "%s: ok (%d functions; acts: %s)\n", file, len(prog.Funcs), tags)
				if c.Bool("disassemble") {
					fmt.Fprint(c.App.Writer, prog.Disassemble())
				}
			}
			if failed > 0 {
				return exitf(exitUsage, "check: %d of %d files have errors", failed, c.NArg())
			}
			return nil
		},
	}
}

// compileFile reads and compiles a prog; errors name the file.
func compileFile(file string) (*compile.Program, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	prog, err := compile.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%s:%v", file, err)
	}
	return prog, nil
}
