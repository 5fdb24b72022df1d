// Command runehost runs Rune progs durably in a sandbox: check and run
// them, keep them in a store, grant their acts, watch their events, and run
// untrusted WASI tools.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/events/redact"
)

// Exit codes (exitWaiting, 4, is in engine.go; exitInterrupted, 130, in
// interrupt.go).
const (
	exitOK       = 0
	exitFailed   = 1 // the prog ended with an uncaught error
	exitUsage    = 2 // bad command line, unreadable file or compile error
	exitInternal = 3 // the host failed
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error // nil: exit quietly (the tool run said it all)
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

func newApp() *cli.App {
	return &cli.App{
		Name:    "runehost",
		Usage:   "run Rune agent programs safely",
		Version: version,
		Description: "runehost compiles and runs progs written in Rune. A prog's machine state\n" +
			"is plain data: it runs in bounded slices of steps and can be checkpointed\n" +
			"at any slice, act or await. See docs/tutorial.md and docs/language.md.\n\n" +
			"Exit status: 0 done, 1 the prog failed, 2 bad usage or input (nothing is\n" +
			"admitted), 3 a host failure, 4 a run waits, 130 stopped by Ctrl-C.",
		Commands:       []*cli.Command{checkCommand(), runCommand(), resumeCommand(), sendCommand(), psCommand(), inspectCommand(), resolveCommand(), cancelCommand(), grantCommand(), revokeCommand(), grantsCommand(), eventsCommand(), linkCommand(), migrateCommand(), gcCommand(), toolCommand(), redactCommand(), slackCommand(), serveCommand(), storeCommand(), mcpCommand(), natsCommand()},
		ExitErrHandler: func(*cli.Context, error) {}, // main reports errors
		// urfave/cli's CommandNotFound returns no error: it is kept for
		// realMain to report.
		CommandNotFound: func(c *cli.Context, name string) {
			c.App.Metadata[notFound] = exitf(exitUsage, "unknown command %q (see runehost help)", name)
		},
		Metadata: map[string]any{},
	}
}

const notFound = "notFound"

// memoryLimit is the Go heap's soft limit unless GOMEMLIMIT says otherwise:
// a command reading 100,000 invocations makes garbage faster than the
// default GC pace collects it, and a host should stay small.
const memoryLimit = 192 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(realMain(os.Args, os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	return realMainContext(context.Background(), args, stdout, stderr)
}

// realMainContext is realMain whose commands end early when ctx does.
func realMainContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp()
	app.Writer, app.ErrWriter = stdout, stderr
	args, err := interspersed(app, args)
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if e, ok := app.Metadata[notFound].(error); ok && err == nil {
		err = e
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code
	}
	// An error can quote an adapter, a tool or a server: redacted like events.
	fmt.Fprintln(stderr, "runehost:", redact.New(acts.FromEnv().Secrets()...).String(err.Error()))
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}
