// mcp_test.go drives `runehost mcp`, a real process (the test binary is
// runehost), with the go-sdk's MCP client: granted tools only, a WASI tool
// called, a prog run as a stored invocation, a waiting one handed back,
// and arguments that break the schema refused.

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runehost/runehost/internal/testtools"
)

// mcpSession starts runehost mcp on the store dir with args and connects
// the go-sdk client to it over its stdin and stdout.
func mcpSession(t *testing.T, dir string, stderr *syncBuffer, args ...string) *mcp.ClientSession {
	t.Helper()
	return mcpSessionWith(t, dir, stderr, nil, args...)
}

// mcpSessionWith is mcpSession with the client's options.
func mcpSessionWith(t *testing.T, dir string, stderr *syncBuffer, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir,
		"RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "runehost-test", Version: "0"}, opts)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callMCP calls a tool and returns its result's text.
func callMCP(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var text []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return r, strings.Join(text, "\n")
}

func structured(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatalf("structured content %v: %v", r.StructuredContent, err)
	}
	return m
}

func TestMCPServe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	toolDir := t.TempDir()
	for _, name := range []string{"wc", "cat"} {
		if err := os.WriteFile(filepath.Join(toolDir, name+".wasm"), testtools.Build(t, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("RUNEHOST_TOOLS", toolDir)
	// wc is granted to mcp, grep too but not installed; cat is installed
	// and granted only to another prog.
	for _, g := range [][]string{{"--prog", "mcp", "tool.run:wc", "tool.run:grep"}, {"--prog", "other", "tool.run:cat"}} {
		if code, _, errs := process(t, dir, append([]string{"grant"}, g...)...); code != exitOK {
			t.Fatalf("grant %v: %d %s", g, code, errs)
		}
	}
	echo := filepath.Join(t.TempDir(), "echo.rune")
	os.WriteFile(echo, []byte("return {got: input, n: (state || {n: 0}).n + 1}"), 0o644)
	waits := writeProg(t, "let v = await {key: \"approve\"}\nreturn v.by")
	fails := writeProg(t, "let x = 0\nreturn 1 / x")
	bad := writeProg(t, "return 1")
	stderr := &syncBuffer{}
	cs := mcpSession(t, dir, stderr, "--prog-file", echo, "--prog-file", "approval="+waits, "--prog-file", "fails="+fails, "--prog-file", "bad="+bad)
	os.WriteFile(bad, []byte("let = 3"), 0o644) // read at each call

	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"approval", "bad", "echo", "fails", "wc"}) {
		t.Fatalf("tools %v, want approval, echo and wc (not cat, granted to another prog, nor grep, not installed)\n%s", names, stderr)
	}
	for _, tl := range lt.Tools {
		if tl.Name == "wc" && !strings.Contains(tl.Description, "granted to mcp: no directory") {
			t.Errorf("wc's description: %q", tl.Description)
		}
	}
	if !strings.Contains(stderr.String(), "not serving grep: granted to mcp but not installed") {
		t.Errorf("no word of grep on stderr:\n%s", stderr)
	}

	t.Run("tool", func(t *testing.T) {
		r, text := callMCP(t, cs, "wc", map[string]any{"args": []string{"-w"}, "stdin": "one two three"})
		if r.IsError || strings.TrimSpace(text) != "3" {
			t.Fatalf("wc -w: error %v, %q", r.IsError, text)
		}
		if m := structured(t, r); m["exit_code"] != 0.0 || m["stop"] != "exited" {
			t.Fatalf("wc -w: structured %v", m)
		}
		r, text = callMCP(t, cs, "wc", map[string]any{"args": []string{"-x"}})
		if !r.IsError || !strings.Contains(text, "exit status 2") || !strings.Contains(text, "stderr:\nwc: unknown flag -x") {
			t.Fatalf("wc -x: error %v, %q", r.IsError, text)
		}
	})

	t.Run("schema", func(t *testing.T) {
		for _, args := range []map[string]any{{"args": "-w"}, {"args": []any{1}}, {"stdin": 5}, {"files": []string{"x"}}} {
			r, text := callMCP(t, cs, "wc", args)
			if !r.IsError || !strings.Contains(text, `validating "arguments"`) {
				t.Errorf("wc %v: error %v, %q", args, r.IsError, text)
			}
		}
		if r, text := callMCP(t, cs, "echo", map[string]any{"inputs": 1}); !r.IsError || !strings.Contains(text, `validating "arguments"`) {
			t.Errorf("echo with inputs: error %v, %q", r.IsError, text)
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cat", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown tool "cat"`) {
			t.Errorf("cat, not granted: %v", err)
		}
	})

	t.Run("prog", func(t *testing.T) {
		r, text := callMCP(t, cs, "echo", map[string]any{"input": map[string]any{"x": 1}})
		if r.IsError || text != `{"got":{"x":1},"n":1}` {
			t.Fatalf("echo: error %v, %q\n%s", r.IsError, text, stderr)
		}
		m := structured(t, r)
		inv, _ := m["invocation"].(string)
		if m["status"] != "completed" || inv == "" || !reflectEqualJSON(m["result"], `{"got":{"x":1},"n":1}`) {
			t.Fatalf("echo: structured %v", m)
		}
		// A durable invocation like any other: listed, inspected, and the
		// prog's state is its result.
		if _, _, status := inspectJSON(t, dir, inv); status != "completed" {
			t.Fatalf("inspect %s: %s", inv, status)
		}
		if code, out, errs := process(t, dir, "ps"); code != exitOK || !strings.Contains(out, inv) || !strings.Contains(out, "echo") {
			t.Fatalf("ps: %d %q %s", code, out, errs)
		}
		if _, text := callMCP(t, cs, "echo", nil); text != `{"got":null,"n":2}` {
			t.Fatalf("echo again: %q", text)
		}
	})

	t.Run("waits", func(t *testing.T) {
		r, text := callMCP(t, cs, "approval", map[string]any{})
		m := structured(t, r)
		inv, _ := m["invocation"].(string)
		if !r.IsError || m["status"] != "waiting" || !strings.Contains(text, inv+" waits for an event [approve]") || !strings.Contains(text, "runehost send --store "+dir+" "+inv+" approve JSON") {
			t.Fatalf("approval: error %v, %q, %v", r.IsError, text, m)
		}
		// The store is the server's only during a call: the send works now.
		if code, out, errs := process(t, dir, "send", inv, "approve", `{"by": "ada"}`); code != exitOK || out != "\"ada\"\n" {
			t.Fatalf("send: %d %q %s", code, out, errs)
		}
	})

	t.Run("fails", func(t *testing.T) {
		r, text := callMCP(t, cs, "fails", nil)
		m := structured(t, r)
		inv, _ := m["invocation"].(string)
		e, _ := m["error"].(map[string]any)
		if !r.IsError || m["status"] != "failed" || e["kind"] != "zero_division" || !strings.HasPrefix(text, inv+" failed: ") || !strings.Contains(text, "2:10: zero_division: division by zero") {
			t.Fatalf("fails: error %v, %q, %v", r.IsError, text, m)
		}
		if _, _, status := inspectJSON(t, dir, inv); status != "failed" {
			t.Fatalf("inspect %s: %s", inv, status)
		}
		r, text = callMCP(t, cs, "bad", nil)
		if !r.IsError || !strings.Contains(text, bad+":1:5: got =, want identifier") {
			t.Fatalf("bad: error %v, %q", r.IsError, text)
		}
	})

	t.Run("revoked", func(t *testing.T) {
		if code, _, errs := process(t, dir, "revoke", "--prog", "mcp", "tool.run:wc"); code != exitOK {
			t.Fatalf("revoke: %s", errs)
		}
		r, text := callMCP(t, cs, "wc", map[string]any{"stdin": "a"})
		if !r.IsError || !strings.Contains(text, "denied: tool wc is not granted") || !strings.Contains(text, "runehost grant --store "+dir+" --prog mcp tool.run:wc") {
			t.Fatalf("wc revoked: error %v, %q", r.IsError, text)
		}
	})
}

