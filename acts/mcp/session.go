// session.go holds the two ways to a server: a WASI module run in the tool
// sandbox for one act, and a remote one over streamable HTTP; and how their
// failures become the prog's errors.

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/acts/web"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm/tool"
)

// grace is how long a WASI server has to exit once its stdin is closed
// before it is stopped.
const grace = time.Second

type asker func(ctx context.Context, cs *sdk.ClientSession) (any, error)

type runEnd struct {
	res *tool.Result
	err error
}

// doWASI runs the server for one session: its stdin an OS pipe (see
// tool.Config.StdinFile), its stdout read as frames, stderr kept for the
// message of a server that dies.
func (a *Adapter) doWASI(ctx context.Context, op *host.Operation, name string, fuel uint64, ask asker) (any, error) {
	runner, err := a.S.Tools.Runner()
	if err != nil {
		return nil, err
	}
	module, err := tools.ReadModule(a.wasmPath(name))
	if err != nil {
		return nil, &checkpoint.Error{Kind: "not_found", Msg: fmt.Sprintf("mcp server %s: %v", name, err)}
	}
	mounts, env, err := a.S.Tools.Sandbox(op.Invocation)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW := io.Pipe()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan runEnd, 1)
	go func() {
		res, err := runner.Run(rctx, module, tool.Config{Name: name, StdinFile: inR, StdinWriter: inW, Stdout: outW, StreamOnly: true,
			Env: env, Mounts: mounts, Fuel: fuel, Timeout: a.S.Tools.Timeout, Owner: a.S.Tools.Owner(op.Invocation)})
		outW.CloseWithError(io.EOF)
		inR.Close()
		done <- runEnd{res, err}
	}()
	var reply any
	lines := &lineCap{r: outR}
	cs, err := client().Connect(ctx, &sdk.IOTransport{Reader: lines, Writer: inW, MaxLineLength: 2 * maxFrame}, sessionOptions)
	if err == nil {
		reply, err = ask(ctx, cs)
		cs.Close()
	} else {
		outR.Close()
		inW.Close()
	}
	var end runEnd
	select {
	case end = <-done:
	case <-time.After(grace):
		stop()
		end = <-done
	}
	if end.err != nil {
		return nil, &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("mcp server %s: %v", name, end.err)}
	}
	if lines.over {
		err = &limitErr{fmt.Sprintf("a message over %d bytes", maxFrame)}
	}
	if err != nil {
		return nil, wasiErr(name, err, end.res)
	}
	return reply, nil
}

// wasiErr names why a session with a WASI server failed: its own answer (a
// JSON-RPC error), a limit it hit, or its death.
func wasiErr(name string, err error, res *tool.Result) error {
	var we *jsonrpc.Error
	var le *limitErr
	var se *json.SyntaxError
	switch {
	case errors.As(err, &we):
		return &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("mcp server %s: %s", name, cut(we.Message))}
	case errors.As(err, &se):
		return &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("mcp server %s sent what is not JSON-RPC: %s", name, cut(err.Error()))}
	case errors.As(err, &le):
		return &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("mcp server %s: %s", name, le.msg)}
	case res.Stop == tool.OutOfFuel || res.Stop == tool.OutOfMemory:
		return &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("mcp server %s stopped: %s", name, res.Detail)}
	case res.Stop == tool.TimedOut && res.Detail != "cancelled":
		return &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("mcp server %s stopped: %s", name, res.Detail)}
	case res.Stop == tool.Trapped || res.Stop == tool.Exited && res.ExitCode != 0:
		how := res.Detail
		if res.Stop == tool.Exited {
			how = fmt.Sprintf("exited %d", res.ExitCode)
		}
		msg := fmt.Sprintf("mcp server %s died (%s)", name, how)
		if tail := lastLine(res.Stderr); tail != "" {
			msg += ": " + tail
		}
		return &checkpoint.Error{Kind: "failed", Msg: msg}
	}
	return &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("mcp server %s: %s", name, cut(err.Error()))}
}

// doRemote asks a server over streamable HTTP through a client that dials
// as the web acts do, follows no redirect, and caps what it reads.
func (a *Adapter) doRemote(ctx context.Context, op *host.Operation, name string, r Remote, u *url.URL, ask asker) (any, error) {
	// The grant is checked again at the attempt: Authorize ran on the same
	// grants, but the host rule is what keeps the key to its host.
	if _, ok, err := a.hostGrant(op.Invocation, u); err != nil || !ok {
		return nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("mcp server %s at %s: host %s is not granted", name, redactURL(u), u.Host)}
	}
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	var rt http.RoundTripper = &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return web.DialGranted(ctx, dialer, network, addr)
		}}
	rt = capped{rt}
	if r.Key != "" {
		rt = bearer{r.Key, rt}
	}
	hc := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tr := &sdk.StreamableClientTransport{Endpoint: r.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1, MaxEventSize: maxFrame}
	fail := func(err error) error {
		var we *jsonrpc.Error
		var le *limitErr
		var ce *checkpoint.Error
		msg := err.Error()
		kind := "failed"
		switch {
		case errors.As(err, &ce):
			return ce
		case errors.As(err, &we):
			msg = we.Message
		case errors.As(err, &le):
			kind, msg = "limit", le.msg
		}
		return &checkpoint.Error{Kind: kind, Msg: fmt.Sprintf("mcp server %s: %s", name, cut(redactKey(msg, r.Key)))}
	}
	cs, err := client().Connect(ctx, tr, sessionOptions)
	if err != nil {
		return nil, fail(err)
	}
	defer cs.Close()
	reply, err := ask(ctx, cs)
	if err != nil {
		return nil, fail(err)
	}
	return reply, nil
}

// maxFrame bounds one message from a server.
const maxFrame = MaxReply + 64<<10

// lineCap fails a line from a WASI server past maxFrame, and says so.
type lineCap struct {
	r    io.ReadCloser
	n    int
	over bool
}

func (l *lineCap) Read(p []byte) (int, error) {
	if l.over {
		return 0, &limitErr{fmt.Sprintf("a message over %d bytes", maxFrame)}
	}
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if l.n++; c == '\n' {
			l.n = 0
		} else if l.n > maxFrame {
			l.over = true
		}
	}
	return n, err
}

func (l *lineCap) Close() error { return l.r.Close() }

type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// capped fails a response body past MaxReply and some.
type capped struct{ next http.RoundTripper }

func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{rc: resp.Body, left: maxFrame}
	}
	return resp, err
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, &limitErr{fmt.Sprintf("a response over %d bytes", MaxReply)}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// redactKey takes the key out of a message, raw and as a bearer header.
func redactKey(msg, key string) string {
	if key == "" {
		return msg
	}
	return strings.ReplaceAll(msg, key, "[redacted]")
}

// redactURL drops a URL's user info and query from messages.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery = nil, ""
	return c.String()
}

// cut bounds a server's text in a message.
func cut(s string) string {
	if r := []rune(s); len(r) > 400 {
		return string(r[:400]) + "..."
	}
	return s
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return cut(strings.TrimSpace(lines[len(lines)-1]))
}
