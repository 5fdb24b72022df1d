// Package mcp holds the acts mcp.list and mcp.call: the tools of a Model
// Context Protocol server the host configured, granted by the server's name
// (mcp.call:NAME, mcp.list:NAME, either with ,fuel=N). A server is a WASI
// module, MCP/NAME.wasm under the tool directory, run in the tool sandbox
// over stdio with the prog's mounts and environment (as tool.run's), once
// per act: started, initialized, asked, closed, so its fuel is the act's and
// nothing is kept between acts. Or it is remote, over streamable HTTP, at a
// URL the host configured (RUNEHOST_MCP_NAME_URL, with RUNEHOST_MCP_NAME_KEY
// as a bearer token), whose host an http.post grant must cover, as the web
// acts check it: no proxy, no redirect, no internal address by name.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runehost/runehost/acts/args"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/acts/web"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm/tool"
)

// The tags.
const (
	List = "mcp.list"
	Call = "mcp.call"
)

// Limits of the acts.
const (
	MaxReply        = 1 << 20          // bytes of a reply, as JSON
	RemoteTimeout   = 60 * time.Second // a remote server's act
	ProtocolVersion = "2025-11-25"     // asked for at once, without the stateless discovery first
	Subdir          = "mcp"            // under the tool directory: NAME.wasm
	maxPages        = 100              // of tools/list
)

// Remote is a server over streamable HTTP.
type Remote struct {
	URL string
	Key string // sent as a bearer token; "" for none
}

// FromEnv reads the remote servers: RUNEHOST_MCP_NAME_URL and, optionally,
// RUNEHOST_MCP_NAME_KEY, for the server granted as mcp.call:name (NAME in
// lower case).
func FromEnv() map[string]Remote {
	out := map[string]Remote{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		mid, ok := strings.CutPrefix(k, "RUNEHOST_MCP_")
		if mid, ok = strings.CutSuffix(mid, "_URL"); !ok || mid == "" || v == "" {
			continue
		}
		out[strings.ToLower(mid)] = Remote{URL: v, Key: os.Getenv("RUNEHOST_MCP_" + mid + "_KEY")}
	}
	return out
}

// Servers is the host's configuration of MCP servers, shared by both acts.
type Servers struct {
	// Tools is the tool sandbox: its directory's Subdir holds the WASI
	// servers, and its grants and places give their mounts and
	// environment. Its Timeout is a WASI server's per act.
	Tools  *tools.Adapter
	Remote map[string]Remote // by name
}

// Adapter is one of the two acts.
type Adapter struct {
	Tag string
	S   *Servers
}

// New returns the adapters of the two tags.
func New(s *Servers) map[string]host.Adapter {
	return map[string]host.Adapter{List: &Adapter{Tag: List, S: s}, Call: &Adapter{Tag: Call, S: s}}
}

// Limits declares the acts' limits.
func (a *Adapter) Limits() host.Limits {
	t := a.S.Tools.Timeout
	if t == 0 {
		t = tool.DefaultTimeout
	}
	return host.Limits{Args: 1 << 20, Reply: MaxReply + 64<<10, Time: max(t, RemoteTimeout) + 10*time.Second}
}

// CheckGrant accepts a server name, with the most fuel a WASI server may
// have: mcp.call:NAME or mcp.call:NAME,fuel=N.
func (a *Adapter) CheckGrant(tag, target string) (string, error) {
	name, fuel, err := tools.ParseGrant(target)
	if err != nil {
		return "", fmt.Errorf("want a server name: %s:NAME, or %s:NAME,fuel=N (%v)", tag, tag, err)
	}
	if fuel == tools.DefaultFuel {
		return name, nil
	}
	return fmt.Sprintf("%s,fuel=%d", name, fuel), nil
}

type mcpArgs struct {
	server    string
	tool      string
	arguments json.RawMessage
}

