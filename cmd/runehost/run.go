// run.go holds `runehost run`: run a prog to its end, printing its events.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/guest/syntax"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm"
)

// defaultLimit is a run's step limit unless --limit says otherwise.
const defaultLimit = 10_000_000

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a prog and print its events and result",
		ArgsUsage: "FILE",
		Description: "Admits FILE as the prog named after it (or --name) and runs it in slices\n" +
			"of steps inside the WebAssembly sandbox, durably in the store: its state\n" +
			"is the result of its last completed run. A name is bound to the file that\n" +
			"first ran under it: another file under the same name is refused unless\n" +
			"--replace, so two progs never share state or grants by accident. Prints\n" +
			"what it emits and its acts to stderr and its result as JSON to stdout; a\n" +
			"long run on a terminal shows a progress line below them (--quiet: none).\n" +
			"Exit status: 0 done, 1 the prog failed (or its result conflicted), 2 bad\n" +
			"usage or a compile error, 3 a host failure, 4 the run waits (for an\n" +
			"event, or an act of unknown outcome), 130 stopped by Ctrl-C.\n\n" +
			"Acts are denied unless granted (runehost grant); a denial is an error of\n" +
			"kind \"denied\" that the prog may catch, and names the grant it needed.\n" +
			"Before it runs, the prog's act tags are checked against the grants and\n" +
			"each one missing is reported; --strict-grants refuses to run it then.\n" +
			"--no-store runs without the store and denies every act.\n\n" +
			"--limit bounds the run's steps, --tokens what its model calls may spend\n" +
			"(200,000 tokens unless given; 0: none): a call that would exceed what is\n" +
			"left is an error of kind \"limit\" before anything is sent.\n\n" +
			"Ctrl-C stops the run at its next slice with its checkpoint stored and\n" +
			"prints the runehost resume that goes on with it; a second Ctrl-C exits at\n" +
			"once (an act in flight then has no outcome, and the next command says what\n" +
			"resume will do with it). While runehost serve owns the store, the run goes\n" +
			"to it and its events are streamed from it; Ctrl-C then detaches, leaving\n" +
			"the run going on in the server (runehost events --follow INVOCATION\n" +
			"follows it again). --native and --cache-dir are then the server's.\n\n" +
			"The running machine's checkpoint is stored at every act and await, at the\n" +
			"end, and every 2 s or 10,000,000 steps between (RUNEHOST_CHECKPOINT_EVERY,\n" +
			"RUNEHOST_CHECKPOINT_STEPS): a crash re-runs at most that much pure work.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "input", Value: "null", Usage: "the prog's input, as JSON; @FILE reads it from FILE, - from stdin (up to 16 MiB)"},
			&cli.StringFlag{Name: "state", Value: "null", Usage: "the prog's state, as JSON (with --no-store; otherwise the stored state)"},
			&cli.StringFlag{Name: "name", Usage: "the prog's name: its state and grants are the name's", DefaultText: "the file's base name"},
			&cli.BoolFlag{Name: "replace", Usage: "make FILE the prog --name names, though another file is bound to the name (its state and grants stay)"},
			&cli.BoolFlag{Name: "no-store", Usage: "run without the store: nothing is kept"},
			&cli.BoolFlag{Name: "strict-grants", Usage: "refuse to run a prog whose acts are not all granted"},
			storeFlag(),
			&cli.Uint64Flag{Name: "limit", Value: defaultLimit, Usage: "step limit of the run"},
			&cli.Uint64Flag{Name: "tokens", Value: host.DefaultTokens, Usage: "model-token limit of the run: what its model calls may spend (0: no model calls)"},
			&cli.Uint64Flag{Name: "slice", Value: port.DefaultSlice, Usage: "steps per slice: the grain of metering and of events; a crossing into the sandbox runs as many as fit in a few milliseconds (a server's own when one owns the store)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of random()", DefaultText: "from the clock"},
			eventBytesFlag(),
			nativeFlag(),
			cacheFlag(),
			quietFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(exitUsage, "run: want exactly one FILE (usage: runehost run FILE [--input JSON])")
			}
			src, err := readProg(c.Args().First())
			if err != nil {
				return exitf(exitUsage, "run: %v", err)
			}
			input, err := inputJSON(c)
			if err != nil {
				return err
			}
			in, err := jsonValue("input", input)
			if err != nil {
				return err
			}
			state, err := jsonFlag(c, "state")
			if err != nil {
				return err
			}
			if err := positive(c, "run", "limit", "slice"); err != nil {
				return err
			}
			seed := c.Uint64("seed")
			if !c.IsSet("seed") {
				seed = uint64(nowMillis())
			}
			file := c.Args().First()
			if !c.Bool("no-store") {
				if c.IsSet("state") {
					return exitf(exitUsage, "run: --state goes with --no-store; a stored prog's state is the result of its last run")
				}
				return runStored(c, file, src, input, seed)
			}
			rt, done, err := runtimeFor(c)
			if err != nil {
				return err
			}
			defer done()
			r := &runner{rt: rt, out: c.App.Writer, events: c.App.ErrWriter, file: c.Args().First()}
			if r.p = startProgress(c); r.p != nil {
				r.events = r.p
				defer r.p.Stop()
			}
			return r.run(c.Context, port.Input{Source: src, Input: in, State: state, Limit: c.Uint64("limit"), Seed: seed}, c.Uint64("slice"))
		},
	}
}

