// slack.go holds `runehost slack`: serve with the Slack dispatcher, which
// runs progs from Slack mentions with a live status card for each.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/metrics"
	"github.com/runehost/runehost/slack/dispatch"
	"github.com/runehost/runehost/slack/status"
)

func slackCommand() *cli.Command {
	return &cli.Command{
		Name:  "slack",
		Usage: "serve with the Slack dispatcher: run progs from Slack mentions, with a live status card for each",
		Description: "Listens for mentions of the app: `@runehost NAME [INPUT]` runs NAME.rune from\n" +
			"--progs with INPUT (JSON, or text) in the store, as the prog CHANNEL/NAME,\n" +
			"so a channel's grants are `runehost grant --prog C0123/* ...` (or per prog).\n" +
			"A status card is posted at once in the mention's thread and kept current;\n" +
			"a reply in the thread answers what the run awaits (an approval).\n\n" +
			"With SLACK_APP_TOKEN it uses Socket Mode; otherwise it serves the Events\n" +
			"API on --slack-listen, checking each request with SLACK_SIGNING_SECRET.\n" +
			"The tokens are checked first: a token of the wrong type, refused, or\n" +
			"lacking a scope stops it at start (exit 2) with what to fix.\n" +
			"docs/slack.md sets the app up from zero (the manifest, the tokens). It is\n" +
			"`runehost serve --slack`: the API is served too, so other commands work on\n" +
			"the store meanwhile. Run one per Slack app: two would split its events.",
		Flags: append([]cli.Flag{
			storeFlag(), nativeFlag(), cacheFlag(),
			&cli.StringFlag{Name: "listen", Usage: "also serve the API on this TCP address"},
			&cli.StringFlag{Name: "token-file", Usage: "the TCP bearer token's file"},
			&cli.StringFlag{Name: "base-url", Usage: "links to runs: BASE/r/TOKEN", EnvVars: []string{"RUNEHOST_BASE_URL"}},
			&cli.IntFlag{Name: "workers", Usage: "trees driven at once", DefaultText: "the number of CPUs"},
		}, append(capFlags(), slackFlags()...)...),
		Action: func(c *cli.Context) error { return serveAction(c, true) },
	}
}

// slackFlags are the Slack dispatcher's flags, on serve and slack.
func slackFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "progs", Value: "progs", Usage: "the directory of progs a mention may name", EnvVars: []string{"RUNEHOST_SLACK_PROGS"}},
		&cli.StringFlag{Name: "slack-listen", Value: ":3000", Usage: "the Slack Events API address (without Socket Mode)"},
		&cli.StringFlag{Name: "verbosity", Value: "verbose", Usage: "quiet (the checklist), verbose (and recent acts) or debug (and the current act)"},
		&cli.Uint64Flag{Name: "limit", Value: defaultLimit, Usage: "step limit of each run"},
		&cli.StringFlag{Name: "bot-token", EnvVars: []string{"SLACK_BOT_TOKEN"}, Usage: "xoxb-… (required with Slack)"},
		&cli.StringFlag{Name: "app-token", EnvVars: []string{"SLACK_APP_TOKEN"}, Usage: "xapp-… with connections:write: Socket Mode"},
		&cli.StringFlag{Name: "signing-secret", EnvVars: []string{"SLACK_SIGNING_SECRET"}, Usage: "the Events API's signing secret"},
		&cli.StringFlag{Name: "api-url", EnvVars: []string{"SLACK_API_URL"}, Hidden: true},
	}
}

// slackOptions configure the dispatcher inside a serve.
type slackOptions struct {
	cfg    dispatch.Config
	listen string
}

// secrets are Slack's own tokens: the host's secrets too.
func (o *slackOptions) secrets() []string {
	return []string{o.cfg.BotToken, o.cfg.AppToken, o.cfg.SigningSecret}
}

