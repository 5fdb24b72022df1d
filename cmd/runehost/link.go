// link.go holds `runehost link`: make, list and revoke the capability
// links of a run's live page (docs/page.md).

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/server"
	"github.com/runehost/runehost/server/links"
)

// defaultBaseURL is where `runehost serve` listens by default.
const defaultBaseURL = "http://127.0.0.1:7233"

// maxTTL bounds a link's life.
const maxTTL = server.MaxLinkTTL

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
			&cli.BoolFlag{Name: "json", Usage: "with --list: as one JSON document"},
		},
		Action: func(c *cli.Context) error {
			list, revoke := c.Bool("list"), c.Bool("revoke")
			switch {
			case list && revoke:
				return exitf(exitUsage, "link: --list or --revoke, not both")
			case revoke && (c.NArg() < 1 || c.NArg() > 2), !revoke && c.NArg() != 1:
				return exitf(exitUsage, "link: want RUN, --list RUN or --revoke RUN [ID]")
			case c.Bool("json") && !list:
				return exitf(exitUsage, "link: --json lists: runehost link --list RUN --json")
			}
			ttl := c.Duration("ttl")
			if ttl <= 0 || ttl > maxTTL {
				return exitf(exitUsage, "link: --ttl %v: want a positive duration of at most %v", ttl, maxTTL)
			}
			run := c.Args().First()
			b, err := openBackend(c, false)
			if err != nil {
				return err
			}
			defer b.Close()
			switch {
			case list:
				return linkList(c, b, run, nowMillis())
			case revoke:
				return linkRevoke(c, b, run, c.Args().Get(1))
			}
			base := c.String("base-url")
			if !c.IsSet("base-url") {
				base = "" // the server's own, when one answers: it knows where it listens
			}
			return linkCreate(c, b, run, ttl, base)
		},
	}
}

// linkCreate makes a link and prints its URL (on stdout, alone, for
// scripts) and its id and expiry (on stderr).
func linkCreate(c *cli.Context, b backend, run string, ttl time.Duration, base string) error {
	link, err := b.CreateLink(c.Context, run, ttl)
	if err != nil {
		return failed("link", err, exitInternal)
	}
	_, served := b.(*remote)
	switch {
	case base == "" && link.URL != "":
		fmt.Fprintln(c.App.Writer, link.URL)
	case base == "" && served:
		// The server serves no pages: a link would not open. Take it back.
		if _, err := b.RevokeLinks(c.Context, run, link.ID); err != nil {
			return failed("link", err, exitInternal)
		}
		return exitf(exitUsage, "link: runehost serve serves no run pages (it listens on no TCP address), so a link would not open: restart it with %s, or give --base-url where its pages are reached", hintArgs(c, "serve", "--listen", defaultListen))
	default:
		if base == "" {
			base = defaultBaseURL
		}
		fmt.Fprintf(c.App.Writer, "%s/r/%s\n", strings.TrimRight(base, "/"), link.Token)
		if !served && !c.IsSet("base-url") {
			fmt.Fprintf(c.App.ErrWriter, "note: the page opens while runehost serve listens on %s (%s)\n", strings.TrimPrefix(base, "http://"), hintArgs(c, "serve"))
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "link %s to %s expires %s (runehost link --revoke %s %s)\n", link.ID, run, events.ISO(link.Expires), run, link.ID)
	return nil
}

// linkList prints a run's links, one a line: id, state, created, expires.
func linkList(c *cli.Context, b backend, run string, now int64) error {
	ls, err := b.Links(c.Context, run)
	if err != nil {
		return failed("link", err, exitInternal)
	}
	out := &rows{w: c.App.Writer, form: asText}
	if c.Bool("json") {
		out.form = asJSON
		defer out.end()
	}
	for _, link := range ls {
		state := "live"
		switch {
		case link.Revoked:
			state = "revoked"
		case now >= link.Expires:
			state = "expired"
		}
		if out.form == asJSON {
			out.add(map[string]any{"id": link.ID, "state": state, "created": events.ISO(link.Created), "expires": events.ISO(link.Expires)})
			continue
		}
		fmt.Fprintf(c.App.Writer, "%s  %-7s  created %s  expires %s\n", link.ID, state, events.ISO(link.Created), events.ISO(link.Expires))
	}
	return nil
}

// linkRevoke revokes the run's link id, or all its links when id is "".
func linkRevoke(c *cli.Context, b backend, run, id string) error {
	n, err := b.RevokeLinks(c.Context, run, id)
	if err != nil {
		return failed("link", err, exitInternal)
	}
	if id != "" && n == 0 {
		return exitf(exitUsage, "link: %s has no live link %s", run, id)
	}
	fmt.Fprintf(c.App.ErrWriter, "revoked %d link(s) of %s\n", n, run)
	return nil
}
