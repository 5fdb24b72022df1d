// agent_test.go runs testdata/progs/agent.rune through the engine with every
// act family registered, against a scripted OpenAI-compatible server on
// loopback and the real test tools.

package acts_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
)

// agentProg is testdata/progs/agent.rune with the modules it imports.
func agentProg(t *testing.T) []byte {
	src, err := modules.Load(filepath.Join(testtools.Root(), "testdata/progs/agent.rune"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestAgent(t *testing.T) {
	src := agentProg(t)
	srv := modeltest.Script("sk-agent-key",
		modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "wc", Arguments: `{"stdin": "the quick brown fox"}`}}},
		modeltest.Reply{Content: "Let me check with grep too.", ToolCalls: []modeltest.ToolCall{
			{ID: "call_2", Name: "grep", Arguments: `{"args": ["o"], "stdin": "the quick brown fox"}`},
			{ID: "call_3", Name: "wc", Arguments: `{"stdin": `}}}, // not JSON
		modeltest.Reply{Content: "4 words"})
	defer srv.Close()
	toolDir := t.TempDir()
	for _, n := range []string{"wc", "grep"} {
		os.WriteFile(filepath.Join(toolDir, n+".wasm"), testtools.Build(t, n), 0o644)
	}
	e := acttest.Engine(t, nil)
	closer := acts.Register(e, acts.Config{ToolDir: toolDir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"),
		Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1", Model: "scripted", Key: "sk-agent-key"}}})
	defer closer()
	acttest.Grant(t, e, "model.chat:default", "tool.run:wc") // grep is installed, not granted
	var emits []string
	e.OnEmit = func(_ string, em host.Emit) { emits = append(emits, em.Kind+" "+acttest.JSON(t, em.Data)) }
	in := acttest.Data(t, `{"task": "How many words in: the quick brown fox?"}`)
	out, err := e.Start(context.Background(), "r1", "agent", src, in, 10_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != host.Completed || acttest.JSON(t, out.Result) != `{"answer":"4 words","turns":3}` {
		t.Fatalf("got %+v %s", out, out.Err)
	}
	if srv.Calls() != 3 {
		t.Fatalf("%d model calls, want 3", srv.Calls())
	}
	// Every request offers both tools, as functions with their schemas.
	for i, b := range srv.Bodies() {
		var body struct {
			Tools []struct {
				Type     string
				Function struct {
					Name       string
					Parameters map[string]any
				}
			}
		}
		json.Unmarshal([]byte(b), &body)
		if len(body.Tools) != 2 || body.Tools[0].Type != "function" || body.Tools[0].Function.Name != "wc" || body.Tools[1].Function.Name != "grep" ||
			body.Tools[1].Function.Parameters["required"] == nil {
			t.Errorf("request %d's tools: %s", i+1, b)
		}
	}
	// Each tool's result, or its error, goes back as a tool message
	// answering its call, after the assistant message that made the calls.
	type toolMsg struct{ id, content string }
	tail := func(i, n int) []toolMsg {
		m := srv.Requests[i].Messages
		var out []toolMsg
		for _, msg := range m[len(m)-n:] {
			if msg.Role != "tool" {
				t.Errorf("request %d: %+v is not a tool message", i+1, msg)
			}
			out = append(out, toolMsg{msg.ToolCallID, msg.Content})
		}
		if a := m[len(m)-n-1]; a.Role != "assistant" || len(a.ToolCalls) != n || a.ToolCalls[0].Type != "function" {
			t.Errorf("request %d: the calls are not sent back before their results: %+v", i+1, a)
		}
		return out
	}
	if got := tail(1, 1); !reflect.DeepEqual(got, []toolMsg{{"call_1", "exit 0: 0 4 19\n"}}) {
		t.Errorf("request 2's tool messages: %q", got)
	}
	if got := tail(2, 2); !reflect.DeepEqual(got, []toolMsg{{"call_2", "error denied: tool grep is not granted (runehost grant --prog agent tool.run:grep)"},
		{"call_3", "error: the arguments are not JSON (invalid JSON: unexpected end of input)"}}) {
		t.Errorf("request 3's tool messages: %q", got)
	}
	if a := srv.Requests[2].Messages[4]; a.Content != "Let me check with grep too." || a.ToolCalls[1].Function.Arguments != `{"stdin": ` {
		t.Errorf("the second turn's assistant message: %+v", a)
	}
	if got := strings.Join(emits, "\n"); !strings.Contains(got, `agent.tool {"turn":2,"name":"grep","id":"call_2","error":true}`) ||
		!strings.HasSuffix(got, `answer {"turns":3,"stopped":"answer"}`) {
		t.Errorf("emits:\n%s", got)
	}
	// Resuming the finished run asks nothing of the model again.
	if _, err := e.Resume(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	if srv.Calls() != 3 {
		t.Fatalf("the model was called again: %d", srv.Calls())
	}
}

// dying is an adapter that kills its goroutine (as if the host died) the
// first time it is called, after its attempt was recorded.
type dying struct {
	*tools.Adapter
	died *bool
}

func (d dying) Do(ctx context.Context, op *host.Operation) (any, error) {
	if !*d.died {
		*d.died = true
		runtime.Goexit()
	}
	return d.Adapter.Do(ctx, op)
}

// The host dies while the agent runs a tool; after the restart, the model's
// recorded reply is replayed, never asked for again, and the tool (which
// could write nothing) is run again by reconciliation.
func TestAgentSurvivesACrash(t *testing.T) {
	src := agentProg(t)
	srv := modeltest.Script("", modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "wc", Arguments: `{"stdin": "a b"}`}}},
		modeltest.Reply{Content: "2"})
	defer srv.Close()
	toolDir := t.TempDir()
	os.WriteFile(filepath.Join(toolDir, "wc.wasm"), testtools.Build(t, "wc"), 0o644)
	dir := t.TempDir()
	cfg := acts.Config{ToolDir: toolDir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"),
		Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	open := func() (*host.Engine, func()) {
		e, done := acttest.Open(t, dir)
		closer := acts.Register(e, cfg)
		return e, func() { closer(); done() }
	}
	e, done := open()
	acttest.Grant(t, e, "model.chat:default", "tool.run:wc")
	died := false
	e.Adapters["tool.run"] = dying{e.Adapters["tool.run"].(*tools.Adapter), &died}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		e.Start(context.Background(), "r1", "agent", src, acttest.Data(t, `{"task": "count"}`), 10_000_000, 1)
	}()
	<-finished
	done()
	if !died || srv.Calls() != 1 {
		t.Fatalf("died %v, %d model calls", died, srv.Calls())
	}
	e, done = open()
	defer done()
	out, err := e.RunTree(context.Background(), "r1")
	if err != nil || out.Status != host.Completed || acttest.JSON(t, out.Result) != `{"answer":"2","turns":2}` {
		t.Fatalf("after the restart: %+v %v", out, err)
	}
	if srv.Calls() != 2 {
		t.Fatalf("%d model calls, want 2: a recorded reply was asked for again", srv.Calls())
	}
	if m := srv.Requests[1].Messages; m[len(m)-1].Role != "tool" || m[len(m)-1].Content != "exit 0: 0 2 3\n" {
		t.Fatalf("the tool run again after the restart said %+v", m[len(m)-1])
	}
}
