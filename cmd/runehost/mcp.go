// mcp.go holds `runehost mcp`: an MCP server on stdio serving the WASI tools
// granted to a prog and named progs as MCP tools (the calls: mcp_call.go).

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// mcpSubject is whose grants name the WASI tools served, by default: a
// subject of its own, so an MCP client gets only what was granted to it.
const mcpSubject = "mcp"

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve granted WASI tools and named progs to an MCP client over stdio",
		Description: "Speaks the Model Context Protocol on stdin and stdout, so that an MCP\n" +
			"client (Claude Desktop, Cursor, an agent) can run untrusted code in the\n" +
			"sandbox. Stdout carries nothing but MCP frames; events and logs go to\n" +
			"stderr. See docs/mcp.md.\n\n" +
			"Each tool the prog --prog (mcp by default) is granted (runehost grant\n" +
			"--prog mcp tool.run:wc) and that is installed in RUNEHOST_TOOLS is an MCP\n" +
			"tool taking {args: [STR], stdin: STR} and giving the tool's exit code,\n" +
			"stdout and stderr (an error when it exits non-zero). It runs as tool.run\n" +
			"does, with that prog's mounts, environment and fuel; grants are read at\n" +
			"each call, so a revoke denies the next one.\n\n" +
			"Each prog named by --prog-file [NAME=]FILE (the file read at each call)\n" +
			"or --stored-prog NAME (a prog already in the store, by the file or the\n" +
			"source it is bound to) is an MCP tool taking {input: ANY}. A call is a\n" +
			"durable invocation of the prog, as runehost run makes, driven to its end:\n" +
			"its result comes back as text and as structured content. A run that fails,\n" +
			"waits (an await, or an act of unknown outcome) or is stopped comes back as\n" +
			"an error naming its invocation and the runehost send, resolve or resume\n" +
			"that goes on with it.\n\n" +
			"The store is opened for each call and let go after it, so other commands\n" +
			"can use it between calls; calls run one at a time. While runehost serve\n" +
			"owns the store, calls go to it (and --stored-prog is refused: name the\n" +
			"file).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "prog", Value: mcpSubject, Usage: "serve the WASI tools the prog `NAME` is granted (its own grants, its scope's and those for every prog)"},
			&cli.StringSliceFlag{Name: "prog-file", Usage: "serve a prog: `[NAME=]FILE`, NAME the file's base name by default (repeat)"},
			&cli.StringSliceFlag{Name: "stored-prog", Usage: "serve the prog `NAME` the store knows (repeat)"},
			&cli.Uint64Flag{Name: "limit", Value: defaultLimit, Usage: "step limit of each prog's run"},
			storeFlag(),
			nativeFlag(),
			cacheFlag(),
		},
		Action: mcpServe,
	}
}

// mcpProg is a prog served as an MCP tool.
type mcpProg struct {
	name   string
	file   string // the file it is read from at each call ("" for a source-bound prog)
	source []byte // a source-bound prog's source
}

// mcpTool is a granted WASI tool served as an MCP tool.
type mcpTool struct {
	name, statement string
}

// mcpHost is the server's state: what it serves and how to reach the store.
type mcpHost struct {
	c       *cli.Context
	subject string
	cfg     acts.Config
	mu      sync.Mutex // one call at a time holds the store
	log     io.Writer
	tools   *toolRunner
}

