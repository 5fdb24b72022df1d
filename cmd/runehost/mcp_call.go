// mcp_call.go holds the calls of `runehost mcp`: a WASI tool run as
// tool.run runs it, and a prog run as a durable invocation.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm/tool"
)

// toolRunner runs the WASI tools of one server: one tools.Adapter (its
// compiled modules kept between calls) given each call's grants by the
// call's id, which stands where a tool.run act has its invocation.
type toolRunner struct {
	a      *tools.Adapter
	n      atomic.Uint64
	grants sync.Map // call id -> map[tag][]host.Grant
}

func newToolRunner(h *mcpHost) *toolRunner {
	r := &toolRunner{}
	r.a = &tools.Adapter{Dir: h.cfg.ToolDir, CacheDir: h.cfg.CacheDir, Places: hostPlaces(h.c), Warm: 1, Keep: tool.WarmTools, WithoutLandlock: h.cfg.ToolsWithoutLandlock,
		// Every call is the subject's.
		Prog: func(string) (string, error) { return h.subject, nil },
		Grants: func(call, tag string) ([]host.Grant, error) {
			gs, _ := r.grants.Load(call)
			m, _ := gs.(map[string][]host.Grant)
			return m[tag], nil
		}}
	return r
}

// callTool runs a granted WASI tool: authorized against the subject's
// tool.run grants read now, with its fs and tool.env grants, as the act is.
func (h *mcpHost) callTool(ctx context.Context, name string, raw json.RawMessage) *mcp.CallToolResult {
	var in struct {
		Args  []string `json:"args"`
		Stdin string   `json:"stdin"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return toolError(fmt.Sprintf("arguments: %v", err), nil)
	}
	gs := map[string][]host.Grant{}
	err := h.withBackend(false, func(b backend) error {
		for _, tag := range []string{tools.Tag, fs.Read, fs.Write, tools.EnvTag} {
			g, err := h.grants(ctx, b, tag)
			if err != nil {
				return err
			}
			gs[tag] = g
		}
		return nil
	})
	if err != nil {
		return toolError(fmt.Sprintf("tool %s: %s", name, apiText(err)), nil)
	}
	args := &checkpoint.Map{}
	args.Set("tool", name)
	argv := make([]any, len(in.Args))
	for i, a := range in.Args {
		argv[i] = a
	}
	args.Set("args", argv)
	args.Set("stdin", in.Stdin)
	enc, err := checkpoint.EncodeData(args)
	if err != nil {
		return toolError(fmt.Sprintf("tool %s: %v", name, err), nil)
	}
	call := "mcp-" + strconv.FormatUint(h.tools.n.Add(1), 10)
	h.tools.grants.Store(call, gs)
	defer h.tools.grants.Delete(call)
	a := h.tools.a
	op := &host.Operation{Invocation: call, Ordinal: 1, Tag: tools.Tag, Args: enc, Grants: gs[tools.Tag]}
	statement, err := a.Authorize(ctx, op, gs[tools.Tag])
	if err != nil {
		return toolError(fmt.Sprintf("denied: %v (%s)", err, mcpHint(h.c, "grant", "--prog", h.subject, tools.Tag+":"+name)), nil)
	}
	op.Attempt = &host.Attempt{Grant: statement, Executor: "mcp"}
	ctx, cancel := context.WithTimeout(ctx, a.Limits().Time)
	defer cancel()
	fmt.Fprintf(h.log, "mcp: tool %s %s\n", name, strings.Join(in.Args, " "))
	reply, err := a.Do(ctx, op)
	if err != nil {
		return toolError(fmt.Sprintf("tool %s: %s", name, redact.New(h.cfg.Secrets()...).String(err.Error())), nil)
	}
	return h.toolResult(name, reply)
}

// toolResult is a tool's reply (tools.Reply) as an MCP result: its stdout,
// stderr and how it ended as text, the reply as structured content.
func (h *mcpHost) toolResult(name string, reply any) *mcp.CallToolResult {
	j, err := checkpoint.DataToJSON(reply)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(j, &m)
	}
	if err != nil {
		return toolError(fmt.Sprintf("tool %s: its reply: %v", name, err), nil)
	}
	r := redact.New(h.cfg.Secrets()...)
	for _, k := range []string{"stdout", "stderr", "detail"} {
		if s, ok := m[k].(string); ok {
			m[k] = r.String(s)
		}
	}
	var content []mcp.Content
	text := func(s string) { content = append(content, &mcp.TextContent{Text: s}) }
	if s, _ := m["stdout"].(string); s != "" {
		text(s)
	} else if _, ok := m["stdout_base64"]; ok {
		text("(stdout is not UTF-8: see stdout_base64 in the structured content)")
	}
	if s, _ := m["stderr"].(string); s != "" {
		text("stderr:\n" + s)
	}
	code, _ := m["exit_code"].(float64)
	stop, _ := m["stop"].(string)
	failed := stop != "exited" || code != 0
	switch {
	case stop != "exited":
		detail, _ := m["detail"].(string)
		text(fmt.Sprintf("the tool was stopped: %s: %s", stop, detail))
	case code != 0:
		text(fmt.Sprintf("exit status %d", int64(code)))
	}
	if len(content) == 0 {
		text("")
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: m, IsError: failed}
}

// callProg runs a prog as `runehost run` does (the store, or its server),
// and drives it until it ends or waits.
func (h *mcpHost) callProg(ctx context.Context, req *mcp.CallToolRequest, p mcpProg, raw json.RawMessage) *mcp.CallToolResult {
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return toolError(fmt.Sprintf("arguments: %v", err), nil)
	}
	input := in.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if n := jsonDepth(input); n > machine.MaxDepth {
		return toolError(fmt.Sprintf("input: nested %d deep, more than the machine's %d", n, machine.MaxDepth), nil)
	}
	src, path := p.source, ""
	if p.file != "" {
		b, err := readProg(p.file) // and the modules it imports
		if err != nil {
			return toolError(fmt.Sprintf("prog %s: %v", p.name, err), nil)
		}
		src, path = b, p.file
	}
	var res *mcp.CallToolResult
	err := h.withBackend(true, func(b backend) error {
		seed := uint64(nowMillis())
		resp, err := b.Run(ctx, api.RunRequest{Prog: p.name, Source: string(src), Path: path, Input: input, Limit: h.c.Uint64("limit"), Seed: &seed})
		if err != nil {
			return err
		}
		missingGrants(h.log, p.name, resp.Missing, resp.GrantHints, true)
		fmt.Fprintf(h.log, "invocation %s\n", resp.Invocation)
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			progressTo(ctx, b, req.Session, token)
		}
		rs, err := b.Drive(ctx, resp.Invocation, resp.Cursor)
		_, served := b.(*remote)
		res = h.progResult(ctx, resp.Invocation, rs, err, served)
		return nil
	})
	if err != nil {
		where := p.name
		if api.CodeOf(err) == api.CodeCompile && p.file != "" {
			where = p.file + ":" // the message is POSITION: ...
			return toolError(where+apiText(err), nil)
		}
		var ae *api.Error
		if errors.As(err, &ae) && ae.Bound != "" {
			return toolError(fmt.Sprintf("prog %s: %s (serve this file under a name of its own: --prog-file NAME=%s)", where, ae.Message, p.file), nil)
		}
		return toolError(fmt.Sprintf("prog %s: %s", where, apiText(err)), nil)
	}
	return res
}

// progressTo makes each event line the backend prints also a progress
// notification of the call: the client sees the run go on, and a client
// that restarts its timeout on progress waits for a long run.
func progressTo(ctx context.Context, b backend, ss *mcp.ServerSession, token any) {
	switch b := b.(type) {
	case *local:
		b.mu.Lock()
		b.w = &progressWriter{w: b.w, ctx: ctx, ss: ss, token: token}
		b.mu.Unlock()
	case *remote:
		b.w = &progressWriter{w: b.w, ctx: ctx, ss: ss, token: token}
	}
}

// progressWriter writes event lines on, and sends each as progress.
type progressWriter struct {
	w     io.Writer
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	n     float64
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.n++
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: strings.TrimSpace(string(b))})
	return p.w.Write(b)
}

// progResult says where a run stands, as `runehost run` reports it: its
// result, or an error naming the invocation and how to go on with it.
func (h *mcpHost) progResult(ctx context.Context, inv string, rs *api.RunState, err error, served bool) *mcp.CallToolResult {
	st := map[string]any{"invocation": inv}
	switch {
	case ctx.Err() != nil && served:
		st["status"] = "running"
		return toolError(fmt.Sprintf("%s goes on in the server (%s)", inv, mcpHint(h.c, "events", "--follow", inv)), st)
	case ctx.Err() != nil && (rs == nil || rs.Status == "running"):
		st["status"] = "stopped"
		return toolError(fmt.Sprintf("%s stopped with its checkpoint stored; nothing it did will be done again (%s)", inv, mcpHint(h.c, "resume", inv)), st)
	case err != nil:
		st["status"] = "paused"
		return toolError(fmt.Sprintf("%s: %s (%s)", inv, apiText(err), mcpHint(h.c, "resume", inv)), st)
	}
	st["status"] = rs.Status
	switch rs.Status {
	case "completed":
		st["result"] = json.RawMessage(resultText(rs))
		fmt.Fprintf(h.log, "done: %s completed\n", inv)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: resultText(rs)}}, StructuredContent: st}
	case "conflict":
		st["result"] = json.RawMessage(resultText(rs))
		return toolError(fmt.Sprintf("%s: conflict: the prog's state moved on while it ran; its result is kept, not published: %s", inv, resultText(rs)), st)
	case "failed":
		text := inv + " failed"
		if e := rs.Error; e != nil {
			st["error"] = map[string]any{"kind": e.Kind, "message": e.Message}
			text += ": " + e.Text
			for _, t := range e.Trace {
				text += "\n\tat " + redact.String(t)
			}
		}
		return toolError(text, st)
	case "waiting":
		if a := rs.Unknown; a != nil {
			n := strconv.FormatUint(a.Ordinal, 10)
			st["unknown"] = map[string]any{"tag": a.Tag, "ordinal": a.Ordinal}
			return toolError(fmt.Sprintf("%s waits for the outcome of act %s (#%s), which may or may not have taken effect; it will not be done again: say how it ended (%s if it did, or %s if it did not)",
				inv, a.Tag, n, mcpHint(h.c, "resolve", inv, n, "--outcome", "JSON"), mcpHint(h.c, "resolve", inv, n, "--error", "KIND:MSG")), st)
		}
		st["waiting"], st["awaits"] = rs.Waiting, rs.Awaits
		tag, until := "TAG", ""
		if len(rs.Awaits) == 1 {
			tag = rs.Awaits[0]
		}
		if rs.Deadline != 0 {
			until = ", until " + time.UnixMilli(rs.Deadline).UTC().Format(time.RFC3339)
			st["deadline"] = time.UnixMilli(rs.Deadline).UTC().Format(time.RFC3339)
		}
		st["command"] = mcpHint(h.c, "send", inv, tag, "JSON")
		return toolError(fmt.Sprintf("%s waits for %s%s (%s, or %s)", inv, rs.Waiting, until, mcpHint(h.c, "send", inv, tag, "JSON"), mcpHint(h.c, "resume", inv)), st)
	case "joining":
		st["waiting"] = rs.Waiting
		return toolError(fmt.Sprintf("%s has returned and waits for %s to settle (%s, or %s)", inv, rs.Waiting, mcpHint(h.c, "ps"), mcpHint(h.c, "resume", inv)), st)
	}
	return toolError(fmt.Sprintf("%s is %s", inv, rs.Status), st)
}

// mcpHint is a command to suggest to the person behind the MCP client, in
// a shell that may not have the client's RUNEHOST_STORE: with --store
// whenever the store is not the default one.
func mcpHint(c *cli.Context, args ...string) string {
	words := []string{"runehost"}
	for i, a := range args {
		words = append(words, host.ShellWord(a))
		if dir := c.String("store"); i == 0 && dir != "" {
			words = append(words, "--store", host.ShellWord(dir))
		}
	}
	return strings.Join(words, " ")
}
