// check.go holds `runehost check`: parse and compile a prog, report errors.

package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/syntax"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "parse and compile progs, reporting errors as FILE:LINE:COL: message",
		ArgsUsage: "FILE...",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "disassemble", Aliases: []string{"d"}, Usage: "print the compiled bytecode"},
			&cli.BoolFlag{Name: "json", Usage: "as one JSON document: a row for each file, its acts or its error"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitf(exitUsage, "check: no file given (usage: runehost check FILE...)")
			}
			if c.Bool("json") && c.Bool("disassemble") {
				return exitf(exitUsage, "check: --json or --disassemble, not both")
			}
			list := &rows{w: c.App.Writer, form: asText}
			if c.Bool("json") {
				list.form = asJSON
			}
			failed := 0
			for _, file := range c.Args().Slice() {
				prog, err := compileFile(file)
				if err != nil {
					failed++
					if list.form == asJSON {
						list.add(checkRow(file, err))
						continue
					}
					fmt.Fprintln(c.App.ErrWriter, err)
					continue
				}
				if list.form == asJSON {
					list.add(map[string]any{"file": file, "ok": true, "functions": len(prog.Funcs), "acts": append([]string{}, prog.ActTags...)})
					continue
				}
				tags := "none"
				if len(prog.ActTags) > 0 {
					tags = strings.Join(prog.ActTags, ", ")
				}
				fmt.Fprintf(c.App.Writer, "%s: ok (%s; acts: %s)\n", file, plural(len(prog.Funcs), "function"), tags)
				if c.Bool("disassemble") {
					fmt.Fprint(c.App.Writer, prog.Disassemble())
				}
			}
			list.end()
			if failed > 0 {
				return exitf(exitUsage, "check: %d of %d files have errors", failed, c.NArg())
			}
			return nil
		},
	}
}

// compileFile reads and compiles a prog with its modules; errors name the file.
func compileFile(file string) (*compile.Program, error) {
	src, err := readProg(file)
	if err != nil {
		return nil, err
	}
	prog, err := compile.Compile(src)
	if err != nil {
		return nil, &fileError{compileMessage(file, err.Error()), err}
	}
	return prog, nil
}

// fileError is a prog's error as printed, naming its file, with the
// error it came from (a *syntax.Error carries the position).
type fileError struct {
	text string
	err  error
}

func (e *fileError) Error() string { return e.text }
func (e *fileError) Unwrap() error { return e.err }

// checkRow is check --json's row for a file that does not compile: the
// position, when there is one, in the file it is in (an import's own).
func checkRow(file string, err error) map[string]any {
	row := map[string]any{"file": file, "ok": false, "error": err.Error()}
	var se *syntax.Error
	if errors.As(err, &se) && se.Pos.IsValid() {
		in := file
		if se.File != "" {
			in = se.File
		}
		row["at"] = map[string]any{"file": in, "line": se.Pos.Line, "col": se.Pos.Col, "message": se.Msg}
	}
	return row
}

// readProg reads a prog and, transitively, the modules it imports
// (modules.Load, the library path from RUNEHOST_PATH): its source is the
// plain file, or the source set when it imports. Errors name the file.
func readProg(file string) ([]byte, error) {
	src, err := modules.Load(file, modules.LibPath())
	var se *syntax.Error
	if errors.As(err, &se) {
		return nil, &fileError{compileMessage(file, err.Error()), err}
	}
	return src, err
}

// compileMessage puts the prog's file before an error's text, unless the
// text begins with a position in a module (MODULE.rune:line:col), which
// already names its file.
func compileMessage(file, msg string) string {
	if i := strings.Index(msg, ".rune:"); i > 0 && !strings.Contains(msg[:i], ": ") && i+6 < len(msg) && msg[i+6] >= '0' && msg[i+6] <= '9' {
		return msg
	}
	return file + ":" + msg
}
