// runlog_test.go checks the run's events: what each act, emit and ending
// logs, seq without gaps across a crash, content dropped after the end, and
// the emission rules of the runtime objects, one test each.

package host

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/store"
)

// toolish answers like tool.run: {exit_code, stop, stdout, stderr}.
type toolish struct{ code int64 }

func (a toolish) Do(_ context.Context, op *Operation) (any, error) {
	m := &checkpoint.Map{}
	m.Set("ok", a.code == 0)
	m.Set("stop", "exited")
	m.Set("exit_code", a.code)
	m.Set("stdout", "line one\nline two\n")
	m.Set("stderr", "")
	return m, nil
}

func kinds(t *testing.T, e *Engine, inv string) ([]events.Event, string) {
	t.Helper()
	evs, err := e.Events(inv, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("seq %d at %d", ev.Seq, i+1)
		}
		ks = append(ks, ev.Kind)
	}
	return evs, strings.Join(ks, " ")
}

func find(evs []events.Event, kind string) *events.Event {
	for i := range evs {
		if evs[i].Kind == kind {
			return &evs[i]
		}
	}
	return nil
}

func TestEventsOfARun(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	out, err := e.Start(context.Background(), "r1", "p", []byte(`emit("step", {n: 1})
return act "calc" {n: 4}`), data(t, "go"), 100_000, 1)
	if err != nil || out.Status != Completed {
		t.Fatalf("%+v %v", out, err)
	}
	evs, ks := kinds(t, e, "r1")
	if ks != "input run_meta emit span_start tool_call tool_result span_end observation answer outcome" {
		t.Fatalf("kinds: %s", ks)
	}
	call, res := find(evs, events.KindToolCall).ToolCall, find(evs, events.KindToolResult).ToolResult
	if call.CallID != "r1#1" || res.CallID != "r1#1" || !res.OK || res.Summary != "40" || call.Grant != "calc" {
		t.Fatalf("call %+v result %+v", call, res)
	}
	if in := find(evs, events.KindInput).Input; in.Text != "go" {
		t.Fatalf("input %+v", in)
	}
	if o := find(evs, events.KindObservation).Observation; o.ObservationID != "obs:r1#1" || o.Kind != events.ObsToolResult {
		t.Fatalf("observation %+v", o)
	}
	// The in-memory window is dropped once the run has ended.
	if live, _ := e.Backlog("r1").Since(0); len(live) != 0 {
		t.Fatalf("backlog of an ended run: %d", len(live))
	}
}

