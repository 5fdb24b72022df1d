// redact.go holds `runehost redact`: the run events' redactor as a filter.

package main

import (
	"bufio"
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
		Description: "Applies the redactor every run event goes through: credential formats,\n" +
			"headers, URLs and command lines with credentials, PEM private keys, values\n" +
			"of assignments whose name marks a secret, and the host's own secrets (the\n" +
			"model keys in its configuration). Control characters are stripped too.\n" +
			"Line by line, so it can sit in a pipe: tail -f app.log | runehost redact",
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitf(exitUsage, "redact: reads stdin; takes no arguments")
			}
			r := redact.New(acts.FromEnv().Secrets()...)
			in := bufio.NewReaderSize(os.Stdin, 64<<10)
			if c.App.Reader != nil && c.App.Reader != os.Stdin {
				in = bufio.NewReaderSize(c.App.Reader, 64<<10)
			}
			out := bufio.NewWriter(c.App.Writer)
			defer out.Flush()
			// A PEM block spans lines: it is gathered (up to 1 MiB) before it is
			// redacted, so that no line of it leaks on its own. A block opens
			// only at the start of a line.
			var pending []byte
			open := false
			for {
				line, err := in.ReadBytes('\n')
				if !open && pemBegin.Match(line) && !pemEnd.Match(line) {
					open = true
				} else if open && pemEnd.Match(line) {
					open = false
				}
				pending = append(pending, line...)
				if !open || err != nil || len(pending) > 1<<20 {
					out.WriteString(events.Clean(r, string(pending), 0))
					pending, open = pending[:0], false
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

var (
	pemBegin = regexp.MustCompile(`^\s*-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)
	pemEnd   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY-----`)
)