func slackOptionsOf(c *cli.Context) (*slackOptions, error) {
	verb, ok := map[string]status.Verbosity{"quiet": status.Quiet, "verbose": status.Verbose, "debug": status.Debug}[c.String("verbosity")]
	if !ok {
		return nil, exitf(exitUsage, "slack: --verbosity is quiet, verbose or debug")
	}
	if c.String("bot-token") == "" {
		return nil, exitf(exitUsage, "slack: set SLACK_BOT_TOKEN (and SLACK_APP_TOKEN for Socket Mode, or SLACK_SIGNING_SECRET for the Events API)")
	}
	if c.String("app-token") == "" && c.String("signing-secret") == "" {
		return nil, exitf(exitUsage, "slack: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (Events API)")
	}
	return &slackOptions{listen: c.String("slack-listen"), cfg: dispatch.Config{
		BotToken: c.String("bot-token"), AppToken: c.String("app-token"), SigningSecret: c.String("signing-secret"),
		APIURL: c.String("api-url"), ProgDir: c.String("progs"), BaseURL: c.String("base-url"),
		Verbosity: verb, Limit: c.Uint64("limit"),
	}}, nil
}

// startSlack checks the Slack set-up (the tokens, their type and scopes)
// and starts the dispatcher on e until ctx ends. A set-up that cannot work
// until a person fixes it is returned as a usage error (exit 2) saying
// what to fix, before anything of Slack starts; wait waits for the
// dispatcher to stop and its last card frames to go.
// holdSlack waits, on a store shared by hosts, until this host runs the
// cluster's one Slack dispatcher (the role "slack": host.HoldRole), and
// returns a context that ends when it no longer does; nil once ctx ended.
// Two dispatchers would each take up the runs the last one left, and
// answer each event twice.
func holdSlack(ctx context.Context, e *host.Engine, log *slog.Logger) (context.Context, error) {
	if e.Store.Shared() {
		if h, err := e.RoleHolder("slack"); err == nil && h != "" && h != e.Host() {
			log.Info("slack: host "+h+" runs the cluster's dispatcher; this host takes over if it goes", "host", e.Host())
		}
	}
	held, err := e.HoldRole(ctx, "slack")
	if ctx.Err() != nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if e.Store.Shared() {
		log.Info("slack: this host runs the cluster's dispatcher", "host", e.Host())
	}
	return held, nil
}

func startSlack(ctx context.Context, o *slackOptions, e *host.Engine, log *slog.Logger, m *metrics.Metrics, link func(inv string) (string, error)) (wait func(), err error) {
	cfg := o.cfg
	cfg.Link = link
	cfg.Log = log.With("part", "slack")
	d := dispatch.New(cfg, e)
	if err := d.Check(ctx); err != nil {
		return nil, exitf(exitUsage, "%v", err)
	}
	var run func() error
	if cfg.AppToken != "" {
		run = func() error {
			held, err := holdSlack(ctx, e, log)
			if err != nil || held == nil {
				return err
			}
			log.Info("slack: connecting over Socket Mode")
			return d.RunSocketMode(held)
		}
	} else {
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return nil, exitf(exitUsage, "slack: the Events API cannot listen on --slack-listen %s: %v", o.listen, err)
		}
		h, err := d.EventsHandler(ctx)
		if err != nil {
			ln.Close()
			return nil, exitf(exitUsage, "%v", err)
		}
		// Until this host runs the dispatcher it answers 503: Slack (or a
		// balancer before the hosts) tries again, and reaches the one that
		// does, rather than wait on a port that accepts and never answers.
		var live atomic.Pointer[http.Handler]
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := live.Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, "this host stands by: another host runs the cluster's Slack dispatcher", http.StatusServiceUnavailable)
		})}
		go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		log.Info("slack: serving the Events API: its Request URL is https://THIS-HOST/slack/events (any path)", "listen", ln.Addr().String())
		run = func() error {
			held, err := holdSlack(ctx, e, log)
			if err != nil || held == nil {
				srv.Shutdown(context.Background())
				<-served
				return err
			}
			live.Store(&h)
			go func() { <-held.Done(); srv.Shutdown(context.Background()) }()
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
	}
	cs := d.Cards()
	m.SetSlack(func() (int64, int64, int64) {
		return cs.Edits.Load(), cs.DroppedProgress.Load(), cs.RefusedTerminal.Load()
	})
	done := make(chan error, 1)
	go func() { done <- run() }()
	return func() {
		err := <-done
		d.Wait()
		d.Drain(5 * time.Second) // terminal frames funded but not yet sent
		log.Info(fmt.Sprintf("slack: stopped; %d card edits, %d progress frames dropped, %d terminal frames refused",
			cs.Edits.Load(), cs.DroppedProgress.Load(), cs.RefusedTerminal.Load()))
		if err != nil {
			log.Error("slack: the dispatcher stopped early", "err", err)
		}
	}, nil
}
