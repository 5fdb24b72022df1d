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
	"strings"

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
	app := &cli.App{
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
		// Bare runehost is a usage error: help on stderr, exit 2.
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return exitf(exitUsage, "unknown command %q (see runehost help)", c.Args().First())
			}
			w := c.App.Writer
			c.App.Writer = c.App.ErrWriter
			cli.ShowAppHelp(c)
			c.App.Writer = w
			return &exitError{code: exitUsage}
		},
		OnUsageError: usageError,
	}
	var each func(cmds []*cli.Command)
	each = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = usageError
			each(cmd.Subcommands)
		}
	}
	each(app.Commands)
	return app
}

// usageError is a flag that did not parse as one line on stderr naming the
// help that shows the flags, exit 2; nothing on stdout.
func usageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if flag, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		flag, _, _ = strings.Cut(flag, "=")
		msg = "unknown flag " + flagName(flag)
	} else if before, after, ok := strings.Cut(msg, "for flag -"); ok {
		flag, rest, _ := strings.Cut(after, ":")
		msg = before + "for flag " + flagName(flag) + ":" + rest
	}
	var path []string // the command's names, its parents' first
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != c.App.Name {
			path = append([]string{ctx.Command.Name}, path...)
		}
	}
	if len(path) == 0 {
		return exitf(exitUsage, "%s (see runehost help)", msg)
	}
	name := strings.Join(path, " ")
	return exitf(exitUsage, "%s: %s (see runehost %s --help)", name, msg, name)
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