// runStored admits the prog into the store, or the server that owns it,
// and goes on with it. The act tags no grant covers are reported first;
// with --strict-grants the prog is refused then.
func runStored(c *cli.Context, file string, src, input []byte, seed uint64) error {
	prog := c.String("name")
	if prog == "" {
		prog = progName(file)
	}
	path, err := sourcePath(file)
	if err != nil {
		return exitf(exitUsage, "run: %v", err)
	}
	b, err := openBackend(c, true)
	if err != nil {
		return err
	}
	defer b.Close()
	tokens := c.Uint64("tokens")
	resp, err := b.Run(c.Context, api.RunRequest{Prog: prog, Source: string(src), Path: path, Replace: c.Bool("replace"),
		Input: json.RawMessage(input), Limit: c.Uint64("limit"), Tokens: &tokens, Seed: &seed, StrictGrants: c.Bool("strict-grants")})
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.Code == api.CodeCompile:
		return exitf(exitUsage, "%s", compileMessage(file, ae.Message))
	case errors.As(err, &ae) && ae.Bound != "":
		other := otherName(path, prog)
		return exitf(exitUsage, "run: %s\n\t%s   runs it as a prog of its own\n\t%s   makes it the prog %s, keeping %s's state and grants",
			ae.Message, hintArgs(c, "run", "--name", other, file), hintArgs(c, "run", "--name", prog, "--replace", file), prog, prog)
	case errors.As(err, &ae) && ae.Code == api.CodeRefused:
		missingGrants(c.App.ErrWriter, prog, ae.Missing, ae.GrantHints, false)
		return exitf(exitUsage, "%s", ae.Message)
	case err != nil:
		return failed("run", err, exitInternal)
	}
	missingGrants(c.App.ErrWriter, prog, resp.Missing, resp.GrantHints, true)
	fmt.Fprintf(c.App.ErrWriter, "invocation %s\n", resp.Invocation)
	if l, ok := b.(*local); ok {
		stopped(c, l, prog, resp.Invocation)
	}
	return drive(c, b, "run", resp.Invocation, file, resp.Cursor, exitInternal)
}

// stopped points out earlier runs of prog that an interrupt or a crash
// stopped: with no server, nothing goes on with them until resumed.
func stopped(c *cli.Context, l *local, prog, except string) {
	ids, err := l.s.E.Runnable(prog)
	if err != nil {
		return
	}
	for _, id := range ids {
		if id != except {
			fmt.Fprintf(c.App.ErrWriter, "note: %s, an earlier run of %s, was stopped before it ended (%s)\n", id, prog, hintArgs(c, "resume", id))
		}
	}
}

// missingGrants reports act tags no grant covers, with how to grant each;
// when the run goes on (runs), a denial will name a target's exact grant.
func missingGrants(w io.Writer, prog string, tags, hints []string, runs bool) {
	for i, tag := range tags {
		hint := ""
		if i < len(hints) && hints[i] != "" {
			hint = hints[i]
			if runs && strings.HasPrefix(hint, "its grant names a target") {
				hint += "; a denial names the one it needs"
			}
			hint = " (" + hint + ")"
		}
		fmt.Fprintf(w, "grants: %s has no grant for act %s; it will be denied%s\n", prog, tag, hint)
	}
}

