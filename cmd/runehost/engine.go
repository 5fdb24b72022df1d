// engine.go holds what the store-backed commands share: the --store flag,
// opening the store and the engine, and printing where a run stands.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
)

// exitWaiting is the exit status of a run that stopped to wait.
const exitWaiting = 4

func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", Usage: "the store directory", DefaultText: "runehost/store under the user's data directory", EnvVars: []string{"RUNEHOST_STORE"}}
}

// openEngine opens the store and starts an engine on it, reporting acts that
// an earlier process left without an outcome. A command that runs no prog
// passes runs false and gets the native machine, which costs nothing to start.
func openEngine(c *cli.Context, runs bool) (*host.Engine, func(), error) {
	opts, err := storeOptions(c.String("store"))
	if err != nil {
		return nil, nil, err
	}
	if err := storeExists(c); err != nil {
		return nil, nil, err
	}
	runtime := func() (port.RuntimePort, func(), error) { return port.NewNative(), func() {}, nil }
	if runs {
		runtime = startRuntime(c)
	}
	s, err := opts.open()
	if err != nil {
		if _, closeRT, rerr := runtime(); rerr == nil {
			closeRT()
		}
		return nil, nil, openErr(err)
	}
	rt, closeRT, err := runtime()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	if err := claimFromEnv(); err != nil {
		closeRT()
		s.Close()
		return nil, nil, err
	}
	e, unknown, err := host.Open(s, rt, nowMillis)
	if err != nil {
		closeRT()
		s.Close()
		return nil, nil, exitf(exitInternal, "%v", err)
	}
	if e.Cadence, err = cadenceFromEnv(); err != nil {
		closeRT()
		s.Close()
		return nil, nil, exitf(exitUsage, "%v", err)
	}
	if c.IsSet("slice") {
		e.Slice = c.Uint64("slice")
	}
	if e.Bounds.Events, err = eventBytes(c); err != nil {
		closeRT()
		s.Close()
		return nil, nil, err
	}
	cfg := acts.FromEnv()
	if c.IsSet("cache-dir") {
		cfg.CacheDir = c.String("cache-dir")
	}
	closeActs := acts.Register(e, cfg)
	testAdapters(e)
	for _, op := range unknown {
		fmt.Fprintln(c.App.ErrWriter, recovery(c.Context, e, op, func(args ...string) string { return hintArgs(c, args...) }))
	}
	e.Redactor = redact.New(cfg.Secrets()...)
	w, color := c.App.ErrWriter, isTerminal(c.App.ErrWriter)
	e.OnWaitHost = func(msg string) { fmt.Fprintln(w, msg) } // a command on a shared store, waiting out a dead host
	e.OnEvent = func(ev events.Event) {
		if !events.Quiet(&ev) {
			fmt.Fprintf(w, "%s %s\n", ev.Run, events.Line(&ev, color))
		}
	}
	return e, func() {
		// Live machines between turns are checkpointed before the store
		// closes: a command that stops loses no work.
		if err := e.Park(context.Background()); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "runehost: parking live runs: %v\n", err)
		}
		if err := e.StopClaims(); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "runehost: giving up the trees this command drove: %v\n", err)
		}
		closeActs()
		closeRT()
		s.Close()
	}, nil
}

// recovery says what resume will do with an act an earlier process left
// attempted with no outcome (a crash, or a second Ctrl-C).
// hint makes the commands it suggests.
func recovery(ctx context.Context, e *host.Engine, op *host.Operation, hint func(args ...string) string) string {
	redo, found, why := e.Recovery(ctx, op)
	inv, n := op.Invocation, strconv.FormatUint(op.Ordinal, 10)
	resume := hint("resume", inv)
	switch {
	case redo:
		return fmt.Sprintf("cut short: act %s (#%s of %s) was attempted and has no outcome; doing it again has the same effect, so %s will do it again", op.Tag, n, inv, resume)
	case found:
		return fmt.Sprintf("cut short: act %s (#%s of %s) was attempted and has no recorded outcome; its effect was found, so %s will take it without doing it again", op.Tag, n, inv, resume)
	}
	return fmt.Sprintf("unknown: act %s (#%s of %s) was attempted and may or may not have taken effect (%s); it will not be done again: say how it ended (%s if it did, with its reply as JSON, or %s if it did not)",
		op.Tag, n, inv, why, hint("resolve", inv, n, "--outcome", "JSON"), hint("resolve", inv, n, "--error", "KIND:MSG"))
}

// cadenceFromEnv reads how often a running prog's checkpoint is stored:
// RUNEHOST_CHECKPOINT_EVERY (a duration, 2s by default) and
// RUNEHOST_CHECKPOINT_STEPS (10,000,000 by default; 1 stores one at
// every slice).
// makesStore are the commands that make a store where there is none: the
// others, given a directory with no store (a mistyped --store), say so
// rather than leave an empty store behind.
var makesStore = map[string]bool{"run": true, "grant": true, "serve": true, "slack": true, "mcp": true}

func storeExists(c *cli.Context) error {
	if makesStore[c.Command.Name] || os.Getenv("RUNEHOST_NATS") != "" { // the records are on the NATS servers
		return nil
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return exitf(exitUsage, "%s: no store at %s: nothing has run there (runehost run makes one; --store or RUNEHOST_STORE names another)", c.Command.FullName(), dir)
	}
	return nil
}

