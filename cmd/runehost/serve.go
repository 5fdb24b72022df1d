// serve.go holds `runehost serve`: one long-running host process that owns
// the store, runs the scheduler continuously and serves the API (and, with
// --slack, the Slack dispatcher) until SIGTERM drains it.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/otlp"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/metrics"
	"github.com/runehost/runehost/server"
	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/store/jetstream"
	"github.com/runehost/runehost/wasmvm"
)

// version is runehost's version, as the API reports it.
const version = "0.13.0"

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "own the store: run progs continuously and serve the API, the run pages and Slack",
		Description: "Runs one host process for the store: the scheduler runs every runnable\n" +
			"invocation, fires await deadlines on time and settles children, and the API\n" +
			"(docs/api.md) is served on the Unix socket serve.sock in the store directory\n" +
			"(mode 0600) and, with --listen, on TCP, where every route but /healthz and\n" +
			"the run pages wants the bearer token in serve.token (or --token-file).\n" +
			"While it runs, every other command on the store goes through it.\n\n" +
			"SIGTERM or SIGINT drains: running slices finish, live machines are\n" +
			"checkpointed, and it exits 0; a second signal exits at once, losing\n" +
			"nothing acknowledged. Logs are text on a terminal, JSON otherwise. With\n" +
			"OTEL_EXPORTER_OTLP_ENDPOINT set, runs export as OpenTelemetry traces.",
		Flags: append([]cli.Flag{
			storeFlag(), nativeFlag(), cacheFlag(), allowWithoutLandlockFlag(),
			&cli.StringFlag{Name: "listen", Usage: "also serve run pages and the API (its bearer token in serve.token) on this TCP address; off for none", DefaultText: defaultListen + " when free", EnvVars: []string{"RUNEHOST_LISTEN"}},
			&cli.StringFlag{Name: "token-file", Usage: "the TCP bearer token's file", DefaultText: "serve.token in the store, made at first start"},
			&cli.StringFlag{Name: "base-url", Usage: "where run pages are reached: BASE/r/TOKEN", DefaultText: "http://LISTEN, or http://127.0.0.1:7233", EnvVars: []string{"RUNEHOST_BASE_URL"}},
			&cli.IntFlag{Name: "workers", Usage: "trees driven at once", DefaultText: "the number of CPUs"},
			&cli.BoolFlag{Name: "slack", Usage: "also run the Slack dispatcher (the flags of runehost slack)"},
		}, append(append(capFlags(), natsFlags()...), slackFlags()...)...),
		Action: func(c *cli.Context) error { return serveAction(c, c.Bool("slack")) },
	}
}

// capFlags are serve's caps, on serve and slack: the event bytes of a
// run, and the live event streams it holds.
func capFlags() []cli.Flag {
	return []cli.Flag{
		eventBytesFlag(),
		&cli.IntFlag{Name: "max-streams", Value: server.DefaultMaxStreams, Usage: "the most live event streams (run pages and followers) the server holds at once; past it a stream is answered 429 with Retry-After"},
		&cli.IntFlag{Name: "max-streams-per-link", Value: server.DefaultMaxStreamsPerLink, Usage: "the most live event streams of one run page's link, and of one run's tree through the API; past it a stream is answered 429 with Retry-After"},
	}
}

// defaultListen is where serve listens on TCP unless --listen says
// otherwise: loopback, so that a link to a run's page opens on this machine.
const defaultListen = "127.0.0.1:7233"

// drainPatience bounds how long a draining serve keeps trying a store
// whose servers do not answer (store.Hurry); a healthy store drains well
// within it.
const drainPatience = 20 * time.Second

// serveOptions is what a serve is started with.
type serveOptions struct {
	store    string
	listen   string // "" or "off": no TCP
	fallback bool   // listen is the default: a busy address is a warning, not a failure
	token    string // the token file
	baseURL  string
	workers  int
	native   bool
	cacheDir string
	slack    *slackOptions // nil: no Slack
	logw     io.Writer
	nats     *jetstream.Config // nil: as RUNEHOST_NATS says (natsOptions)

	eventBytes        int64 // host.Bounds.Events; 0: the default, -1: no cap
	maxStreams        int   // server.Config.MaxStreams; 0: the default
	maxStreamsPerLink int   // server.Config.MaxStreamsPerLink; 0: the default
}