func nativeFlag() cli.Flag {
	return &cli.BoolFlag{Name: "native", Usage: "run the machine in this process instead of the WebAssembly sandbox (for debugging)"}
}

// eventBytesFlag is the cap on the bytes of events one run stores
// (host.Bounds.Events): past it the run fails with a limit error.
func eventBytesFlag() cli.Flag {
	return &cli.StringFlag{Name: "event-bytes", Usage: "the most bytes of events one run may store (such as 64MiB; 0: no cap); past it the run fails with a limit error", DefaultText: "64MiB", EnvVars: []string{"RUNEHOST_EVENT_BYTES"}}
}

// eventBytes is --event-bytes, or RUNEHOST_EVENT_BYTES for a command
// without the flag, or the default cap.
func eventBytes(c *cli.Context) (int64, error) {
	v, name := c.String("event-bytes"), "--event-bytes (or RUNEHOST_EVENT_BYTES)"
	if v == "" {
		v, name = os.Getenv("RUNEHOST_EVENT_BYTES"), "RUNEHOST_EVENT_BYTES"
	}
	if v == "" {
		return host.DefaultBounds.Events, nil
	}
	n, err := parseBytes(v)
	if err != nil {
		return 0, exitf(exitUsage, "%s=%q: %v", name, v, err)
	}
	return int64(n), nil
}

func cacheFlag() cli.Flag {
	return &cli.StringFlag{Name: "cache-dir", Usage: "the sandbox's compilation cache (\"off\" to disable)", DefaultText: "the user cache directory", EnvVars: []string{"RUNEHOST_CACHE_DIR"}}
}

// sandboxMemoryPages bounds the sandbox's memory (0: wasmvm's default);
// tests lower it to run out of memory quickly.
var sandboxMemoryPages uint32

// runtimeFor picks the sandbox, or the native machine with --native.
func runtimeFor(c *cli.Context) (port.RuntimePort, func(), error) {
	if c.Bool("native") {
		return port.NewNative(), func() {}, nil
	}
	rt, err := wasmvm.New(c.Context, wasmvm.Config{CacheDir: c.String("cache-dir"), PoolSize: 1, MemoryLimitPages: sandboxMemoryPages})
	if err != nil {
		return nil, nil, exitf(exitInternal, "run: starting the sandbox: %v", err)
	}
	return rt, func() { rt.Close(context.Background()) }, nil
}

// progName names a prog after its file: testdata/progs/hello.rune is hello.
func progName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}