// A prog the store knows is served by its name, from the file it is bound
// to; its state goes on from its earlier runs.
func TestMCPStoredProg(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f := filepath.Join(t.TempDir(), "count.rune")
	os.WriteFile(f, []byte("return (state || 0) + 1"), 0o644)
	if code, out, errs := process(t, dir, "run", f); code != exitOK || out != "1\n" {
		t.Fatalf("run: %d %q %s", code, out, errs)
	}
	cs := mcpSession(t, dir, &syncBuffer{}, "--stored-prog", "count")
	if r, text := callMCP(t, cs, "count", nil); r.IsError || text != "2" {
		t.Fatalf("count: error %v, %q", r.IsError, text)
	}
	other := writeProg(t, "return 0")
	cs = mcpSession(t, dir, &syncBuffer{}, "--prog-file", "count="+other)
	if r, text := callMCP(t, cs, "count", nil); !r.IsError || !strings.Contains(text, "the name and its state and grants are another's") || !strings.Contains(text, "--prog-file NAME="+other) {
		t.Fatalf("another file as count: error %v, %q", r.IsError, text)
	}
	code, _, errs := process(t, dir, "mcp", "--stored-prog", "nobody")
	if code != exitUsage || !strings.Contains(errs, "--stored-prog nobody: no such prog in the store") {
		t.Fatalf("mcp --stored-prog nobody: %d %s", code, errs)
	}
}

