// slack.go holds `runehost slack`: run progs from Slack mentions, with live
// status cards.

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/slack/dispatch"
	"github.com/runehost/runehost/slack/status"
)

func slackCommand() *cli.Command {
	return &cli.Command{
		Name:  "slack",
		Usage: "run progs from Slack mentions, with a live status card for each",
		Description: "Listens for mentions of the app: `@runehost NAME [INPUT]` runs NAME.rune from\n" +
			"--progs with INPUT (JSON, or text) in the store, as the prog CHANNEL/NAME,\n" +
			"so a channel's grants are `runehost grant --prog C0123/* ...` (or per prog).\n" +
			"A status card is posted at once in the mention's thread and kept current;\n" +
			"a reply in the thread answers what the run awaits (an approval).\n\n" +
			"With SLACK_APP_TOKEN it uses Socket Mode; otherwise it serves the Events\n" +
			"API on --listen, checking each request with SLACK_SIGNING_SECRET.\n" +
			"docs/slack.md has the app manifest.",
		Flags: []cli.Flag{
			storeFlag(), nativeFlag(), cacheFlag(),
			&cli.StringFlag{Name: "progs", Value: "progs", Usage: "the directory of progs a mention may name", EnvVars: []string{"RUNEHOST_SLACK_PROGS"}},
			&cli.StringFlag{Name: "listen", Value: ":3000", Usage: "the Events API address (without Socket Mode)"},
			&cli.StringFlag{Name: "base-url", Usage: "links to runs: BASE/runs/INV", EnvVars: []string{"RUNEHOST_BASE_URL"}},
			&cli.StringFlag{Name: "verbosity", Value: "verbose", Usage: "quiet (the checklist), verbose (and recent acts) or debug (and the current act)"},
			&cli.Uint64Flag{Name: "limit", Value: 10_000_000, Usage: "step limit of each run"},
			&cli.StringFlag{Name: "bot-token", EnvVars: []string{"SLACK_BOT_TOKEN"}, Usage: "xoxb-… (required)"},
			&cli.StringFlag{Name: "app-token", EnvVars: []string{"SLACK_APP_TOKEN"}, Usage: "xapp-…: Socket Mode"},
			&cli.StringFlag{Name: "signing-secret", EnvVars: []string{"SLACK_SIGNING_SECRET"}, Usage: "the Events API's signing secret"},
			&cli.StringFlag{Name: "api-url", EnvVars: []string{"SLACK_API_URL"}, Hidden: true},
		},
		Action: func(c *cli.Context) error {
			verb, ok := map[string]status.Verbosity{"quiet": status.Quiet, "verbose": status.Verbose, "debug": status.Debug}[c.String("verbosity")]
			if !ok {
				return exitf(exitUsage, "slack: --verbosity is quiet, verbose or debug")
			}
			if c.String("bot-token") == "" {
				return exitf(exitUsage, "slack: set SLACK_BOT_TOKEN (and SLACK_APP_TOKEN for Socket Mode, or SLACK_SIGNING_SECRET for the Events API)")
			}
			if c.String("app-token") == "" && c.String("signing-secret") == "" {
				return exitf(exitUsage, "slack: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (Events API)")
			}
			e, done, err := openEngine(c, true)
			if err != nil {
				return err
			}
			defer done()
			// Slack's own tokens are the host's secrets too.
			e.Redactor = redact.New(append(acts.FromEnv().Secrets(), c.String("bot-token"), c.String("app-token"), c.String("signing-secret"))...)
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			d := dispatch.New(dispatch.Config{
				BotToken: c.String("bot-token"), AppToken: c.String("app-token"), SigningSecret: c.String("signing-secret"),
				APIURL: c.String("api-url"), ProgDir: c.String("progs"), BaseURL: c.String("base-url"),
				Verbosity: verb, Limit: c.Uint64("limit"),
				Log: func(line string) { fmt.Fprintln(c.App.ErrWriter, line) },
			}, e)
			if c.String("app-token") != "" {
				fmt.Fprintln(c.App.ErrWriter, "slack: connecting over Socket Mode")
				err = d.RunSocketMode(ctx)
			} else {
				srv := &http.Server{Addr: c.String("listen"), Handler: d.EventsHandler(ctx), ReadHeaderTimeout: 5 * time.Second}
				go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
				fmt.Fprintf(c.App.ErrWriter, "slack: serving the Events API on %s\n", c.String("listen"))
				if err = srv.ListenAndServe(); errors.Is(err, http.ErrServerClosed) {
					err = nil
				}
			}
			d.Wait()
			d.Drain(5 * time.Second) // terminal frames funded but not yet sent
			cs := d.Cards()
			fmt.Fprintf(c.App.ErrWriter, "slack: stopped; %d card edits, %d progress frames dropped, %d terminal frames refused\n",
				cs.Edits.Load(), cs.DroppedProgress.Load(), cs.RefusedTerminal.Load())
			if err != nil {
				return exitf(exitInternal, "slack: %v", err)
			}
			return nil
		},
	}
}
