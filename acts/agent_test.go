// agent_test.go runs testdata/progs/agent.rune through the engine with every
// act family registered, against a scripted OpenAI-compatible server on
// loopback and the real test tools.

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
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
	"github.com/runehost/runehost/store"
)

func TestAgent(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testtools.Root(), "testdata/progs/agent.rune"))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.New("sk-agent-key",
		`{"tool": "wc", "stdin": "the quick brown fox"}`,
		`let me think`,
		`{"tool": "grep", "args": ["x"]}`,
		`{"answer": "4 words"}`)
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
	if out.Status != host.Completed || acttest.JSON(t, out.Result) != `{"answer":"4 words","turns":4}` {
		t.Fatalf("got %+v %s", out, out.Err)
	}
	if srv.Calls() != 4 {
		t.Fatalf("%d model calls, want 4", srv.Calls())
	}
	last := func(i int) string { m := srv.Requests[i].Messages; return m[len(m)-1].Content }
	for i, want := range []string{"How many words", "Tool wc said: exit 0: 0 4 19", "Reply with a JSON object only", "Tool grep said: error denied: tool grep is not granted"} {
		if !strings.Contains(last(i), want) {
			t.Errorf("request %d ends with %q, want %q", i+1, last(i), want)
		}
	}
	if got := strings.Join(emits, "\n"); !strings.Contains(got, `tool {"result":"exit 0: 0 4 19\n","tool":"wc"}`) && !strings.Contains(got, `"tool":"wc"`) {
		t.Errorf("emits: %s", got)
	}
	// Resuming the finished run asks nothing of the model again.
	if _, err := e.Resume(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	if srv.Calls() != 4 {
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
	src, _ := os.ReadFile(filepath.Join(testtools.Root(), "testdata/progs/agent.rune"))
	srv := modeltest.New("", `{"tool": "wc", "stdin": "a b"}`, `{"answer": "2"}`)
	defer srv.Close()
	toolDir := t.TempDir()
	os.WriteFile(filepath.Join(toolDir, "wc.wasm"), testtools.Build(t, "wc"), 0o644)
	dir := t.TempDir()
	cfg := acts.Config{ToolDir: toolDir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"),
		Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	open := func() (*host.Engine, func()) {
		s, err := store.Open(store.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := host.Open(s, port.NewNative(), func() int64 { return 1 })
		if err != nil {
			t.Fatal(err)
		}
		closer := acts.Register(e, cfg)
		return e, func() { closer(); s.Close() }
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
}
