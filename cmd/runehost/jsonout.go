// jsonout.go holds the read commands' machine forms: --json is one JSON
// document, --jsonl one JSON object a line (for streams and big lists).

package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// format is how a read command writes what it found.
type format int

const (
	asText  format = iota
	asJSON         // one document: an array of rows, or one object
	asLines        // JSON Lines: one object a line
)

// jsonFlags are --json and, for commands that list, --jsonl.
func jsonFlags(lines bool) []cli.Flag {
	fs := []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "as one JSON document"}}
	if lines {
		fs = append(fs, &cli.BoolFlag{Name: "jsonl", Usage: "as JSON Lines: one object a line, each written as it is read"})
	}
	return fs
}

// formatOf is the form the command line asks for.
func formatOf(c *cli.Context) (format, error) {
	switch {
	case c.Bool("json") && c.Bool("jsonl"):
		return asText, exitf(exitUsage, "%s: --json or --jsonl, not both", c.Command.FullName())
	case c.Bool("json"):
		return asJSON, nil
	case c.Bool("jsonl"):
		return asLines, nil
	}
	return asText, nil
}

// rows writes a list of objects as one JSON array, streamed row by row
// so that a list of millions needs no memory, or as JSON Lines.
type rows struct {
	w    io.Writer
	form format
	n    int
}

// add writes one row.
func (r *rows) add(v any) {
	j, err := json.Marshal(v)
	if err != nil { // every row is maps, strings and numbers
		panic(fmt.Sprintf("runehost: a row does not marshal: %v", err))
	}
	switch {
	case r.form == asLines:
	case r.n == 0:
		io.WriteString(r.w, "[\n")
	default:
		io.WriteString(r.w, ",\n")
	}
	r.n++
	r.w.Write(j)
	if r.form == asLines {
		io.WriteString(r.w, "\n")
	}
}

// end closes the array: an empty list is [].
func (r *rows) end() {
	switch {
	case r.form != asJSON:
	case r.n == 0:
		io.WriteString(r.w, "[]\n")
	default:
		io.WriteString(r.w, "\n]\n")
	}
}

// writeJSON writes one object as a document.
func writeJSON(w io.Writer, v any) {
	j, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("runehost: a document does not marshal: %v", err))
	}
	w.Write(append(j, '\n'))
}
