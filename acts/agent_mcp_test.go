// agent_mcp_test.go runs std/agent.rune with an MCP server's tools
// (std/mcp.rune) through the engine: the model calls them natively, the
// WASI server in the sandbox answers, and what it may not read it cannot.

package acts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/mcp"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/internal/testtools"
)

func TestAgentWithMCPTools(t *testing.T) {
	toolDir, data := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(toolDir, mcp.Subdir), 0o755)
	os.WriteFile(filepath.Join(toolDir, mcp.Subdir, "demo.wasm"), testtools.Build(t, "mcpserver"), 0o644)
	os.WriteFile(filepath.Join(data, "notes.txt"), []byte("remember the milk"), 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(data), "outside.txt"), []byte("a secret beside the mount"), 0o644)
	srv := modeltest.Script("", modeltest.Reply{ToolCalls: []modeltest.ToolCall{
		{ID: "c1", Name: "add", Arguments: `{"a": 2, "b": 3}`},
		{ID: "c2", Name: "read_file", Arguments: `{"path": "/data/notes.txt"}`},
		{ID: "c3", Name: "read_file", Arguments: `{"path": "/data/../outside.txt"}`},
	}}, modeltest.Reply{Content: "5, and remember the milk."})
	defer srv.Close()
	e := acttest.Engine(t, nil)
	closer := acts.Register(e, acts.Config{ToolDir: toolDir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"),
		Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}})
	defer closer()
	acttest.Grant(t, e, "model.chat:default", "mcp.list:demo", "mcp.call:demo", "fs.read:"+data+"=/data")
	dir := t.TempDir()
	prog := filepath.Join(dir, "p.rune")
	os.WriteFile(prog, []byte(`import "std/agent.rune" as agent
import "std/mcp.rune" as mcp
let out = agent.run("Add 2 and 3, and read my notes.", mcp.tools("demo"), {max_turns: 3})
return [out.answer, out.turns]
`), 0o644)
	src, err := modules.Load(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := acttest.Run(t, e, string(src), nil)
	if got != `["5, and remember the milk.",2]` {
		t.Fatalf("got %s", got)
	}
	// The first request offered the server's tools with its schemas.
	var first struct {
		Tools []struct {
			Function struct {
				Name       string
				Parameters json.RawMessage
			}
		}
	}
	json.Unmarshal([]byte(srv.Bodies()[0]), &first)
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Function.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "add,read_file") || !strings.Contains(srv.Bodies()[0], `"a":{"type":"integer"}`) {
		t.Fatalf("tools offered: %v\n%s", names, srv.Bodies()[0])
	}
	// The second carried each tool's answer: the sum, the notes, and the
	// read outside the mount refused.
	second := srv.Bodies()[1]
	for _, want := range []string{`"content":"5","tool_call_id":"c1"`, `"content":"remember the milk","tool_call_id":"c2"`, `"content":"error tool: read_file: open /data/../outside.txt`} {
		if !strings.Contains(second, want) {
			t.Errorf("the second request lacks %s:\n%s", want, second)
		}
	}
	if strings.Contains(second, "a secret beside the mount") {
		t.Fatalf("the server read outside its mount:\n%s", second)
	}
}
