// mcp_frame.go holds the guard between an MCP client and the SDK's server:
// each line of stdin is checked (size, nesting, JSON, a message's shape,
// initialize first) and a bad one answered here, since the SDK ends the
// session at the first frame it cannot decode.

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// mcpMaxFrame is the longest line taken: a prog's largest input with
	// the call around it.
	mcpMaxFrame = maxInput + 1<<20
	// mcpMaxDepth is the deepest nesting taken: a prog's deepest input
	// (machine.MaxDepth) inside params.arguments.input, with room to spare.
	mcpMaxDepth = 128
	// mcpSessionless is the first protocol version whose requests carry
	// their own initialization in _meta (SEP-2575), so need no initialize.
	mcpSessionless = "2026-07-28"
)

// The ways a frame is refused; frameError carries one with its reply.
var (
	errFrameSize    = fmt.Errorf("frame over %d bytes", mcpMaxFrame)
	errFrameDepth   = fmt.Errorf("frame nested over %d deep", mcpMaxDepth)
	errFrameJSON    = errors.New("not JSON")
	errFrameBatch   = errors.New("batches are not supported: send one message a line")
	errFrameShape   = errors.New("not a JSON-RPC 2.0 request")
	errFrameEarly   = errors.New("the session is not initialized: send initialize first")
	errFrameDecoded = errors.New("the MCP SDK cannot decode it")
)

// frameError is a frame refused: why, and the id to answer (null when
// the frame has none that can be echoed, nil when it gets no answer: a
// notification, or a response to the server).
type frameError struct {
	kind   error
	detail string
	id     json.RawMessage
}

func (e *frameError) Error() string {
	if e.detail == "" {
		return e.kind.Error()
	}
	return e.kind.Error() + ": " + e.detail
}

func (e *frameError) Unwrap() error { return e.kind }

// code is the JSON-RPC code of the reply.
func (e *frameError) code() int64 {
	if e.kind == errFrameJSON {
		return jsonrpc.CodeParseError
	}
	return jsonrpc.CodeInvalidRequest
}

var nullID = json.RawMessage("null")

// mcpGuard passes the client's good frames on to the SDK and answers the
// others itself.
type mcpGuard struct {
	log         io.Writer
	out         *frameWriter   // stdout, shared with the SDK
	sdk         *io.PipeWriter // what the SDK reads
	done        <-chan struct{}
	initialized bool
}

// run reads the client's lines until EOF, then lets the SDK see EOF.
func (g *mcpGuard) run(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, over, err := readFrame(r, mcpMaxFrame)
		if over || len(bytes.TrimSpace(line)) > 0 {
			if werr := g.take(line, over); werr != nil {
				g.sdk.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				g.sdk.Close()
			} else {
				g.sdk.CloseWithError(err)
			}
			return
		}
	}
}

// take passes one line on or answers it. Its error is stdout's or the
// SDK's having gone: the session is over.
func (g *mcpGuard) take(line []byte, over bool) error {
	var req *jsonrpc.Request
	frame, answer, err := checkFrame(line, over)
	if err == nil {
		req, err = g.admit(frame, answer)
	}
	var fe *frameError
	if errors.As(err, &fe) {
		fmt.Fprintf(g.log, "mcp: refused a frame: %v\n", fe)
		if fe.id == nil {
			return nil
		}
		b, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   jsonrpc.Error   `json:"error"`
		}{"2.0", fe.id, jsonrpc.Error{Code: fe.code(), Message: fe.Error()}})
		_, err := g.out.Write(append(b, '\n'))
		return err
	}
	if req == nil || req.Method != "initialize" || !req.IsCall() || g.initialized {
		_, err := g.sdk.Write(append(frame, '\n'))
		return err
	}
	// The SDK answers initialize before it reads on; so does the guard,
	// to know whether what follows comes after it.
	answered := g.out.await(req.ID)
	if _, err := g.sdk.Write(append(frame, '\n')); err != nil {
		return err
	}
	select {
	case ok := <-answered:
		g.initialized = ok
		return nil
	case <-g.done:
		return io.ErrClosedPipe
	}
}