// Live readers in this process see a running run's events, from any seq.
func TestBacklogOfALiveRun(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	e.Start(context.Background(), "r1", "p", []byte(`act "calc" {n: 1}
return await {key: "go"}`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	live, truncated := e.Backlog("r1").Since(3)
	if len(live) != len(evs)-3 || truncated || live[0].Seq != 4 {
		t.Fatalf("backlog: %d of %d, truncated %v", len(live), len(evs), truncated)
	}
}

func TestToolResultOfAnError(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = errAdapter{errors.New("disk on fire")}
	e.Start(context.Background(), "r1", "p", []byte(`try { act "calc" {} } catch err { }
try { act "nope" {} } catch err { }
return 1`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	var results []*events.ToolResult
	refused := 0
	for _, ev := range evs {
		if ev.ToolResult != nil {
			results = append(results, ev.ToolResult)
		}
		if ev.RunNote != nil && ev.RunNote.Note == events.NoteRefused {
			refused++
		}
	}
	if len(results) != 2 || results[0].OK || results[0].Summary != "error failed: disk on fire" || results[1].OK || refused != 1 {
		t.Fatalf("results %+v %+v, %d refusals", results[0], results[1], refused)
	}
}

// The exit prefix: a tool's non-zero exit opens its output with "exit N:",
// and that is what says ok false and the code.
func TestToolResultExitPrefix(t *testing.T) {
	for code, want := range map[int64]string{0: "line one (+1 lines, 18 bytes)", 3: "exit 3: line one (+1 lines, 26 bytes)"} {
		e := engine(t, memStore(t), 1)
		e.Adapters["calc"] = toolish{code}
		e.Start(context.Background(), "r1", "p", []byte(`act "calc" {}`), nil, 100_000, 1)
		evs, _ := kinds(t, e, "r1")
		res := find(evs, events.KindToolResult).ToolResult
		if res.OK != (code == 0) || res.ExitCode == nil || int64(*res.ExitCode) != code || res.Summary != want {
			t.Errorf("exit %d: %+v", code, res)
		}
	}
}

func TestContentAfterTheEndIsDropped(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Start(context.Background(), "r1", "p", []byte(`return 1`), nil, 100_000, 1)
	_, before := kinds(t, e, "r1")
	e.log("r1", e.emitEvent(1, "late", nil), e.note(events.NoteDegraded, "x: late note"))
	_, after := kinds(t, e, "r1")
	if after != before+" run_note" {
		t.Fatalf("before %s\nafter %s", before, after)
	}
}

// Verification comes only from a tool's exit: no tool, no verification.
func TestNoVerificationWithoutEvidence(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	e.Start(context.Background(), "r1", "p", []byte(`return act "calc" {n: 1}`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	if find(evs, events.KindVerification) != nil {
		t.Fatal("verified without evidence")
	}
	if o := find(evs, events.KindOutcome).Outcome; o.Status != events.OutcomeCompleted || o.VerificationID != "" {
		t.Fatalf("outcome %+v", o)
	}
}

func TestVerificationByExitCode(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = toolish{0}
	e.Start(context.Background(), "r1", "p", []byte(`act "calc" {tool: "wc"}; return 1`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	v := find(evs, events.KindVerification).Verification
	o := find(evs, events.KindOutcome).Outcome
	if v.Method != events.MethodExitCode || !v.Passed || o.VerificationID != v.VerificationID {
		t.Fatalf("%+v %+v", v, o)
	}
}

func TestVerificationByTest(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = toolish{0}
	e.Start(context.Background(), "r1", "p", []byte(`act "calc" {tool: "go-test"}; return 1`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	if v := find(evs, events.KindVerification).Verification; v.Method != events.MethodTest {
		t.Fatalf("%+v", v)
	}
}

// A failed act fails the verification, and an unverified outcome is not linked.
func TestFailedActFailsVerification(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = toolish{0}
	e.Adapters["bad"] = toolish{1}
	e.Ward().Grant(AnyProg, "bad")
	e.Start(context.Background(), "r1", "p", []byte(`act "calc" {tool: "wc"}; act "bad" {tool: "grep"}; return 1`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	v, o := find(evs, events.KindVerification).Verification, find(evs, events.KindOutcome).Outcome
	if v.Passed || o.VerificationID != "" || o.Status != events.OutcomeCompleted {
		t.Fatalf("%+v %+v", v, o)
	}
}

func TestOutcomeStatuses(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Start(context.Background(), "r1", "p", []byte(`throw error("x", "no")`), nil, 100_000, 1)
	e.Start(context.Background(), "r2", "p", []byte(`return await {key: "never"}`), nil, 100_000, 1)
	e.Cancel("r2")
	e.Start(context.Background(), "r3", "q", []byte(`return await {key: "go"}`), nil, 100_000, 1)
	e.Start(context.Background(), "r4", "q", []byte(`return 4`), nil, 100_000, 1)
	e.Send(context.Background(), "r3", "go", nil) // r4 moved q on: r3 is stale
	for inv, want := range map[string]string{"r1": events.OutcomeFailed, "r2": events.OutcomeCancelled, "r3": events.OutcomeSuperseded, "r4": events.OutcomeCompleted} {
		evs, _ := kinds(t, e, inv)
		if o := find(evs, events.KindOutcome); o == nil || o.Outcome.Status != want {
			t.Errorf("%s: %+v", inv, o)
		}
	}
}

// Building the objects never fails a run: a run log that cannot be read is
// a degraded subsystem on the outcome.
func TestObjectsDegrade(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Start(context.Background(), "r1", "p", []byte(`return await {key: "go"}`), nil, 100_000, 1)
	e.Store.Update(store.Synced, func(tx *store.Tx) error { return tx.PutRaw(runEventKey("r1", 1), []byte{0xff}) })
	out, err := e.Send(context.Background(), "r1", "go", nil)
	if err != nil || out.Status != Completed {
		t.Fatalf("%+v %v", out, err)
	}
	var o events.Event
	e.Store.View(func(tx *store.Tx) error {
		var c logCounter
		tx.Get(store.K("evn", "r1"), &c)
		_, err := tx.Get(runEventKey("r1", c.Next), &o)
		return err
	})
	if o.Outcome == nil || len(o.Outcome.Degraded) != 1 || o.Outcome.Degraded[0] != "run_log" {
		t.Fatalf("%+v", o.Outcome)
	}
}

// memoryish reports how it assembled a context, as model.chat does.
type memoryish struct{}

func (memoryish) Do(context.Context, *Operation) (any, error) {
	block := func(name string, n int64) *checkpoint.Map {
		b := &checkpoint.Map{}
		b.Set("name", name)
		b.Set("tokens", n)
		return b
	}
	c := &checkpoint.Map{}
	c.Set("admitted", []any{block("system#1", 10), block("user#3", 20)})
	c.Set("dropped", []any{block("user#2", 900)})
	m := &checkpoint.Map{}
	m.Set("content", "hi")
	m.Set("context", c)
	return m, nil
}

func TestMemoryQuery(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = memoryish{}
	e.Start(context.Background(), "r1", "p", []byte(`act "calc" {}`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	mq := find(evs, events.KindMemoryQuery)
	if mq == nil || mq.MemoryQuery.QueryID != "mq:r1#1" || mq.MemoryQuery.MemoryTokens != 30 || len(mq.MemoryQuery.Dropped) != 1 {
		t.Fatalf("%+v", mq)
	}
}

// Seq has no gaps and no repeats across a crash and a resume; a reader from
// seq N gets exactly what came after N.
func TestSeqAcrossACrash(t *testing.T) {
	dir := t.TempDir()
	s, _ := store.Open(store.Options{Dir: dir})
	e, _, _ := Open(s, engine(t, memStore(t), 0).Runtime, func() int64 { return 1 })
	e.Ward().Grant(AnyProg, "calc")
	e.Adapters["calc"] = &recorder{crash: true}
	src := []byte(`emit("a", 1)
let x = act "calc" {n: 1}
emit("b", 2)
return x`)
	dies(func() { e.Start(context.Background(), "r1", "p", src, nil, 100_000, 1) })
	s.Close()
	s, _ = store.Open(store.Options{Dir: dir})
	defer s.Close()
	e, _, _ = Open(s, e.Runtime, func() int64 { return 2 })
	e.Adapters["calc"] = &recorder{}
	if _, err := e.Resume(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Resolve(context.Background(), OpID{"r1", 1}, reply(t, int64(7))); err != nil {
		t.Fatal(err)
	}
	evs, ks := kinds(t, e, "r1") // checks 1, 2, 3, …
	if strings.Count(ks, "tool_call") != 1 || strings.Count(ks, "tool_result") != 1 || !strings.HasSuffix(ks, "answer outcome") {
		t.Fatalf("kinds: %s", ks)
	}
	rest, _ := e.Events("r1", 5, 0)
	if len(rest) != len(evs)-4 || rest[0].Seq != 5 {
		t.Fatalf("from 5: %d events from %d", len(rest), rest[0].Seq)
	}
}

// A multi-line string emitted as data is redacted line by line, not as one
// JSON-escaped line the redactor's line rules cannot see.
func TestEmitDataRedactedByLine(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Start(context.Background(), "r1", "p", []byte(`emit("log", "db:\n  password: hunter2hunter2\n")
return 1`), nil, 100_000, 1)
	evs, _ := kinds(t, e, "r1")
	if em := find(evs, events.KindEmit).Emit; strings.Contains(em.Data, "hunter2") {
		t.Fatalf("emit data %q", em.Data)
	}
}

// A host secret coming back base64-encoded is taken out too.
func TestHostSecretInBase64(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Redactor = redact.New("host-secret-QQ77")
	e.Adapters["calc"] = b64adapter{}
	out, _ := e.Start(context.Background(), "r1", "p", []byte(`return act "calc" {}`), nil, 100_000, 1)
	if got := porttestJSON(t, out.Result); strings.Contains(got, base64.StdEncoding.EncodeToString([]byte("key=host-secret-QQ77"))) {
		t.Fatalf("got %s", got)
	}
}

type b64adapter struct{}

func (b64adapter) Do(context.Context, *Operation) (any, error) {
	return base64.StdEncoding.EncodeToString([]byte("key=host-secret-QQ77")), nil
}
