// mcp_frame_test.go drives `runehost mcp`, a real process, with frames no
// client should send: each is answered with its JSON-RPC error (a
// notification with none) and the session goes on, the go-sdk's client
// using it after them as any other.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawMCP is runehost mcp on pipes the test writes and reads frame by frame.
type rawMCP struct {
	in     *os.File
	lines  chan []byte // stdout's, read by one goroutine: a reply that came late is not lost
	exited chan struct{}
	cmd    *exec.Cmd
	stderr *syncBuffer
}

func startRawMCP(t *testing.T, args ...string) *rawMCP {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir,
		"RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	m := &rawMCP{in: inW, lines: make(chan []byte, 16), exited: make(chan struct{}), cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, m.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	go func() {
		cmd.Wait()
		close(m.exited)
	}()
	go func() {
		defer close(m.lines)
		for r := bufio.NewReader(outR); ; {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				m.lines <- b
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-m.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
		outR.Close()
	})
	return m
}

// send writes one line.
func (m *rawMCP) send(t *testing.T, frame string) {
	t.Helper()
	if _, err := io.WriteString(m.in, frame+"\n"); err != nil {
		t.Fatalf("send %.80s: %v\n%s", frame, err, m.stderr)
	}
}

// reply reads the next line, a JSON-RPC response.
func (m *rawMCP) reply(t *testing.T) (id any, result map[string]any, code int64, message string) {
	t.Helper()
	var b []byte
	select {
	case b = <-m.lines:
	case <-time.After(60 * time.Second):
		t.Fatalf("no reply in a minute\n%s", m.stderr)
	}
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  map[string]any  `json:"result"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" || r.ID == nil {
		t.Fatalf("reply %q: %v (the process exited: %v)\n%s", b, err, m.hasExited(), m.stderr)
	}
	json.Unmarshal(r.ID, &id)
	if r.Error != nil {
		return id, nil, r.Error.Code, r.Error.Message
	}
	return id, r.Result, 0, ""
}

func (m *rawMCP) hasExited() bool {
	select {
	case <-m.exited:
		return true
	default:
		return false
	}
}

// refused sends a frame and wants it answered with code for id, the
// message saying why.
func (m *rawMCP) refused(t *testing.T, frame string, code int64, wantID any, why string) {
	t.Helper()
	m.send(t, frame)
	id, result, got, message := m.reply(t)
	if got != code || fmt.Sprint(id) != fmt.Sprint(wantID) || !strings.Contains(message, why) {
		t.Fatalf("%.80s: id %v, code %d %q, result %v; want id %v, code %d, %q\n%s", frame, id, got, message, result, wantID, code, why, m.stderr)
	}
}

// listed sends tools/list as id and wants the tools served.
func (m *rawMCP) listed(t *testing.T, id int) {
	t.Helper()
	m.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
	got, result, code, message := m.reply(t)
	tools, _ := result["tools"].([]any)
	if got != float64(id) || code != 0 || len(tools) != 1 || tools[0].(map[string]any)["name"] != "echo" {
		t.Fatalf("tools/list %d: id %v, code %d %q, result %v\n%s", id, got, code, message, result, m.stderr)
	}
	if m.hasExited() {
		t.Fatalf("the process exited\n%s", m.stderr)
	}
}

// initialize opens the session as a client does.
func (m *rawMCP) initialize(t *testing.T, id int) {
	t.Helper()
	m.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, id))
	if got, result, code, message := m.reply(t); got != float64(id) || code != 0 || result["serverInfo"].(map[string]any)["name"] != "runehost" {
		t.Fatalf("initialize: id %v, code %d %q, result %v\n%s", got, code, message, result, m.stderr)
	}
	m.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// Each frame a client should not send is answered with its error, the
// next request on the same stdin with its answer; only EOF ends the
// process, and with status 0.
func TestMCPMalformedFrames(t *testing.T) {
	echo := writeProg(t, "return input")
	m := startRawMCP(t, "--prog-file", "echo="+echo)

	t.Run("before initialize", func(t *testing.T) {
		m.refused(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, -32600, 1.0, "send initialize first")
		m.refused(t, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}`, -32600, "a", `"tools/call"`)
	})
	m.initialize(t, 3)
	m.listed(t, 4)

	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	huge := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"input":"` + strings.Repeat("x", mcpMaxFrame) + `"}}}`
	for i, c := range []struct {
		name  string
		frame string
		code  int64
		id    any
		why   string
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":5,"method":"tools/list"`, -32700, nil, "not JSON"},
		{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\"}}", -32700, nil, "not UTF-8"},
		{"trailing data", `{"jsonrpc":"2.0","id":5,"method":"ping"} {}`, -32700, nil, "not JSON"},
		{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, -32600, nil, "batches are not supported"},
		{"empty batch", `[]`, -32600, nil, "batches are not supported"},
		{"not an object", `"ping"`, -32600, nil, "not an object"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil, "is not a string or an integer"},
		{"array id", `{"jsonrpc":"2.0","id":[5],"method":"ping"}`, -32600, nil, "is not a string or an integer"},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, nil, "is not a string or an integer"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, nil, "is not a string or an integer"},
		{"fractional id", `{"jsonrpc":"2.0","id":5.5,"method":"ping"}`, -32600, nil, "is not a string or an integer"},
		{"missing method", `{"jsonrpc":"2.0","id":5}`, -32600, 5.0, "no method"},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":7}`, -32600, "m", "method is not a string"},
		{"no jsonrpc", `{"id":5,"method":"ping"}`, -32600, 5.0, `jsonrpc is not "2.0"`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, 5.0, `jsonrpc is not "2.0"`},
		{"params a string", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":"x"}`, -32600, 5.0, "params are not an object"},
		{"duplicate id", `{"jsonrpc":"2.0","id":5,"id":{},"method":"ping"}`, -32600, nil, `member "id" given twice`},
		{"nested 10,000 deep", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"input":` + deep + `}}}`, -32600, nil, "nested over 128 deep"},
		{"oversize line", huge, -32600, nil, fmt.Sprintf("frame over %d bytes", mcpMaxFrame)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m.refused(t, c.frame, c.code, c.id, c.why)
			m.listed(t, 10+i)
		})
	}
	// A malformed notification is answered with nothing: the next reply
	// is the ping's.
	for _, n := range []string{`{"jsonrpc":"1.0","method":"notifications/x"}`, `{"jsonrpc":"2.0","method":"notifications/x","params":5}`, `{"method":"notifications/cancelled"}`} {
		m.send(t, n)
	}
	m.send(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if id, _, code, message := m.reply(t); id != "p" || code != 0 {
		t.Fatalf("ping after malformed notifications: id %v, code %d %q", id, code, message)
	}
	m.listed(t, 100)

	m.in.Close()
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit at EOF\n%s", m.stderr)
	}
	if code := m.cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("exit status %d at EOF\n%s", code, m.stderr)
	}
}

// After garbage, the go-sdk's client opens the session and calls a prog.
func TestMCPClientAfterGarbage(t *testing.T) {
	echo := writeProg(t, "return input")
	m := startRawMCP(t, "--prog-file", "echo="+echo)
	m.refused(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, -32600, 1.0, "send initialize first")
	m.refused(t, `not json`, -32700, nil, "not JSON")
	m.refused(t, `[{"jsonrpc":"2.0","id":2,"method":"initialize"}]`, -32600, nil, "batches")
	m.refused(t, `{"jsonrpc":"2.0","id":{},"method":"initialize"}`, -32600, nil, "id")
	m.refused(t, strings.Repeat("{", 10_000), -32600, nil, "nested")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "runehost-test", Version: "0"}, nil)
	pr, pw := io.Pipe()
	go func() {
		for b := range m.lines {
			pw.Write(b)
		}
		pw.Close()
	}()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: m.in}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, m.stderr)
	}
	defer cs.Close()
	if r, text := callMCP(t, cs, "echo", map[string]any{"input": []any{"a", 1}}); r.IsError || text != `["a",1]` {
		t.Fatalf("echo: error %v, %q\n%s", r.IsError, text, m.stderr)
	}
}