func (a *Adapter) parse(op *host.Operation) (*mcpArgs, error) {
	shape := "{server}"
	if a.Tag == Call {
		shape = "{server, tool, arguments}"
	}
	m, err := args.Map(op.Args, a.Tag, shape)
	if err != nil {
		return nil, err
	}
	out := &mcpArgs{arguments: json.RawMessage("{}")}
	s, _ := m.Get("server")
	var ok bool
	if out.server, ok = s.(string); !ok || out.server == "" || strings.ContainsAny(out.server, "/\\. =,") {
		return nil, args.Errorf("%s: server must be a server name", a.Tag)
	}
	if a.Tag == List {
		return out, nil
	}
	t, _ := m.Get("tool")
	if out.tool, ok = t.(string); !ok || out.tool == "" {
		return nil, args.Errorf("%s: tool must be a tool's name", a.Tag)
	}
	if v, ok := m.Get("arguments"); ok && v != nil {
		am, ok := v.(*checkpoint.Map)
		if !ok {
			return nil, args.Errorf("%s: arguments must be a map", a.Tag)
		}
		if out.arguments, err = checkpoint.DataToJSON(am); err != nil {
			return nil, args.Errorf("%s: arguments: %v", a.Tag, err)
		}
	}
	return out, nil
}

// granted returns the grant of the server allowing the most fuel.
func granted(name string, grants []host.Grant) (string, uint64) {
	statement, most := "", uint64(0)
	for _, g := range grants {
		if n, fuel, err := tools.ParseGrant(g.Target()); err == nil && n == name && fuel > most {
			statement, most = g.Statement, fuel
		}
	}
	return statement, most
}

func (a *Adapter) wasmPath(name string) string {
	return filepath.Join(a.S.Tools.Dir, Subdir, name+".wasm")
}

// remote returns the server's configuration and its parsed URL, if it is
// remote.
func (a *Adapter) remote(name string) (Remote, *url.URL, bool, error) {
	r, ok := a.S.Remote[name]
	if !ok {
		return r, nil, false, nil
	}
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return r, nil, true, fmt.Errorf("mcp server %s: its URL is not an http(s) URL", name)
	}
	return r, u, true, nil
}

// hostGrant returns the http.post grant covering a remote server's URL.
func (a *Adapter) hostGrant(inv string, u *url.URL) (string, bool, error) {
	if a.S.Tools.Grants == nil {
		return "", false, nil
	}
	gs, err := a.S.Tools.Grants(inv, web.Post)
	if err != nil {
		return "", false, err
	}
	st, ok := web.Allowed(u, gs)
	return st, ok, nil
}

// Authorize allows a granted server that is configured; a remote one's
// host must be granted to http.post as well, and a WASI one's mounts must
// be allowed. The statement is the server's grant allowing the most fuel.
func (a *Adapter) Authorize(_ context.Context, op *host.Operation, grants []host.Grant) (string, error) {
	ar, err := a.parse(op)
	if err != nil {
		return "", err
	}
	statement, _ := granted(ar.server, grants)
	if statement == "" {
		return "", fmt.Errorf("mcp server %s is not granted", ar.server)
	}
	_, u, isRemote, err := a.remote(ar.server)
	if err != nil {
		return "", err
	}
	_, statErr := os.Stat(a.wasmPath(ar.server))
	switch {
	case isRemote && statErr == nil:
		return "", fmt.Errorf("mcp server %s is configured twice: a URL and %s", ar.server, a.wasmPath(ar.server))
	case isRemote:
		_, ok, err := a.hostGrant(op.Invocation, u)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("mcp server %s at %s: host %s is not granted to %s", ar.server, redactURL(u), u.Host, web.Post)
		}
	case statErr != nil:
		return "", fmt.Errorf("mcp server %s is granted but not configured (no URL, and no %s)", ar.server, a.wasmPath(ar.server))
	default:
		if _, _, err := a.S.Tools.Sandbox(op.Invocation); err != nil {
			return "", err
		}
	}
	return statement, nil
}

// Suggest names the grant missing for op: the server's, or when that is
// granted (the statement is then returned, which says nothing), a remote
// server's host.
func (a *Adapter) Suggest(op *host.Operation) string {
	ar, err := a.parse(op)
	if err != nil {
		return ""
	}
	if st, _ := granted(ar.server, op.Grants); st != "" {
		if _, u, ok, err := a.remote(ar.server); ok && err == nil {
			if _, ok, err := a.hostGrant(op.Invocation, u); err == nil && !ok {
				return web.Post + ":" + strings.ToLower(u.Host)
			}
		}
		return st
	}
	return a.Tag + ":" + ar.server
}

