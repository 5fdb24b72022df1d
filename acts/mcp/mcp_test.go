// mcp_test.go runs mcp.list and mcp.call through the engine: against the
// WASI server of testdata/tools/mcpserver in the sandbox (confined to its
// mounts, stopped by its fuel, failing cleanly when it dies or speaks
// garbage), and against a go-sdk server over streamable HTTP (its host
// granted or not, its key never in an error).

package mcp_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/mcp"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/acts/web"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
	"github.com/runehost/runehost/wasmvm/tool"
)

// engine has the fs, web and mcp acts, the test server installed as the
// WASI server "demo", and remote as the remote servers.
func engine(t testing.TB, remote map[string]mcp.Remote) *host.Engine {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, mcp.Subdir), 0o755)
	if err := os.WriteFile(filepath.Join(dir, mcp.Subdir, "demo.wasm"), testtools.Build(t, "mcpserver"), 0o644); err != nil {
		t.Fatal(err)
	}
	adapters := fs.New()
	for tag, a := range web.New() {
		adapters[tag] = a
	}
	e := acttest.Engine(t, adapters)
	ta := &tools.Adapter{Dir: dir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), MemoryPages: 256, Grants: e.GrantsFor, Prog: e.ProgOf, Warm: 1, Keep: tool.WarmTools}
	t.Cleanup(func() { ta.Close(context.Background()) })
	for tag, a := range mcp.New(&mcp.Servers{Tools: ta, Remote: remote}) {
		e.Adapters[tag] = a
	}
	return e
}

func runner(t testing.TB, e *host.Engine) func(string) string {
	return func(expr string) string {
		t.Helper()
		got, _ := acttest.Run(t, e, acttest.Catch(expr), nil)
		return got
	}
}