func cadenceFromEnv() (host.Cadence, error) {
	var c host.Cadence
	if v := os.Getenv("RUNEHOST_CHECKPOINT_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("RUNEHOST_CHECKPOINT_EVERY=%q: want a positive duration, such as 2s or 500ms", v)
		}
		c.Every = d
	}
	if v := os.Getenv("RUNEHOST_CHECKPOINT_STEPS"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return c, fmt.Errorf("RUNEHOST_CHECKPOINT_STEPS=%q: want a positive number of steps", v)
		}
		c.Steps = n
	}
	return c, nil
}

// startRuntime starts the sandbox in the background and returns a function
// that waits for it. Reading the compiled guest from the cache (wazero
// decodes and validates all of it) and instantiating its first instance
// are most of a short run's start, and need nothing of the store, which
// opens meanwhile.
func startRuntime(c *cli.Context) func() (port.RuntimePort, func(), error) {
	if rt, ok := c.Context.Value(sharedRuntime{}).(port.RuntimePort); ok && !c.Bool("native") {
		return func() (port.RuntimePort, func(), error) { return rt, func() {}, nil }
	}
	type started struct {
		rt    port.RuntimePort
		close func()
		err   error
	}
	ch := make(chan started, 1)
	go func() {
		rt, closeRT, err := runtimeFor(c)
		if w, ok := rt.(interface {
			Warm(context.Context, int) error
		}); ok && err == nil {
			_ = w.Warm(c.Context, 1) // a failure shows again, in context, at the first call
		}
		ch <- started{rt, closeRT, err}
	}()
	return func() (port.RuntimePort, func(), error) {
		s := <-ch
		return s.rt, s.close, s.err
	}
}

// sharedRuntime is the context key of a sandbox that outlives the engines
// a long command opens one after another (runehost mcp opens one a call):
// starting the sandbox is most of a short run's time.
type sharedRuntime struct{}

// withSharedRuntime gives c's later engines one sandbox, started now; the
// func returned closes it.
func withSharedRuntime(c *cli.Context) (func(), error) {
	if c.Bool("native") {
		return func() {}, nil
	}
	rt, closeRT, err := startRuntime(c)()
	if err != nil {
		return nil, err
	}
	c.Context = context.WithValue(c.Context, sharedRuntime{}, rt)
	return closeRT, nil
}

// report prints where a run stands and returns the command's outcome.
func report(c *cli.Context, inv, file string, rs *api.RunState) error {
	out, events := c.App.Writer, c.App.ErrWriter
	switch rs.Status {
	case "completed":
		fmt.Fprintln(out, resultText(rs))
		fmt.Fprintf(events, "done: %s completed\n", inv)
		return nil
	case "conflict":
		fmt.Fprintln(out, resultText(rs))
		return exitf(exitFailed, "%s: conflict: the prog's state moved on while it ran; its result is kept, not published", inv)
	case "failed":
		text := ""
		if rs.Error != nil {
			text = rs.Error.Text
			fmt.Fprintf(events, "failed: %s\n", inv)
			for _, t := range rs.Error.Trace { // the Rune backtrace, innermost first
				fmt.Fprintf(events, "\tat %s\n", redact.String(frameIn(file, t)))
			}
		}
		return exitf(exitFailed, "%s", compileMessage(file, redact.String(text)))
	case "waiting":
		if a := rs.Unknown; a != nil {
			n := strconv.FormatUint(a.Ordinal, 10)
			fmt.Fprintf(events, "waiting: %s waits for the outcome of act %s (#%s), which may or may not have taken effect; it will not be done again: say how it ended (%s if it did, with its reply as JSON, or %s if it did not)\n",
				inv, a.Tag, n, hintArgs(c, "resolve", inv, n, "--outcome", "JSON"), hintArgs(c, "resolve", inv, n, "--error", "KIND:MSG"))
			return &exitError{code: exitWaiting, err: fmt.Errorf("%s is waiting", inv)}
		}
		tag := "TAG"
		if len(rs.Awaits) == 1 {
			tag = rs.Awaits[0]
		}
		until := ""
		if rs.Deadline != 0 {
			until = ", until " + time.UnixMilli(rs.Deadline).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(events, "waiting: %s waits for %s%s (%s, or %s)\n", inv, rs.Waiting, until, hintArgs(c, "send", inv, tag, "JSON"), hintArgs(c, "resume", inv))
		return &exitError{code: exitWaiting, err: fmt.Errorf("%s is waiting", inv)}
	case "joining":
		fmt.Fprintf(events, "joining: %s has returned and waits for %s to settle (%s, or %s)\n", inv, rs.Waiting, hintArgs(c, "ps"), hintArgs(c, "resume", inv))
		return &exitError{code: exitWaiting, err: fmt.Errorf("%s is joining", inv)}
	}
	fmt.Fprintf(events, "%s is %s\n", inv, rs.Status)
	return nil
}

// frameIn names the file of a backtrace frame in the main file ("div at
// 2:12" from prog.rune is "div at prog.rune:2:12"); an import's frames name
// theirs already.
func frameIn(file, frame string) string {
	fn, pos, ok := strings.Cut(frame, " at ")
	if !ok || !strings.HasSuffix(file, ".rune") || strings.Contains(pos, ".rune:") || strings.TrimLeft(pos, "0123456789:") != "" {
		return frame
	}
	return fn + " at " + file + ":" + pos
}

// resultText is a run's result as JSON text.
func resultText(rs *api.RunState) string {
	if len(rs.Result) == 0 {
		return "null"
	}
	return string(rs.Result)
}

// isTerminal reports whether w is a terminal that takes colour: colour goes
// only there.
func isTerminal(w io.Writer) bool {
	return isTTY(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	if p, ok := w.(*progress); ok {
		w = p.w
	}
	f, ok := w.(*os.File)
	return ok && isTTYFile(f)
}