func mcpServe(c *cli.Context) error {
	if c.NArg() != 0 {
		return exitf(exitUsage, "mcp: takes no arguments (usage: runehost mcp [--prog NAME] [--prog-file [NAME=]FILE]...)")
	}
	if err := positive(c, "mcp", "limit"); err != nil {
		return err
	}
	h := &mcpHost{c: c, subject: c.String("prog"), cfg: acts.FromEnv(), log: c.App.ErrWriter}
	if c.IsSet("cache-dir") {
		h.cfg.CacheDir = c.String("cache-dir")
	}
	h.tools = newToolRunner(h)
	defer h.tools.a.Close(context.Background())
	progs, err := progFiles(c.StringSlice("prog-file"))
	if err != nil {
		return err
	}
	var granted []mcpTool
	var sees string
	err = h.withBackend(false, func(b backend) error {
		granted, err = h.granted(c.Context, b)
		if err == nil {
			sees, err = h.mounts(c.Context, b)
		}
		if err != nil {
			return failed("mcp", err, exitInternal)
		}
		stored, err := storedProgs(b, c.StringSlice("stored-prog"))
		progs = append(progs, stored...)
		return err
	})
	if err != nil {
		return err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "runehost", Version: version}, &mcp.ServerOptions{Instructions: mcpInstructions})
	seen := map[string]string{}
	for _, t := range granted {
		seen[t.name] = "the tool " + t.name
		s.AddTool(&mcp.Tool{
			Name: t.name,
			Description: fmt.Sprintf("Runs the WASI tool %s in runehost's sandbox, seeing only the directories and environment granted to %s%s. "+
				"Gives its exit code, stdout and stderr; an error when it exits non-zero.", t.name, h.subject, sees),
			InputSchema: json.RawMessage(toolSchema),
		}, h.validated(toolResolved, func(ctx context.Context, _ *mcp.CallToolRequest, args json.RawMessage) *mcp.CallToolResult {
			return h.callTool(ctx, t.name, args)
		}))
	}
	for _, p := range progs {
		if err := checkToolName(p.name); err != nil {
			return exitf(exitUsage, "mcp: prog %s: %v; name it for MCP with --prog-file NAME=FILE", p.name, err)
		}
		if other, ok := seen[p.name]; ok {
			return exitf(exitUsage, "mcp: prog %s: %s is already served under that name; name it otherwise with --prog-file NAME=FILE", p.name, other)
		}
		seen[p.name] = "the prog " + p.name
		from := "its stored source"
		if p.file != "" {
			from = p.file
		}
		s.AddTool(&mcp.Tool{
			Name: p.name,
			Description: fmt.Sprintf("Runs the runehost prog %s (%s) durably in the sandbox with its own grants and state, and gives its result. "+
				"A run that fails or waits gives an error naming its invocation.", p.name, from),
			InputSchema: json.RawMessage(progSchema),
		}, h.validated(progResolved, func(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage) *mcp.CallToolResult {
			return h.callProg(ctx, req, p, args)
		}))
	}
	names := slices.Sorted(maps.Keys(seen))
	if len(names) == 0 {
		fmt.Fprintf(h.log, "mcp: serving no tools: %s is granted no installed tool (%s grants one) and no prog is named (--prog-file)\n", h.subject, mcpHint(c, "grant", "--prog", h.subject, tools.Tag+":NAME"))
	} else {
		fmt.Fprintf(h.log, "mcp: serving on stdio: %s\n", strings.Join(names, ", "))
	}
	if _, served, err := findServer(c); len(progs) > 0 && err == nil && !served {
		// The store is opened for each call, the sandbox once: starting
		// it is most of a short prog's call.
		closeRT, err := withSharedRuntime(c)
		if err != nil {
			return err
		}
		defer closeRT()
	}
	return h.serve(s)
}

// serve runs the server until the client closes stdin. Anything else
// written to os.Stdout meanwhile goes to stderr: the frames have it alone.
// The SDK reads stdin through the guard (mcp_frame.go), which answers the
// frames it must not see.
func (h *mcpHost) serve(s *mcp.Server) error {
	c := h.c
	var in io.ReadCloser = os.Stdin
	if c.App.Reader != nil && c.App.Reader != os.Stdin {
		in = io.NopCloser(c.App.Reader)
	}
	out := c.App.Writer
	if f, ok := out.(*os.File); ok && f == os.Stdout {
		saved := os.Stdout
		os.Stdout = os.Stderr
		defer func() { os.Stdout = saved }()
		out = saved
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	w := &frameWriter{w: out}
	go (&mcpGuard{log: h.log, out: w, sdk: pw, done: done}).run(in)
	// The guard bounds each line; the SDK's own bound is off, as the
	// frame rebuilt from a line may be longer.
	err := s.Run(c.Context, &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{w}, MaxLineLength: -1})
	close(done)
	pr.Close() // the guard's next write fails
	in.Close()
	if err == nil || errors.Is(err, io.EOF) || c.Context.Err() != nil {
		return nil
	}
	return exitf(exitInternal, "mcp: %v", err)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// withBackend opens the store, or reaches its server, for one call.
func (h *mcpHost) withBackend(runs bool, f func(backend) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := openBackend(h.c, runs)
	if err != nil {
		return err
	}
	defer b.Close()
	return f(b)
}

// grants are the grants of tag that can allow the subject's acts, as the
// ward reads them (Ward.For): its own, its scope's and every prog's.
func (h *mcpHost) grants(ctx context.Context, b backend, tag string) ([]host.Grant, error) {
	subjects := []string{h.subject, host.AnyProg}
	if scope, _, ok := strings.Cut(h.subject, "/"); ok {
		subjects = append(subjects, scope+"/*")
	}
	var out []host.Grant
	for _, s := range slices.Compact(subjects) {
		gs, err := b.Grants(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			if g.Damage == "" && g.Prog == s && g.Tag == tag {
				out = append(out, host.Grant{Subject: g.Prog, Statement: g.Statement, At: g.Granted})
			}
		}
	}
	return out, nil
}

// granted are the tools the subject is granted and that are installed,
// each once; the others are reported on stderr.
func (h *mcpHost) granted(ctx context.Context, b backend) ([]mcpTool, error) {
	gs, err := h.grants(ctx, b, tools.Tag)
	if err != nil {
		return nil, err
	}
	var out []mcpTool
	for _, g := range gs {
		name, _, _ := strings.Cut(g.Target(), ",")
		switch {
		case name == "" || slices.ContainsFunc(out, func(t mcpTool) bool { return t.name == name }):
			continue
		case checkToolName(name) != nil:
			fmt.Fprintf(h.log, "mcp: not serving %s (%s): %v\n", name, g.Statement, checkToolName(name))
			continue
		}
		if _, err := os.Stat(filepath.Join(h.cfg.ToolDir, name+".wasm")); err != nil {
			fmt.Fprintf(h.log, "mcp: not serving %s: granted to %s but not installed in %s\n", name, g.Subject, h.cfg.ToolDir)
			continue
		}
		out = append(out, mcpTool{name: name, statement: g.Statement})
	}
	return out, nil
}

// mounts says where the tools see the directories granted when the server
// starts (a grant made later shows at the next call, not here).
func (h *mcpHost) mounts(ctx context.Context, b backend) (string, error) {
	var read, write []host.Grant
	var err error
	if read, err = h.grants(ctx, b, fs.Read); err == nil {
		write, err = h.grants(ctx, b, fs.Write)
	}
	var seen []string
	for _, m := range tools.Mounts(read, write) {
		mode := "read-only"
		if m.Write {
			mode = "read-write"
		}
		seen = append(seen, m.Guest+" ("+mode+")")
	}
	if len(seen) == 0 {
		return ": no directory", err
	}
	return ": " + strings.Join(seen, ", "), err
}

// mcpInstructions tell the client what the server is.
const mcpInstructions = "runehost runs untrusted code in a WebAssembly sandbox. Its WASI tools see only what was granted to them. " +
	"Its progs run durably: a prog that waits for an event or fails gives an error naming its invocation, " +
	"which a person goes on with on the command line (runehost send, resume)."

// progFiles reads --prog-file [NAME=]FILE.
func progFiles(specs []string) ([]mcpProg, error) {
	var out []mcpProg
	for _, spec := range specs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok {
			name, file = progName(spec), spec
		}
		if _, err := os.Stat(file); err != nil {
			return nil, exitf(exitUsage, "mcp: --prog-file %s: %v", spec, err)
		}
		path, err := sourcePath(file)
		if err != nil {
			return nil, exitf(exitUsage, "mcp: --prog-file %s: %v", spec, err)
		}
		out = append(out, mcpProg{name: name, file: path})
	}
	return out, nil
}