// sourcePath is the file a prog is bound to: absolute, symlinks resolved,
// so that a link and its target are one prog.
func sourcePath(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// otherName is a name for the prog at path when prog is another file's:
// its directory's name before it (other/hi.rune is other-hi).
func otherName(path, prog string) string {
	dir := filepath.Base(filepath.Dir(path))
	if dir == "" || dir == "/" || dir == "." {
		return prog + "-2"
	}
	return dir + "-" + prog
}

func jsonFlag(c *cli.Context, name string) ([]byte, error) {
	return jsonValue(name, []byte(c.String(name)))
}

// jsonValue checks the JSON of flag name as the machine takes it (nesting,
// sizes), before anything is admitted, and encodes it.
func jsonValue(name string, text []byte) ([]byte, error) {
	if n := jsonDepth(text); n > machine.MaxDepth {
		return nil, exitf(exitUsage, "run: --%s: nested %d deep, more than the machine's %d", name, n, machine.MaxDepth)
	}
	d, err := checkpoint.DataFromJSON(text)
	if err == nil {
		err = machine.CheckData(d)
	}
	if err != nil {
		return nil, exitf(exitUsage, "run: --%s: %v", name, err)
	}
	b, err := checkpoint.EncodeData(d)
	if err != nil {
		return nil, exitf(exitUsage, "run: --%s: %v", name, err)
	}
	return b, nil
}

// jsonDepth is the deepest nesting of lists and maps in JSON text.
func jsonDepth(text []byte) int {
	depth, deepest, str, esc := 0, 0, false, false
	for _, c := range text {
		switch {
		case esc:
			esc = false
		case str:
			esc, str = c == '\\', c != '"'
		case c == '"':
			str = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// maxInput is the largest input, as JSON.
const maxInput = 16 << 20

// inputJSON is --input's JSON: the flag's value, or @FILE's content, or
// stdin's for -. An argument list cannot carry a large input; a file can.
func inputJSON(c *cli.Context) ([]byte, error) {
	v := c.String("input")
	var r io.Reader
	switch {
	case v == "-":
		r = os.Stdin
		if c.App.Reader != nil {
			r = c.App.Reader
		}
	case strings.HasPrefix(v, "@"):
		f, err := os.Open(v[1:])
		if err != nil {
			return nil, exitf(exitUsage, "run: --input: %v", err)
		}
		defer f.Close()
		r = f
	default:
		return []byte(v), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, exitf(exitUsage, "run: --input %s: %v", v, err)
	}
	if len(b) > maxInput {
		return nil, exitf(exitUsage, "run: --input %s: over %d bytes", v, maxInput)
	}
	return b, nil
}

type runner struct {
	rt          port.RuntimePort
	out, events io.Writer
	file        string
	p           *progress // the progress line, on a terminal
}

func (r *runner) run(ctx context.Context, in port.Input, slice uint64) error {
	in.Invocation = "run"
	cp, err := r.rt.Start(ctx, in)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return exitf(exitUsage, "%s", compileMessage(r.file, err.Error()))
		}
		return exitf(exitUsage, "run: %v", err)
	}
	last := cp
	var reply []byte
	var used uint64
	var pace host.Pacer // many slices a crossing, as the engine runs them
	for {
		// Lazy: nothing is kept, so no checkpoint is wanted at a Yield; the
		// machine stays live in the runtime between slices.
		req := port.Request{Checkpoint: cp, Reply: reply, Slice: slice, Clock: nowMillis(), Lazy: true, Slices: pace.Slices()}
		if cp == nil {
			req.Invocation = "run"
		}
		t0 := time.Now()
		res, err := r.rt.Step(ctx, req)
		if err == nil {
			pace.Took(req.Slices, time.Since(t0), res.Kind == port.Yield && res.Checkpoint == nil)
		}
		if errors.Is(err, port.ErrExpired) && cp == nil {
			cp = last // the runtime let the machine go: run again from its last checkpoint
			continue
		}
		if err != nil {
			return exitf(exitInternal, "run: %v", err)
		}
		if res.Checkpoint != nil {
			cp, last = res.Checkpoint, res.Checkpoint
		} else if res.Kind != port.Yield {
			return exitf(exitInternal, "run: a %s without a checkpoint", res.Kind)
		} else {
			cp = nil
		}
		if r.p != nil && res.Used > used { // a machine the runtime let go runs again from its checkpoint
			r.p.slice(res.Used - used)
		}
		used = res.Used
		reply = nil
		for _, e := range res.Emits {
			fmt.Fprintf(r.events, "emit %s %s\n", e.Kind, dataJSON(e.Data))
		}
		switch res.Kind {
		case port.Yield:
		case port.Act, port.Event:
			what := "act " + res.Tag
			if res.Kind == port.Event {
				what = "await"
			}
			fmt.Fprintf(r.events, "%s %s: denied (--no-store runs no acts and awaits)\n", what, dataJSON(res.Args))
			reply, err = checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "denied", Msg: what + " is not available with --no-store, which runs pure computation only: run it without --no-store (and grant what it does)"}})
			if err != nil {
				return exitf(exitInternal, "run: %v", err)
			}
		case port.Done:
			fmt.Fprintln(r.out, dataJSON(res.Result))
			fmt.Fprintf(r.events, "done in %d steps\n", res.Used)
			return nil
		case port.Error:
			fmt.Fprintf(r.events, "failed after %d steps\n", res.Used)
			for _, t := range res.Err.Trace {
				fmt.Fprintf(r.events, "\tat %s\n", frameIn(r.file, t))
			}
			return exitf(exitFailed, "%s", compileMessage(r.file, res.Err.Error()))
		}
	}
}

func dataJSON(b []byte) string {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	j, err := checkpoint.DataToJSON(d)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(j)
}
