// Command mcpserver is an MCP server over stdio for the tests of mcp.call:
// newline-delimited JSON-RPC read with bufio (in a goroutine) and answered with
// encoding/json (the go-sdk would cost a minute to build as a guest).
// Its tools: echo, add, read_file (inside its mounts only, which is what
// the tests check), fail (a tool error), spin (never ends: fuel stops
// it), big (n bytes of text), garbage (answers with a line that is not JSON) and die (exits 3).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var out = bufio.NewWriter(os.Stdout)

func send(r response) {
	r.JSONRPC = "2.0"
	b, _ := json.Marshal(r)
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

// meta is put on every result: the host must strip it before recording.
var meta = map[string]any{"io.example/trace": "t-1"}

func schema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

var str = map[string]any{"type": "string"}

var tools = []map[string]any{
	{"name": "echo", "description": "Echo the text back.", "inputSchema": schema(map[string]any{"text": str}, "text"), "annotations": map[string]any{"readOnlyHint": true}},
	{"name": "add", "description": "Add two integers.", "inputSchema": schema(map[string]any{"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "integer"}}, "a", "b")},
	{"name": "read_file", "description": "Read a file the server can see.", "inputSchema": schema(map[string]any{"path": str}, "path")},
	{"name": "fail", "description": "Fail as a tool.", "inputSchema": schema(map[string]any{})},
	{"name": "spin", "description": "Never answer.", "inputSchema": schema(map[string]any{})},
	{"name": "garbage", "description": "Answer with a line that is not JSON.", "inputSchema": schema(map[string]any{})},
	{"name": "big", "description": "Answer with n bytes of text.", "inputSchema": schema(map[string]any{"n": map[string]any{"type": "integer"}}, "n")},
	{"name": "die", "description": "Exit 3 at once.", "inputSchema": schema(map[string]any{})},
}

func text(s string, isError bool) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s, "_meta": meta}}, "isError": isError, "_meta": meta}
}

func call(id json.RawMessage, params json.RawMessage) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
			A, B int64
			N    int    `json:"n"`
			Path string `json:"path"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		send(response{ID: id, Error: &rpcError{-32602, err.Error()}})
		return
	}
	a := p.Arguments
	switch p.Name {
	case "echo":
		r := text(a.Text, false)
		r["structuredContent"] = map[string]any{"len": len(a.Text)}
		send(response{ID: id, Result: r})
	case "add":
		r := text(fmt.Sprint(a.A+a.B), false)
		r["structuredContent"] = map[string]any{"sum": a.A + a.B}
		send(response{ID: id, Result: r})
	case "read_file":
		b, err := os.ReadFile(a.Path)
		if err != nil {
			send(response{ID: id, Result: text("read_file: "+err.Error(), true)})
			return
		}
		send(response{ID: id, Result: text(string(b), false)})
	case "fail":
		send(response{ID: id, Result: text("it failed", true)})
	case "spin":
		n := 0
		for {
			n++
		}
	case "garbage":
		out.WriteString("this is not JSON-RPC\n")
		out.Flush()
	case "big":
		send(response{ID: id, Result: text(strings.Repeat("x", a.N), false)})
	case "die":
		fmt.Fprintln(os.Stderr, "mcpserver: dying as asked")
		os.Exit(3)
	default:
		send(response{ID: id, Error: &rpcError{-32602, fmt.Sprintf("unknown tool %q", p.Name)}})
	}
}

func main() {
	// Lines are read in a goroutine, as the go-sdk reads them: on a stdin
	// that wazero cannot poll, the read blocks the whole guest and the
	// answer is never written (wasmvm/tool's Config.StdinFile).
	lines := make(chan []byte)
	go func() {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<16), 4<<20)
		for in.Scan() {
			lines <- append([]byte(nil), in.Bytes()...)
		}
		close(lines)
	}()
	for line := range lines {
		var r request
		if err := json.Unmarshal(line, &r); err != nil {
			send(response{ID: json.RawMessage("null"), Error: &rpcError{-32700, "parse error"}})
			continue
		}
		if len(r.ID) == 0 {
			continue // a notification: notifications/initialized and the like
		}
		switch r.Method {
		case "initialize":
			send(response{ID: r.ID, Result: map[string]any{
				"protocolVersion": "2025-11-25",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "mcpserver", "version": "0.1"},
			}})
		case "ping":
			send(response{ID: r.ID, Result: map[string]any{}})
		case "tools/list":
			send(response{ID: r.ID, Result: map[string]any{"tools": tools, "_meta": meta}})
		case "tools/call":
			call(r.ID, r.Params)
		default:
			send(response{ID: r.ID, Error: &rpcError{-32601, "method not found: " + r.Method}})
		}
	}
}