// storedProgs finds the progs named in the store: by the file each is
// bound to, or by its source when it is bound to one.
func storedProgs(b backend, names []string) ([]mcpProg, error) {
	if len(names) == 0 {
		return nil, nil
	}
	l, ok := b.(*local)
	if !ok {
		return nil, exitf(exitUsage, "mcp: --stored-prog reads the store, which runehost serve owns: name the prog's file with --prog-file NAME=FILE")
	}
	var out []mcpProg
	for _, name := range names {
		var p host.Prog
		var src []byte
		err := l.s.E.Store.View(func(tx *store.Tx) error {
			p, src = host.Prog{}, nil // a View may run again
			found, err := tx.Get(store.K("prog", name), &p)
			if err != nil || !found {
				return err
			}
			if file, ok := strings.CutPrefix(p.Bound, "file:"); ok {
				p.Bound = file
				return nil
			}
			p.Bound = ""
			src, found, err = tx.GetRaw(store.K("src", p.Source))
			if err == nil && !found {
				err = fmt.Errorf("its source %s is not in the store", p.Source)
			}
			return err
		})
		switch {
		case err != nil:
			return nil, exitf(exitInternal, "mcp: --stored-prog %s: %v", name, err)
		case p.Name == "":
			return nil, exitf(exitUsage, "mcp: --stored-prog %s: no such prog in the store (runehost ps lists the runs; --prog-file serves a file)", name)
		}
		out = append(out, mcpProg{name: name, file: p.Bound, source: src})
	}
	return out, nil
}

// checkToolName refuses a name MCP does not allow for a tool.
func checkToolName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("an MCP tool name has 1 to 128 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("an MCP tool name has only letters, digits, _, - and ., not %q", r)
		}
	}
	return nil
}

// The input schemas: a WASI tool's and a prog's.
const (
	toolSchema = `{"type": "object", "properties": {` +
		`"args": {"type": "array", "items": {"type": "string"}, "description": "the tool's arguments (after its name)"}, ` +
		`"stdin": {"type": "string", "description": "the tool's standard input"}}, "additionalProperties": false}`
	progSchema = `{"type": "object", "properties": {` +
		`"input": {"description": "the prog's input: any JSON value (null when left out)"}}, "additionalProperties": false}`
)

var (
	toolResolved = mustResolve(toolSchema)
	progResolved = mustResolve(progSchema)
)

func mustResolve(schema string) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		panic(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic(err)
	}
	return r
}

// validated is a handler that checks a call's arguments against the
// tool's schema first (the SDK's raw AddTool does not): a call that breaks
// it is a tool error the model can read and correct, as the SDK's typed
// tools give.
func (h *mcpHost) validated(schema *jsonschema.Resolved, call func(context.Context, *mcp.CallToolRequest, json.RawMessage) *mcp.CallToolResult) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			return toolError(fmt.Sprintf("arguments: %v", err), nil), nil
		}
		if err := schema.Validate(v); err != nil {
			return toolError(fmt.Sprintf("validating \"arguments\": %v", err), nil), nil
		}
		return call(ctx, req, args), nil
	}
}

// toolError is a call's failure as the model sees it.
func toolError(text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured, IsError: true}
}

// apiText is a backend's error as one line.
func apiText(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}
