// mounts_linux_test.go: a WASI server's mounts are the tool sandbox's: a
// granted directory that has come to hold a mount of /proc (a real bind
// mount: run as root) keeps the server from starting, with a refusal that
// names the mount, and nothing of the host's environment is read.

package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/internal/testtools"
)

func TestWASIServerForeignMount(t *testing.T) {
	testtools.RequireRoot(t)
	const token = "xoxb-mcp-fsallow-2290"
	t.Setenv("MCP_FSALLOW_TOKEN", token)
	e := engine(t, nil)
	data, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(data, "f.txt"), []byte("from the data dir"), 0o644)
	acttest.Grant(t, e, "mcp.call:demo", "fs.read:"+data+"=/data")
	run := runner(t, e)
	if got := run(`(act "mcp.call" {server: "demo", tool: "read_file", arguments: {path: "/data/f.txt"}}).text`); got != `"from the data dir"` {
		t.Fatalf("before the mount: %s", got)
	}
	testtools.Bind(t, "/proc", filepath.Join(data, "p"))
	for _, p := range []string{"/data/p/self/environ", "/data/f.txt"} {
		got := run(`act "mcp.call" {server: "demo", tool: "read_file", arguments: {path: "` + p + `"}}`)
		if strings.Contains(got, token) || strings.Contains(got, "MCP_FSALLOW") || !strings.Contains(got, data+" holds "+data+"/p, a mount of proc") {
			t.Errorf("read_file %s: %.400s", p, got)
		}
	}
}