func TestWASIServer(t *testing.T) {
	e := engine(t, nil)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f.txt"), []byte("from the data dir"), 0o644)
	outside := filepath.Join(filepath.Dir(data), "outside.txt")
	os.WriteFile(outside, []byte("SECRET"), 0o644)
	acttest.Grant(t, e, "mcp.list:demo", "mcp.call:demo", "fs.read:"+data+"=/data")
	run := runner(t, e)

	got := run(`act "mcp.list" {server: "demo"}`)
	for _, want := range []string{`"name":"echo"`, `"name":"read_file"`, `"description":"Add two integers."`, `"input_schema":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("list: want %s in %s", want, got)
		}
	}
	if strings.Contains(got, "_meta") || strings.Contains(got, "io.example") {
		t.Errorf("list kept _meta: %s", got)
	}
	if got := run(`act "mcp.call" {server: "demo", tool: "echo", arguments: {text: "hi there"}}`); got != `{"content":[{"type":"text","text":"hi there"}],"text":"hi there","structured":{"len":8},"is_error":false}` {
		t.Errorf("echo: %s", got)
	}
	if got := run(`(act "mcp.call" {server: "demo", tool: "add", arguments: {a: 2, b: 40}}).structured.sum`); got != "42" {
		t.Errorf("add: %s", got)
	}
	// Confinement: its mount, and nothing else.
	if got := run(`(act "mcp.call" {server: "demo", tool: "read_file", arguments: {path: "/data/f.txt"}}).text`); got != `"from the data dir"` {
		t.Errorf("read_file in its mount: %s", got)
	}
	for _, p := range []string{"/data/../outside.txt", "/outside.txt", outside} {
		got := run(`act "mcp.call" {server: "demo", tool: "read_file", arguments: {path: "` + p + `"}}`)
		if strings.Contains(got, "SECRET") || !strings.Contains(got, `"is_error":true`) {
			t.Errorf("read_file %s: %s", p, got)
		}
	}
	// A tool's own failure is a reply; the server's refusal and its death are errors.
	if got := run(`act "mcp.call" {server: "demo", tool: "fail"}`); !strings.Contains(got, `"text":"it failed"`) || !strings.Contains(got, `"is_error":true`) {
		t.Errorf("fail: %s", got)
	}
	if got := run(`act "mcp.call" {server: "demo", tool: "nope"}`); got != `["failed","mcp server demo: unknown tool \"nope\""]` {
		t.Errorf("unknown tool: %s", got)
	}
	if got := run(`act "mcp.call" {server: "demo", tool: "garbage"}`); !strings.HasPrefix(got, `["failed","mcp server demo sent what is not JSON-RPC: `) {
		t.Errorf("garbage: %s", got)
	}
	if got := run(`act "mcp.call" {server: "demo", tool: "die"}`); got != `["failed","mcp server demo died (exited 3): mcpserver: dying as asked"]` {
		t.Errorf("die: %s", got)
	}
	// Past the cap, in one message or in the reply.
	for _, n := range []string{"1000000", "3000000"} {
		if got := run(`act "mcp.call" {server: "demo", tool: "big", arguments: {n: ` + n + `}}`); !strings.HasPrefix(got, `["limit","mcp server demo: `) {
			t.Errorf("big %s: %.300s", n, got)
		}
	}
	if got := run(`(act "mcp.call" {server: "demo", tool: "big", arguments: {n: 1000}}).text`); len(got) != 1002 {
		t.Errorf("big 1000: %.300s", got)
	}
	// Not granted, or not there.
	if got := run(`act "mcp.call" {server: "other", tool: "echo"}`); got != `["denied","mcp server other is not granted (runehost grant --prog p mcp.call:other)"]` {
		t.Errorf("ungranted: %s", got)
	}
	acttest.Grant(t, e, "mcp.call:gone")
	if got := run(`act "mcp.call" {server: "gone", tool: "echo"}`); !strings.Contains(got, "mcp server gone is granted but not configured") || strings.Contains(got, "runehost grant") {
		t.Errorf("not configured: %s", got)
	}
	if got := run(`act "mcp.call" {server: "../demo", tool: "echo"}`); !strings.HasPrefix(got, `["value",`) {
		t.Errorf("path as a name: %s", got)
	}
}

// A spinning server is stopped by its grant's fuel, as an error of kind
// limit, well before its clock.
func TestFuel(t *testing.T) {
	e := engine(t, nil)
	acttest.Grant(t, e, "mcp.call:demo,fuel=200000000")
	run := runner(t, e)
	if got := run(`(act "mcp.call" {server: "demo", tool: "echo", arguments: {text: "x"}}).text`); got != `"x"` {
		t.Fatalf("echo with the grant's fuel: %s", got)
	}
	if got := run(`act "mcp.call" {server: "demo", tool: "spin"}`); got != `["limit","mcp server demo stopped: ran out of its 200000000 fuel"]` {
		t.Errorf("spin: %s", got)
	}
}

const testKey = "sk-mcptest-0123456789abcdef"

// remoteServer serves a go-sdk server over streamable HTTP and records the
// Authorization headers it saw.
func remoteServer(t testing.TB) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var auth []string
	s := sdk.NewServer(&sdk.Implementation{Name: "far", Version: "0.1"}, nil)
	s.AddTool(&sdk.Tool{Name: "shout", Description: "Upper-case the text.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(string(req.Params.Arguments))}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "leak", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, fmt.Errorf("I saw %s", req.Extra.Header.Get("Authorization"))
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	mux.Handle("/junk", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("this is not JSON-RPC"))
	}))
	mux.Handle("/moved", http.RedirectHandler("/mcp", http.StatusTemporaryRedirect))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), auth...) }
}