// Do starts a session with the server, asks it, and closes it.
func (a *Adapter) Do(ctx context.Context, op *host.Operation) (any, error) {
	ar, err := a.parse(op)
	if err != nil {
		return nil, err
	}
	ask := func(ctx context.Context, cs *sdk.ClientSession) (any, error) {
		if a.Tag == List {
			return listTools(ctx, cs)
		}
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ar.tool, Arguments: ar.arguments})
		if err != nil {
			return nil, err
		}
		return callReply(r)
	}
	r, u, isRemote, err := a.remote(ar.server)
	if err != nil {
		return nil, &checkpoint.Error{Kind: "failed", Msg: err.Error()}
	}
	if isRemote {
		return a.doRemote(ctx, op, ar.server, r, u, ask)
	}
	fuel := uint64(tools.DefaultFuel)
	if op.Attempt != nil {
		if _, f, err := tools.ParseGrant(host.Grant{Statement: op.Attempt.Grant}.Target()); err == nil {
			fuel = f
		}
	}
	return a.doWASI(ctx, op, ar.server, fuel, ask)
}

// Lookup: listing has no effect, so an attempt cut short is asked again;
// a call may have had one and stays unknown. A tool's readOnlyHint is not
// taken as a proof: it is the server's word, and the server is untrusted.
func (a *Adapter) Lookup(context.Context, *host.Operation) (any, bool, error) {
	if a.Tag == List {
		return nil, false, nil
	}
	return nil, false, errors.New("an MCP tool call may have taken effect: its outcome is unknown")
}

func listTools(ctx context.Context, cs *sdk.ClientSession) (any, error) {
	var list []any
	cursor := ""
	for range maxPages {
		res, err := cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			m := &checkpoint.Map{}
			m.Set("name", t.Name)
			m.Set("description", t.Description)
			schema, err := jsonData(t.InputSchema, false)
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
			}
			m.Set("input_schema", schema)
			list = append(list, m)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	out := &checkpoint.Map{}
	out.Set("tools", list)
	return capReply(out)
}

// callReply is a tool's result as the prog sees it: {content, text,
// structured?, is_error}, with no _meta.
func callReply(r *sdk.CallToolResult) (any, error) {
	out := &checkpoint.Map{}
	content := []any{}
	var text []string
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			text = append(text, t.Text)
		}
		v, err := jsonData(c, true)
		if err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		content = append(content, v)
	}
	out.Set("content", content)
	out.Set("text", strings.Join(text, "\n"))
	if r.StructuredContent != nil {
		v, err := jsonData(r.StructuredContent, false)
		if err != nil {
			return nil, fmt.Errorf("structured content: %w", err)
		}
		out.Set("structured", v)
	}
	out.Set("is_error", r.IsError)
	return capReply(out)
}

// jsonData turns a value of the SDK's into a data value, through JSON,
// without its _meta when strip (the order of its keys kept).
func jsonData(v any, strip bool) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := checkpoint.DataFromJSON(b)
	if m, ok := d.(*checkpoint.Map); ok && strip {
		out := &checkpoint.Map{}
		for i, k := range m.Keys {
			if k != "_meta" {
				out.Set(k, m.Values[i])
			}
		}
		d = out
	}
	return d, err
}

type limitErr struct{ msg string }

func (e *limitErr) Error() string { return e.msg }

func capReply(v *checkpoint.Map) (any, error) {
	b, err := checkpoint.EncodeData(v)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxReply {
		return nil, &limitErr{fmt.Sprintf("reply of %d bytes, over %d", len(b), MaxReply)}
	}
	return v, nil
}

func client() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "runehost", Version: "1"}, nil)
}

var sessionOptions = &sdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion}

var (
	_ host.Reconciler   = (*Adapter)(nil)
	_ host.Authorizer   = (*Adapter)(nil)
	_ host.GrantChecker = (*Adapter)(nil)
	_ host.Limited      = (*Adapter)(nil)
	_ host.Suggester    = (*Adapter)(nil)
)