func serveAction(c *cli.Context, withSlack bool) error {
	if c.Bool("allow-tools-without-landlock") {
		os.Setenv(acts.AllowWithoutLandlock, "1") // for every tool runner this process makes
	}
	if withSlack {
		if err := positive(c, "slack", "limit"); err != nil {
			return err
		}
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	o := serveOptions{store: dir, listen: c.String("listen"), token: c.String("token-file"), baseURL: c.String("base-url"),
		workers: c.Int("workers"), native: c.Bool("native"), cacheDir: c.String("cache-dir"), logw: c.App.ErrWriter,
		maxStreams: c.Int("max-streams"), maxStreamsPerLink: c.Int("max-streams-per-link")}
	if !c.IsSet("listen") {
		o.listen, o.fallback = defaultListen, true
	}
	if o.maxStreams <= 0 || o.maxStreamsPerLink <= 0 {
		return exitf(exitUsage, "serve: --max-streams and --max-streams-per-link want a positive number")
	}
	if o.eventBytes, err = eventBytes(c); err != nil {
		return err
	} else if o.eventBytes == 0 {
		o.eventBytes = -1
	}
	if withSlack {
		if o.slack, err = slackOptionsOf(c); err != nil {
			return err
		}
	}
	if o.nats, err = natsOf(c); err != nil {
		return err
	}
	// The first signal drains; a second one exits at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(c.App.ErrWriter, "runehost: second signal: exiting now")
			os.Exit(exitInternal)
		case <-time.After(time.Hour):
		}
	}()
	wait, err := launchServe(ctx, o)
	if err != nil {
		return err
	}
	return wait()
}

// startServe starts a serve of the store dir in this process (tests run
// the CLI against it) and returns once it listens; stop drains it.
func startServe(ctx context.Context, dir string, stderr io.Writer) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	wait, err := launchServe(ctx, serveOptions{store: dir, logw: stderr, cacheDir: os.Getenv("RUNEHOST_CACHE_DIR"), workers: 2})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() error { cancel(); return wait() }, nil
}