// Through the server that owns the store: grants (mounts too) are read from
// it, a prog runs there, and --stored-prog is refused.
func TestMCPServed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	toolDir, data := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(toolDir, "cat.wasm"), testtools.Build(t, "cat"), 0o644)
	os.WriteFile(filepath.Join(data, "f.txt"), []byte("inside\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("outside\n"), 0o644)
	t.Setenv("RUNEHOST_TOOLS", toolDir)
	if code, _, errs := process(t, dir, "grant", "--prog", "mcp", "tool.run:cat", "fs.read:"+data+"=/d"); code != exitOK {
		t.Fatalf("grant: %s", errs)
	}
	log := &syncBuffer{}
	stop, err := startServe(context.Background(), dir, log)
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, log)
	}
	defer stop()
	echo := writeProg(t, "return input")
	stderr := &syncBuffer{}
	progress := make(chan string, 100)
	cs := mcpSessionWith(t, dir, stderr, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		if r.Params.ProgressToken == "p1" {
			progress <- r.Params.Message
		}
	}}, "--prog-file", "echo="+echo)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(lt.Tools) != 2 || !strings.Contains(lt.Tools[0].Description+lt.Tools[1].Description, "granted to mcp: /d (read-only)") {
		t.Fatalf("tools: %v %v", lt, err)
	}
	if r, text := callMCP(t, cs, "cat", map[string]any{"args": []string{"/d/f.txt"}}); r.IsError || text != "inside\n" {
		t.Fatalf("cat of the mount: error %v, %q\n%s", r.IsError, text, stderr)
	}
	if r, text := callMCP(t, cs, "cat", map[string]any{"args": []string{outside}}); !r.IsError || strings.Contains(text, "outside") {
		t.Fatalf("cat outside its mount: error %v, %q", r.IsError, text)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"input": []any{"a", 1}}}
	params.SetProgressToken("p1")
	r, err := cs.CallTool(context.Background(), params)
	if err != nil || r.IsError || r.Content[0].(*mcp.TextContent).Text != `["a",1]` {
		t.Fatalf("echo through the server: %v %+v\n%s\nserver:\n%s", err, r, stderr, log)
	}
	inv, _ := structured(t, r)["invocation"].(string)
	// Its events came as progress, as they come on stderr.
	select {
	case m := <-progress:
		if !strings.HasPrefix(m, inv+" ") {
			t.Errorf("progress %q, want %s's events", m, inv)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no progress of %s", inv)
	}
	if !strings.Contains(log.String(), inv) {
		t.Errorf("the server did not run %s:\n%s", inv, log)
	}
	code, _, errs := process(t, dir, "mcp", "--stored-prog", "echo")
	if code != exitUsage || !strings.Contains(errs, "--stored-prog reads the store, which runehost serve owns") {
		t.Fatalf("mcp --stored-prog, served: %d %s", code, errs)
	}
}

// reflectEqualJSON reports whether v, decoded JSON, is the JSON text want.
func reflectEqualJSON(v any, want string) bool {
	a, _ := json.Marshal(v)
	var w any
	json.Unmarshal([]byte(want), &w)
	b, _ := json.Marshal(w)
	return string(a) == string(b)
}

// BenchmarkMCPCalls measures calls through runehost mcp, client to reply:
// a WASI tool (wc) and a prog (a durable invocation), with their p50, on
// the embedded store (opened for each call) and through runehost serve.
func BenchmarkMCPCalls(b *testing.B) {
	toolDir := b.TempDir()
	os.WriteFile(filepath.Join(toolDir, "wc.wasm"), testtools.Build(b, "wc"), 0o644)
	b.Setenv("RUNEHOST_TOOLS", toolDir)
	echo := filepath.Join(b.TempDir(), "echo.rune")
	os.WriteFile(echo, []byte("return input"), 0o644)
	for _, served := range []bool{false, true} {
		name := "embedded"
		if served {
			name = "served"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "store")
			grant := exec.Command(os.Args[0], "grant", "--prog", "mcp", "tool.run:wc")
			grant.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir)
			if out, err := grant.CombinedOutput(); err != nil {
				b.Fatalf("grant: %v %s", err, out)
			}
			if served {
				stop, err := startServe(context.Background(), dir, &syncBuffer{})
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
			}
			cmd := exec.Command(os.Args[0], "mcp", "--prog-file", echo)
			cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir,
				"RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			for _, c := range []struct {
				name string
				args map[string]any
			}{{"wc", map[string]any{"stdin": "a b c"}}, {"echo", map[string]any{"input": 1}}} {
				b.Run(c.name, func(b *testing.B) {
					var took []time.Duration
					for b.Loop() {
						start := time.Now()
						r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
						if err != nil || r.IsError {
							b.Fatalf("%v %v", err, r)
						}
						took = append(took, time.Since(start))
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
				})
			}
		})
	}
}

// A call the client cancels stops its run at a slice with its checkpoint
// stored; runehost resume goes on with it to its result.
func TestMCPCancelled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	long := writeProg(t, longProg)
	stderr := &syncBuffer{}
	cs := mcpSession(t, dir, stderr, "--limit", longLimit, "--prog-file", "long="+long)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !strings.Contains(stderr.String(), "invocation r1") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "long", Arguments: map[string]any{}}); err == nil {
		t.Fatalf("the call was not cancelled:\n%s", stderr)
	}
	// The server lets the store go once the run has stopped.
	var code int
	var out, errs string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, out, errs = process(t, dir, "resume", "r1"); !strings.Contains(errs, "is in use by") {
			break
		}
	}
	if code != exitOK || out != longAnswer {
		t.Fatalf("resume r1: %d %q %s\nmcp:\n%s", code, out, errs, stderr)
	}
}