func TestRemoteServer(t *testing.T) {
	hs, seen := remoteServer(t)
	e := engine(t, map[string]mcp.Remote{"far": {URL: hs.URL + "/mcp", Key: testKey}, "moved": {URL: hs.URL + "/moved"}, "junk": {URL: hs.URL + "/junk"}})
	u, _ := url.Parse(hs.URL)
	acttest.Grant(t, e, "mcp.list:far", "mcp.call:far", "mcp.call:moved", "mcp.call:junk", "http.post:example.com")
	run := runner(t, e)

	// The server is granted, its host is not: nothing is sent.
	want := `["denied","mcp server far at ` + hs.URL + `/mcp: host ` + u.Host + ` is not granted to http.post (runehost grant --prog p http.post:` + u.Host + `)"]`
	if got := run(`act "mcp.list" {server: "far"}`); got != want {
		t.Errorf("host not granted:\n got %s\nwant %s", got, want)
	}
	if n := len(seen()); n != 0 {
		t.Fatalf("%d requests reached a host not granted", n)
	}
	acttest.Grant(t, e, "http.post:"+u.Host)
	if got := run(`act "mcp.list" {server: "far"}`); !strings.Contains(got, `"name":"shout","description":"Upper-case the text."`) {
		t.Errorf("list: %s", got)
	}
	if got := run(`act "mcp.call" {server: "far", tool: "shout", arguments: {text: "hi"}}`); got != `{"content":[{"type":"text","text":"{\"TEXT\":\"HI\"}"}],"text":"{\"TEXT\":\"HI\"}","is_error":false}` {
		t.Errorf("call: %s", got)
	}
	for _, a := range seen() {
		if a != "Bearer "+testKey {
			t.Errorf("a request carried %q", a)
		}
	}
	// The server's error is the prog's, without the key.
	if got := run(`act "mcp.call" {server: "far", tool: "leak"}`); got != `["failed","mcp server far: I saw Bearer [redacted]"]` {
		t.Errorf("leak: %s", got)
	}
	// A redirect is not followed.
	if got := run(`act "mcp.call" {server: "moved", tool: "shout"}`); !strings.HasPrefix(got, `["failed","mcp server moved: `) || !strings.Contains(got, "Redirect") {
		t.Errorf("redirect: %s", got)
	}
	if got := run(`act "mcp.call" {server: "junk", tool: "shout"}`); !strings.HasPrefix(got, `["failed","mcp server junk: `) {
		t.Errorf("junk: %s", got)
	}
}

// A host granted by name that resolves to an internal address is not
// dialled, as for the web acts.
func TestRemoteNameResolvingInternal(t *testing.T) {
	hs, seen := remoteServer(t)
	port := hs.URL[strings.LastIndex(hs.URL, ":")+1:]
	prev := web.LookupIP
	web.LookupIP = func(ctx context.Context, h string) ([]net.IPAddr, error) {
		if h == "intranet.example" {
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
		}
		return prev(ctx, h)
	}
	defer func() { web.LookupIP = prev }()
	e := engine(t, map[string]mcp.Remote{"intra": {URL: "http://intranet.example:" + port + "/mcp", Key: testKey}})
	acttest.Grant(t, e, "mcp.list:intra", "http.post:intranet.example:"+port)
	got := runner(t, e)(`act "mcp.list" {server: "intra"}`)
	if !strings.HasPrefix(got, `["denied","host intranet.example resolves to 127.0.0.1`) || len(seen()) != 0 {
		t.Errorf("%s; %d requests", got, len(seen()))
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("RUNEHOST_MCP_GITHUB_URL", "https://mcp.example.com/mcp")
	t.Setenv("RUNEHOST_MCP_GITHUB_KEY", "k1")
	t.Setenv("RUNEHOST_MCP_LOCAL_URL", "http://127.0.0.1:9/mcp")
	got := mcp.FromEnv()
	if len(got) != 2 || got["github"] != (mcp.Remote{URL: "https://mcp.example.com/mcp", Key: "k1"}) || got["local"] != (mcp.Remote{URL: "http://127.0.0.1:9/mcp"}) {
		t.Errorf("%+v", got)
	}
}

// Listing is asked again after a crash; a call's outcome stays unknown.
func TestLookup(t *testing.T) {
	ad := mcp.New(&mcp.Servers{Tools: &tools.Adapter{}})
	if _, found, err := ad[mcp.List].(host.Reconciler).Lookup(context.Background(), &host.Operation{}); found || err != nil {
		t.Errorf("list: %v %v", found, err)
	}
	if _, found, err := ad[mcp.Call].(host.Reconciler).Lookup(context.Background(), &host.Operation{}); found || err == nil {
		t.Errorf("call: %v %v", found, err)
	}
}

// Grants are checked and written one way: the default fuel is left out.
func TestGrantStatements(t *testing.T) {
	e := engine(t, nil)
	for in, want := range map[string]string{"mcp.call:demo": "mcp.call:demo", "mcp.list:demo,fuel=4294967296": "mcp.list:demo", "mcp.call:demo,fuel=100": "mcp.call:demo,fuel=100"} {
		if g, err := e.Grant("p", in); err != nil || g.Statement != want {
			t.Errorf("%s: %+v %v", in, g, err)
		}
	}
	for _, bad := range []string{"mcp.call:", "mcp.call:a/b", "mcp.call:demo,fuel=0", "mcp.call:x.y"} {
		if _, err := e.Grant("p", bad); err == nil {
			t.Errorf("%s granted", bad)
		}
	}
}