// newLogger logs as text on a terminal, as JSON lines otherwise.
func newLogger(w io.Writer) *slog.Logger {
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

// launchServe starts a serve on o.store and returns once it listens; wait
// blocks until ctx ends and the serve has drained, and says how it ended.
func launchServe(ctx context.Context, o serveOptions) (wait func() error, err error) {
	log := newLogger(o.logw)
	if err := claimFromEnv(); err != nil {
		return nil, err
	}
	opts, err := storeOptions(o.store)
	if err != nil {
		return nil, err
	}
	if o.nats != nil {
		opts.nats = o.nats
	}
	if opts.nats != nil { // the records are on NATS; the socket and token stay here, with a note of where the records are
		opts.nats.Note = true
		if err := os.MkdirAll(o.store, 0o700); err != nil {
			return nil, exitf(exitUsage, "serve: %v", err)
		}
	}
	s, err := opts.open()
	if err != nil {
		return nil, openErr(err)
	}
	workers := o.workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	var rt port.RuntimePort = port.NewNative()
	closeRT := func() {}
	var pool func() (busy, idle int)
	if !o.native {
		w, err := wasmvm.New(ctx, wasmvm.Config{CacheDir: o.cacheDir, PoolSize: workers, MemoryLimitPages: sandboxMemoryPages})
		if err != nil {
			s.Close()
			return nil, exitf(exitInternal, "serve: starting the sandbox: %v", err)
		}
		rt, closeRT, pool = w, func() { w.Close(context.Background()) }, w.Pool
	}
	fail := func(err error) (func() error, error) {
		closeRT()
		s.Close()
		return nil, err
	}
	e, unknown, err := host.Open(s, rt, nowMillis)
	if err != nil {
		return fail(exitf(exitInternal, "%v", err))
	}
	if e.Cadence, err = cadenceFromEnv(); err != nil {
		return fail(exitf(exitUsage, "%v", err))
	}
	switch {
	case o.eventBytes < 0:
		e.Bounds.Events = 0
	case o.eventBytes > 0:
		e.Bounds.Events = o.eventBytes
	}
	e.OnRecovered = func(op *host.Operation) { reportUnknown(log, e, op) }
	e.OnWaitHost = func(msg string) { log.Info("waiting for a host", "msg", msg) }
	cfg := acts.FromEnv()
	if o.cacheDir != "" {
		cfg.CacheDir = o.cacheDir
	}
	closeActs := acts.Register(e, cfg)
	testAdapters(e)
	for _, op := range unknown {
		reportUnknown(log, e, op)
	}
	secrets := cfg.Secrets()
	if o.slack != nil {
		secrets = append(secrets, o.slack.secrets()...)
	}
	e.Redactor = redact.New(secrets...)

	m := metrics.New()
	x, err := otlp.New(ctx, otlp.WithServiceVersion(version))
	if err != nil {
		closeActs()
		return fail(exitf(exitUsage, "serve: %v", err))
	}
	e.OnEvent = func(ev events.Event) { m.Event(ev); x.Event(ev) }
	e.OnSlice = func(_ string, steps uint64) { m.Slice(steps) }
	m.SetInvocations(func() (map[string]int, error) {
		invs, err := e.List()
		if err != nil {
			return nil, err
		}
		out := map[string]int{}
		for _, i := range invs {
			out[i.Status.String()]++
		}
		return out, nil
	})
	m.SetStoreBytes(s.Sizes)
	if s.Shared() { // on JetStream: an embedded Badger store makes no requests
		m.SetStoreRequests(func() (uint64, uint64, uint64) { t := s.Trips(); return t.Reads, t.Scans, t.Commits })
	}
	if pool != nil {
		m.SetPool(func() (int, int) { b, i := pool(); return b, b + i })
	}

	loop := &host.Loop{E: e, Workers: workers}
	loop.OnTurn = func(t host.Turn) {
		if t.Err != nil {
			log.Error("turn failed; the invocation is paused", "invocation", t.Invocation, "err", e.Clean(t.Err.Error(), 500))
		} else if t.State != nil && t.State.Status.Terminal() {
			log.Info("ended", "invocation", t.Invocation, "status", t.State.Status.String())
		}
	}
	token, err := server.LoadToken(o.store, o.token)
	if err != nil {
		closeActs()
		return fail(exitf(exitUsage, "serve: the token: %v", err))
	}
	ul, sock, err := server.ListenUnix(o.store)
	if err != nil {
		closeActs()
		return fail(exitf(exitUsage, "serve: %v", err))
	}
	var tl net.Listener
	if o.listen != "" && o.listen != "off" {
		tl, err = net.Listen("tcp", o.listen)
		switch {
		case err != nil && o.fallback:
			log.Warn("run pages are not served: the default address is taken; links to them will not open until serve listens (--listen ADDR)", "listen", o.listen, "err", err.Error())
			tl = nil
		case err != nil:
			ul.Close()
			closeActs()
			return fail(exitf(exitUsage, "serve: %v", err))
		}
	}
	// Links name where pages are served: the base URL given, else the TCP
	// address listened on; with neither, a link has no URL to give.
	base := o.baseURL
	if base == "" && tl != nil {
		base = "http://" + tl.Addr().String()
	}
	lk := links.New(s, nowMillis)
	srv := server.New(server.Config{
		Service: &server.Service{E: e, Loop: loop},
		Links:   lk,
		Metrics: m,
		Token:   token,
		BaseURL: base,
		Log:     log,
		Version: version,

		MaxStreams:        o.maxStreams,
		MaxStreamsPerLink: o.maxStreamsPerLink,
	})
	servers := []*http.Server{{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go servers[0].Serve(ul)
	d := api.Discovery{PID: os.Getpid(), Socket: sock}
	if tl != nil {
		hs := &http.Server{Handler: srv.TCPHandler(), ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		go hs.Serve(tl)
		d.Listen = tl.Addr().String()
	}
	if err := server.WriteDiscovery(o.store, d); err != nil {
		for _, hs := range servers {
			hs.Close()
		}
		closeActs()
		return fail(exitf(exitInternal, "serve: %v", err))
	}
	var slackWait func()
	if o.slack != nil {
		// A card links to its run's live page, by a capability link.
		slackWait, err = startSlack(ctx, o.slack, e, log, m, func(inv string) (string, error) {
			if base == "" {
				return "", nil // no page is served: the card has no link
			}
			token, _, err := lk.Create(inv, 0)
			return strings.TrimSuffix(base, "/") + "/r/" + token, err
		})
		if err != nil { // the set-up cannot work: say what to fix, and stop
			for _, hs := range servers {
				hs.Close()
			}
			server.RemoveDiscovery(o.store, d.PID)
			closeActs()
			return fail(err)
		}
	}
	loopDone := make(chan error, 1)
	go func() { loopDone <- loop.Run(ctx) }()
	log.Info("serving", "store", o.store, "socket", sock, "listen", d.Listen, "workers", workers, "pid", d.PID, "traces", x.Enabled())

	return func() error {
		<-ctx.Done()
		log.Info("draining: running slices finish, live machines are checkpointed")
		s.Hurry(time.Now().Add(drainPatience)) // a cluster that is gone: give up, as a crash would, rather than wait at every write
		srv.Stop()
		// No new requests; those in flight (an admission, say) finish.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, hs := range servers {
			hs.Shutdown(sctx)
		}
		scancel()
		lerr := <-loopDone
		if slackWait != nil {
			slackWait()
		}
		perr := errors.Join(e.Park(context.Background()), e.StopClaims()) // parked, its trees free for the other hosts at once
		server.RemoveDiscovery(o.store, d.PID)
		xctx, xcancel := context.WithTimeout(context.Background(), 5*time.Second)
		x.Shutdown(xctx)
		xcancel()
		closeActs()
		closeRT()
		cerr := s.Close()
		if err := errors.Join(lerr, perr, cerr); err != nil {
			log.Error("stopped with an error", "err", err)
			return exitf(exitInternal, "serve: %v", err)
		}
		log.Info("stopped")
		return nil
	}, nil
}

// reportUnknown logs an act a host process left attempted without an
// outcome, and what its run does about it.
func reportUnknown(log *slog.Logger, e *host.Engine, op *host.Operation) {
	switch redo, found, why := e.Recovery(context.Background(), op); {
	case redo:
		log.Info("act cut short with no outcome: doing it again has the same effect, so its run does it again", "act", op.Tag, "op", op.ID().String())
	case found:
		log.Info("act cut short with no recorded outcome: its effect was found and is taken", "act", op.Tag, "op", op.ID().String())
	default:
		log.Warn("act attempted without an outcome: it may or may not have taken effect and will not be done again; its run waits for runehost resolve", "act", op.Tag, "op", op.ID().String(), "why", why,
			"command", fmt.Sprintf("runehost resolve %s %d --outcome JSON (or --error KIND:MSG)", op.Invocation, op.Ordinal))
	}
}
