// link.go holds `runehost link`: make, list and revoke the capability
// links of a run's live page (docs/page.md).

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/server/links"
)

// defaultBaseURL is where `runehost serve` listens by default.
const defaultBaseURL = "http://127.0.0.1:7233"

// maxTTL bounds a link's life: a capability should not outlive its use.
const maxTTL = 366 * 24 * time.Hour

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:      "link",
		Usage:     "make, list or revoke read-only links to a run's live page",
		ArgsUsage: "RUN | --list RUN | --revoke RUN [ID]",
		Description: "Prints a new link to the run's page, BASE/r/TOKEN, and when it expires.\n" +
			"The link shows the run and its children, read-only. Only its hash is\n" +
			"stored: the token is shown once. --list lists a run's links by id;\n" +
			"--revoke revokes one of them, or all of them without an ID.",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.DurationFlag{Name: "ttl", Value: links.DefaultTTL, Usage: "how long the link lives"},
			&cli.StringFlag{Name: "base-url", Value: defaultBaseURL, EnvVars: []string{"RUNEHOST_BASE_URL"}, Usage: "where runehost serve is reached"},
			&cli.BoolFlag{Name: "list", Usage: "list the run's links"},
			&cli.BoolFlag{Name: "revoke", Usage: "revoke the run's link ID, or all its links"},
		},
		Action: func(c *cli.Context) error {
			list, revoke := c.Bool("list"), c.Bool("revoke")
			switch {
			case list && revoke:
				return exitf(exitUsage, "link: --list or --revoke, not both")
			case revoke && (c.NArg() < 1 || c.NArg() > 2), !revoke && c.NArg() != 1:
				return exitf(exitUsage, "link: want RUN, --list RUN or --revoke RUN [ID]")
			}
			ttl := c.Duration("ttl")
			if ttl <= 0 || ttl > maxTTL {
				return exitf(exitUsage, "link: --ttl %v: want a positive duration of at most %v", ttl, maxTTL)
			}
			run := c.Args().First()
			e, done, err := openEngine(c, false)
			if err != nil {
				return err
			}
			defer done()
			l := links.New(e.Store, nowMillis)
			switch {
			case list:
				return linkList(c.App.Writer, l, run, nowMillis())
			case revoke:
				return linkRevoke(c.App.ErrWriter, l, run, c.Args().Get(1))
			}
			if _, err := e.Inspect(run); errors.Is(err, host.ErrNoSuchInvocation) {
				return exitf(exitUsage, "link: %v", err)
			} else if err != nil {
				return exitf(exitInternal, "link: %v", err)
			}
			return linkCreate(c.App.Writer, c.App.ErrWriter, l, run, ttl, c.String("base-url"))
		},
	}
}

// linkCreate makes a link and prints its URL (on out, alone, for scripts)
// and its id and expiry (on info).
func linkCreate(out, info io.Writer, l *links.Links, run string, ttl time.Duration, base string) error {
	if base == "" {
		base = defaultBaseURL
	}
	token, link, err := l.Create(run, ttl)
	if err != nil {
		return exitf(exitInternal, "link: %v", err)
	}
	fmt.Fprintf(out, "%s/r/%s\n", strings.TrimRight(base, "/"), token)
	fmt.Fprintf(info, "link %s to %s expires %s (runehost link --revoke %s %s)\n", link.ID, run, events.ISO(link.Expires), run, link.ID)
	return nil
}

// linkList prints a run's links, one a line: id, state, created, expires.
func linkList(out io.Writer, l *links.Links, run string, now int64) error {
	ls, err := l.List(run)
	if err != nil {
		return exitf(exitInternal, "link: %v", err)
	}
	for _, link := range ls {
		state := "live"
		switch {
		case link.Revoked:
			state = "revoked"
		case !link.Live(now):
			state = "expired"
		}
		fmt.Fprintf(out, "%s  %-7s  created %s  expires %s\n", link.ID, state, events.ISO(link.Created), events.ISO(link.Expires))
	}
	return nil
}

// linkRevoke revokes the run's link id, or all its links when id is "".
func linkRevoke(info io.Writer, l *links.Links, run, id string) error {
	n, err := l.Revoke(run, id)
	if err != nil {
		return exitf(exitInternal, "link: %v", err)
	}
	if id != "" && n == 0 {
		return exitf(exitUsage, "link: %s has no live link %s", run, id)
	}
	fmt.Fprintf(info, "revoked %d link(s) of %s\n", n, run)
	return nil
}
