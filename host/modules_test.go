// modules_test.go: a prog with imports runs from the source set it was
// admitted with, and a changed import is refused as a changed source is.

package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// importing is a prog that imports lib/a.rune, whose k() gives k.
func importing(k string) []byte {
	return modules.Encode(&modules.Set{Main: "p.rune", Files: map[string][]byte{
		"p.rune":     []byte("import \"lib/a.rune\" as a\nlet v = await {key: \"go\"}\nreturn a.k() + v\n"),
		"lib/a.rune": []byte("fn k() { return " + k + " }\n"),
	}})
}

func TestImportsBoundToTheRun(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	v1 := importing("10")
	out, err := e.Start(context.Background(), "r1", "p", v1, nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("start: %+v %v", out, err)
	}
	cp := mustCP(t, e, "r1")

	// A checkpoint refuses a source set whose import changed, with a clear error.
	_, err = e.Migrate("r1", cp, importing("20"), true)
	if !errors.Is(err, ErrBadReplacement) || !strings.Contains(err.Error(), "one of its modules changed") {
		t.Fatalf("a changed import: %v", err)
	}
	if _, err := e.Migrate("r1", cp, v1, true); err != nil {
		t.Fatalf("the same set: %v", err)
	}

	// After a restart (a runtime that has loaded nothing) the run goes on
	// with the set it was admitted with, from the store.
	e2 := engine(t, s, 2)
	out, err = e2.Send(context.Background(), "r1", "go", data(t, int64(5)))
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "15" {
		t.Fatalf("after a restart: %+v %v", out, err)
	}
}

// agentTurns is how many turns each run of BenchmarkStdAgentLoop makes.
const agentTurns = 8

// agentModel is a model.chat that calls the tool add until the last turn.
type agentModel struct{}

func (agentModel) Do(_ context.Context, op *Operation) (any, error) {
	if op.Ordinal >= agentTurns {
		return checkpoint.DataFromJSON([]byte(`{"content": "done", "tool_calls": []}`))
	}
	return checkpoint.DataFromJSON(fmt.Appendf(nil, `{"content": "", "tool_calls": [{"id": "c%d", "name": "add", "arguments": {"a": %d, "b": 1}}]}`, op.Ordinal, op.Ordinal))
}

// BenchmarkStdAgentLoop measures the host's overhead per turn of
// std/agent.rune's loop through the engine, on a store on disk: the slice up
// to model.chat, its checkpoint and attempt (synced), a model that answers at
// once, the outcome, and the Rune tool the reply calls.
func BenchmarkStdAgentLoop(b *testing.B) {
	s, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	e.Ward().Grant(AnyProg, "model.chat")
	e.Adapters["model.chat"] = agentModel{}
	std, _ := modules.Std("std/agent.rune")
	src := modules.Encode(&modules.Set{Main: "p.rune", Files: map[string][]byte{
		"p.rune": []byte(`import "std/agent.rune" as agent
let tools = {add: {description: "Add", parameters: {type: "object", properties: {a: {type: "number"}, b: {type: "number"}}}, run: fn(a) { return a.a + a.b }}}
return agent.run("add things", tools, {max_turns: 20}).turns`),
		"std/agent.rune": std,
	}})
	b.ResetTimer()
	for i := range b.N {
		out, err := e.Start(context.Background(), fmt.Sprintf("r%d", i+1), "p", src, nil, 1<<40, 1)
		if err != nil || out.Status != Completed {
			b.Fatalf("%+v %v", out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*agentTurns), "µs/turn")
}
