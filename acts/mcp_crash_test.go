// mcp_crash_test.go kills the host during an MCP act, with every act
// registered as the host does: a listing cut short is asked again on
// resume; a call cut short stays unknown, the invocation waiting on it.

package acts_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/mcp"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
)

// dyingOnce dies (the goroutine ends, as if the host were killed) in its
// first attempt.
type dyingOnce struct {
	*mcp.Adapter
	died *bool
}

func (d dyingOnce) Do(ctx context.Context, op *host.Operation) (any, error) {
	if !*d.died {
		*d.died = true
		runtime.Goexit()
	}
	return d.Adapter.Do(ctx, op)
}

func TestMCPSurvivesACrash(t *testing.T) {
	toolDir := t.TempDir()
	os.Mkdir(filepath.Join(toolDir, mcp.Subdir), 0o755)
	os.WriteFile(filepath.Join(toolDir, mcp.Subdir, "demo.wasm"), testtools.Build(t, "mcpserver"), 0o644)
	cfg := acts.Config{ToolDir: toolDir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache")}
	src := `let n = len((act "mcp.list" {server: "demo"}).tools)
return [n, (act "mcp.call" {server: "demo", tool: "echo", arguments: {text: "hi"}}).text]`
	for _, tc := range []struct{ dies, want string }{
		{mcp.List, `completed [8,"hi"]`},
		{mcp.Call, `waiting the outcome of act mcp.call`},
	} {
		dir := t.TempDir()
		open := func() (*host.Engine, func()) {
			e, done := acttest.Open(t, dir)
			closer := acts.Register(e, cfg)
			return e, func() { closer(); done() }
		}
		e, done := open()
		acttest.Grant(t, e, "mcp.list:demo", "mcp.call:demo")
		died := false
		e.Adapters[tc.dies] = dyingOnce{e.Adapters[tc.dies].(*mcp.Adapter), &died}
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			e.Start(context.Background(), "r1", "p", []byte(src), nil, 10_000_000, 1)
		}()
		<-finished
		done()
		if !died {
			t.Fatalf("%s: did not die", tc.dies)
		}
		e, done = open()
		out, err := e.RunTree(context.Background(), "r1")
		done()
		if err != nil {
			t.Fatalf("%s: %v", tc.dies, err)
		}
		got := out.Status.String() + " " + out.Waiting
		if out.Result != nil {
			got = out.Status.String() + " " + acttest.JSON(t, out.Result)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("dying in %s, after the restart: %s, want %s", tc.dies, got, tc.want)
		}
	}
}