// admit decodes a well-formed frame as the SDK will, and refuses a request
// the SDK would answer without a proper code: one before initialize. The
// answer is the id a refusal is answered with (nil: none).
func (g *mcpGuard) admit(frame, answer []byte) (*jsonrpc.Request, error) {
	msg, err := jsonrpc.DecodeMessage(frame)
	if err != nil {
		return nil, &frameError{kind: errFrameDecoded, detail: err.Error(), id: answer}
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || g.initialized || !req.IsCall() {
		return req, nil
	}
	switch {
	case req.Method == "initialize", req.Method == "ping", sessionless(req.Params):
		return req, nil
	}
	return nil, &frameError{kind: errFrameEarly, detail: strconv.Quote(req.Method), id: answer}
}

// sessionless reports whether params carry a protocol version that needs
// no initialize; the SDK reads the rest of them.
func sessionless(params json.RawMessage) bool {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= mcpSessionless
}

// checkFrame checks a line as JSON-RPC 2.0 and gives it back rebuilt from
// the members it was checked by, so that the SDK reads what was checked (not
// a duplicate member, not one named in another case), with the id a request
// is answered by (nil for a notification or a response).
func checkFrame(line []byte, over bool) (frame, answer []byte, err error) {
	line = bytes.TrimSpace(line)
	switch {
	case over:
		return nil, nil, &frameError{kind: errFrameSize, id: nullID}
	case jsonDepth(line) > mcpMaxDepth:
		return nil, nil, &frameError{kind: errFrameDepth, id: nullID}
	case !utf8.Valid(line):
		return nil, nil, &frameError{kind: errFrameJSON, detail: "not UTF-8", id: nullID}
	case !json.Valid(line):
		var v any
		err := json.Unmarshal(line, &v)
		return nil, nil, &frameError{kind: errFrameJSON, detail: fmt.Sprint(err), id: nullID}
	case line[0] == '[':
		return nil, nil, &frameError{kind: errFrameBatch, id: nullID}
	case line[0] != '{':
		return nil, nil, &frameError{kind: errFrameShape, detail: "not an object", id: nullID}
	}
	m, err := members(line)
	if err != nil {
		return nil, nil, &frameError{kind: errFrameShape, detail: err.Error(), id: nullID}
	}
	rawID, hasID := m["id"]
	id, idErr := frameID(rawID)
	method, hasMethod := m["method"]
	var name string
	if hasMethod && json.Unmarshal(method, &name) != nil {
		return nil, nil, &frameError{kind: errFrameShape, detail: "its method is not a string", id: idOrNull(id)}
	}
	refuse := func(detail string) error {
		// A notification (a method, no id) or a response gets no answer.
		if !hasID && hasMethod {
			return &frameError{kind: errFrameShape, detail: detail}
		}
		_, result := m["result"]
		_, failure := m["error"]
		if !hasMethod && (result || failure) {
			return &frameError{kind: errFrameShape, detail: detail}
		}
		return &frameError{kind: errFrameShape, detail: detail, id: idOrNull(id)}
	}
	if hasID && idErr != nil {
		return nil, nil, refuse(idErr.Error())
	}
	var version string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return nil, nil, refuse(`its jsonrpc is not "2.0"`)
	}
	out := map[string]json.RawMessage{"jsonrpc": m["jsonrpc"]}
	if hasID {
		out["id"] = id
	}
	if !hasMethod {
		result, hasResult := m["result"]
		failure, hasError := m["error"]
		switch {
		case !hasID:
			return nil, nil, refuse("no method and no id")
		case hasResult == hasError:
			return nil, nil, refuse("no method, and not a response (a result or an error)")
		case hasResult:
			out["result"] = result
		default:
			out["error"] = failure
		}
		frame, err = json.Marshal(out)
		return frame, nil, err
	}
	out["method"] = method
	switch params, ok := m["params"]; {
	case !ok || string(params) == "null":
	case params[0] == '{' || params[0] == '[':
		out["params"] = params
	default:
		return nil, nil, refuse("its params are not an object")
	}
	if frame, err = json.Marshal(out); hasID {
		answer = id
	}
	return frame, answer, err
}

// members are a JSON object's members, each named once.
func members(obj []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, ok := m[k]; ok {
			return nil, fmt.Errorf("member %q given twice", k)
		}
		m[k] = v
	}
	return m, nil
}

// frameID is an id as MCP allows it, a string or an integer (one a float64
// holds exactly, as the SDK reads it), in its plain form.
func frameID(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return raw, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return nil, fmt.Errorf("its id %.40s is not a string or an integer", raw)
	}
	return strconv.AppendInt(nil, n, 10), nil
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return nullID
	}
	return id
}

// readFrame reads a line, without its end, of at most max bytes; a longer
// one is read to its end and dropped (over).
func readFrame(r *bufio.Reader, max int) (line []byte, over bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !over && len(line)+len(chunk) <= max+2 { // room for \r\n
			line = append(line, chunk...)
		} else {
			over, line = true, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		return line, over || len(line) > max, err
	}
}

// frameWriter is stdout, written a frame at a time by the SDK and by the
// guard; it tells the guard when a response it awaits is written.
type frameWriter struct {
	mu       sync.Mutex
	w        io.Writer
	awaited  jsonrpc.ID
	answered chan bool // whether the response awaited is a result
}

// await is told whether the response to id is a result, once written.
func (w *frameWriter) await(id jsonrpc.ID) <-chan bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.awaited, w.answered = id, make(chan bool, 1)
	return w.answered
}

func (w *frameWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.w.Write(p)
	if w.answered != nil {
		if msg, derr := jsonrpc.DecodeMessage(bytes.TrimSpace(p)); derr == nil {
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID == w.awaited {
				w.answered <- err == nil && r.Error == nil
				w.answered = nil
			}
		}
	}
	return n, err
}
