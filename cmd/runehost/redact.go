// redact.go holds `runehost redact`: the run events' redactor as a filter.

package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
)

func redactCommand() *cli.Command {
	return &cli.Command{
		Name:  "redact",
		Usage: "strip secrets from stdin to stdout, as run events are",
		Description: "Applies the redactor every run event goes through: vendors' token formats,\n" +
			"headers, URLs and command lines with credentials, PEM private keys, values\n" +
			"of assignments whose name marks a secret (in the syntaxes of shells, config\n" +
			"files and the common languages), and the host's own secrets (the model keys\n" +
			"in its configuration), raw or encoded. Control characters are stripped too.\n" +
			"What has arrived is written at once, so it can sit in a pipe:\n" +
			"  tail -f app.log | runehost redact\n" +
			"docs/events.md lists what is covered and what is not.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitf(exitUsage, "redact: reads stdin; takes no arguments")
			}
			r := redact.New(acts.FromEnv().Secrets()...)
			in := bufio.NewReaderSize(os.Stdin, 64<<10)
			if c.App.Reader != nil && c.App.Reader != os.Stdin {
				in = bufio.NewReaderSize(c.App.Reader, 64<<10)
			}
			out := bufio.NewWriterSize(c.App.Writer, 64<<10)
			defer out.Flush()
			// Lines are redacted in chunks of what has arrived (up to 64 KiB),
			// and written as soon as no more input is waiting: a pipe stays
			// live, a file goes at full speed. A PEM block or a YAML block
			// scalar spans lines: it is gathered (up to 1 MiB) before it is
			// redacted, so that no line of it leaks on its own.
			var pending []byte
			g := gather{block: -1}
			for {
				line, err := in.ReadSlice('\n')
				partial := err == bufio.ErrBufferFull // a long line: the rest follows
				if partial {
					err = nil
				} else {
					g.add(line)
				}
				pending = append(pending, line...)
				if err == nil && len(pending) <= 1<<20 && (g.open() || partial || in.Buffered() > 0 && len(pending) < 64<<10) {
					continue
				}
				out.WriteString(events.Clean(r, string(pending), 0))
				pending, g = pending[:0], gather{block: -1}
				if in.Buffered() == 0 {
					out.Flush()
				}
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return exitf(exitInternal, "redact: %v", err)
				}
			}
		},
	}
}

// gather says whether the lines so far must wait for more: an open PEM
// block, or an open YAML block scalar (password: |), is redacted whole.
type gather struct {
	pem   bool
	block int // the indentation of an open block scalar's name, or -1
}

func (g *gather) add(line []byte) {
	if g.block >= 0 && len(bytes.TrimSpace(line)) > 0 && indentation(line) <= g.block {
		g.block = -1 // a line no more indented than the name: the value ended
	}
	if !g.pem && bytes.Contains(line, pemMark) {
		if i := pemBegin.FindIndex(line); i != nil && !pemEnd.Match(line[i[1]:]) {
			g.pem = true
		}
	} else if g.pem && pemEnd.Match(line) {
		g.pem = false
	}
	if g.block < 0 && blockIndicator(line) && blockStart.Match(line) {
		g.block = indentation(line)
	}
}

func (g *gather) open() bool { return g.pem || g.block >= 0 }

// blockIndicator reports whether a line could open a block scalar (it
// ends in | or > and its modifiers): the cheap test before the pattern.
func blockIndicator(line []byte) bool {
	i := len(line) - 1
	for i >= 0 && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
		i--
	}
	for i >= 0 && (line[i] == '-' || line[i] == '+' || '0' <= line[i] && line[i] <= '9') {
		i--
	}
	return i > 0 && (line[i] == '|' || line[i] == '>')
}

func indentation(line []byte) int {
	return len(line) - len(bytes.TrimLeft(line, " \t"))
}

var (
	pemMark    = []byte("-----BEGIN ")
	pemBegin   = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd     = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	blockStart = regexp.MustCompile(`^[ \t]*(?:- )?[^\s:#][^:#]*:[ \t]*[|>][-+0-9]*[ \t]*\r?\n?$`)
)
