// toolcall_test.go runs a tool-calling agent through the engine against the
// scripted server, streaming: native tool calls over several turns, its
// text shown as assistant events; and a crash mid-run, after which only the
// replies not yet recorded are asked for.

package acts_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
)

// toolAgent adds numbers with a tool "add" until the model answers.
const toolAgent = `
let tools = [{name: "add", description: "adds two ints", parameters: {type: "object", properties: {a: {type: "integer"}, b: {type: "integer"}}, required: ["a", "b"]}}]
var messages = [{role: "system", content: "Use the tools."}, {role: "user", content: input.task}]
for turn in range(8) {
  let r = act "model.chat" {messages: messages, tools: tools, tool_choice: "auto", stream: true}
  messages = append(messages, {role: "assistant", content: r.content, tool_calls: r.tool_calls})
  if len(r.tool_calls) == 0 {
    return {answer: r.content, turns: turn + 1}
  }
  for c in r.tool_calls {
    var result = nil
    if get(c, "arguments_error", nil) != nil {
      result = "bad arguments: " + c.arguments_error
    } else {
      result = {sum: c.arguments.a + c.arguments.b}
    }
    messages = append(messages, {role: "tool", tool_call_id: c.id, content: result})
  }
}
return {answer: nil, turns: 8}
`

// toolScript is the model's side: a call, two parallel calls (one with
// arguments that are not JSON), a call, the answer; each in another
// server's streaming style.
func toolScript() []modeltest.Reply {
	return []modeltest.Reply{
		{Content: "Let me add. ", ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":1,"b":2}`}}},
		{ToolCalls: []modeltest.ToolCall{{ID: "call_2", Name: "add", Arguments: `{"a":3,"b":4}`}, {ID: "call_3", Name: "add", Arguments: `{"a":`}}, Style: modeltest.Ollama},
		{ToolCalls: []modeltest.ToolCall{{ID: "call_4", Name: "add", Arguments: `{"a":10, "b":20}`}}, Style: modeltest.UsageOnFinish},
		{Content: "The sums are 3, 7 and 30. ", Style: modeltest.Comments},
	}
}

const toolAnswer = `{"answer":"The sums are 3, 7 and 30. ","turns":4}`

// toolMessages is what request i sent after the system and user turns.
func toolMessages(t *testing.T, srv *modeltest.Server, i int) string {
	t.Helper()
	var body struct{ Messages []json.RawMessage }
	if err := json.Unmarshal([]byte(srv.Bodies()[i]), &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range body.Messages[2:] {
		out = append(out, string(m))
	}
	return strings.Join(out, "\n")
}

func TestToolCallingAgent(t *testing.T) {
	srv := modeltest.Script("sk-tool-key", toolScript()...)
	defer srv.Close()
	e := acttest.Engine(t, map[string]host.Adapter{model.Tag: &model.Adapter{Endpoints: map[string]model.Endpoint{
		"default": {Name: "default", BaseURL: srv.URL + "/v1", Model: "scripted", Key: "sk-tool-key"}}}})
	acttest.Grant(t, e, "model.chat:default")
	var mu sync.Mutex
	var shown strings.Builder
	e.OnEvent = func(ev events.Event) {
		if ev.Kind == events.KindAssistant {
			mu.Lock()
			shown.WriteString(ev.Assistant.Text)
			mu.Unlock()
		}
	}
	got, _ := acttest.Run(t, e, toolAgent, mustMap("task", "add 1+2, 3+4, 10+20"))
	if got != toolAnswer {
		t.Fatalf("got %s", got)
	}
	if srv.Calls() != 4 {
		t.Fatalf("%d model calls, want 4", srv.Calls())
	}
	for i, want := range []string{
		``,
		`{"role":"assistant","content":"Let me add. ","tool_calls":[{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]}` + "\n" +
			`{"role":"tool","content":"{\"sum\":3}","tool_call_id":"call_1"}`,
		`{"role":"tool","content":"{\"sum\":7}","tool_call_id":"call_2"}` + "\n" +
			`{"role":"tool","content":"bad arguments: invalid JSON: unexpected end of input","tool_call_id":"call_3"}`,
		`{"role":"assistant","tool_calls":[{"id":"call_4","type":"function","function":{"name":"add","arguments":"{\"a\":10,\"b\":20}"}}]}` + "\n" +
			`{"role":"tool","content":"{\"sum\":30}","tool_call_id":"call_4"}`,
	} {
		if m := toolMessages(t, srv, i); !strings.HasSuffix(m, want) {
			t.Errorf("request %d sent\n%s\nwant it to end with\n%s", i+1, m, want)
		}
	}
	mu.Lock()
	s := shown.String()
	mu.Unlock()
	if s != "Let me add. The sums are 3, 7 and 30. " {
		t.Errorf("assistant events %q", s)
	}
	if !strings.Contains(srv.Bodies()[0], `"stream":true,"stream_options":{"include_usage":true}`) {
		t.Errorf("request %s", srv.Bodies()[0])
	}
}

// crashing is the model adapter of a host that dies once: on the call'th
// act, after the server answered and before the reply is recorded.
type crashing struct {
	*model.Adapter
	n, at int
}

func (c *crashing) Do(ctx context.Context, op *host.Operation) (any, error) {
	v, err := c.Adapter.Do(ctx, op)
	if c.n++; c.n == c.at {
		runtime.Goexit()
	}
	return v, err
}

// The host dies after the agent's second recorded reply, while the third
// is being received: resumed, the agent asks for the third again (the prog
// never saw it; a model call changes nothing in the world, so asking again
// is safe, and costs its tokens twice) and never for the first two.
func TestToolCallingAgentCrash(t *testing.T) {
	script := toolScript()
	srv := modeltest.Script("", append(script[:3:3], script[2:]...)...) // the third, asked twice
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	dir := t.TempDir()
	open := func(ad host.Adapter) (*host.Engine, func()) {
		e, done := acttest.Open(t, dir)
		e.Adapters[model.Tag] = ad
		return e, done
	}
	e, done := open(&crashing{Adapter: a, at: 3})
	acttest.Grant(t, e, "model.chat:default")
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		e.Start(context.Background(), "r1", "agent", []byte(toolAgent), acttest.Data(t, `{"task": "add"}`), 10_000_000, 1)
	}()
	<-finished
	done()
	if srv.Calls() != 3 {
		t.Fatalf("%d model calls before the crash, want 3", srv.Calls())
	}
	e, done = open(a)
	defer done()
	out, err := e.RunTree(context.Background(), "r1")
	if err != nil || out.Status != host.Completed || acttest.JSON(t, out.Result) != toolAnswer {
		t.Fatalf("after the restart: %+v %v", out, err)
	}
	if srv.Calls() != 5 {
		t.Fatalf("%d model calls, want 5: the first two recorded replies asked for again, or the third not", srv.Calls())
	}
	if b := srv.Bodies(); b[2] != b[3] {
		t.Fatalf("the third call was not asked again as it was:\n%s\n%s", b[2], b[3])
	}
}

func mustMap(k string, v any) *checkpoint.Map {
	m := &checkpoint.Map{}
	m.Set(k, v)
	return m
}
