// runlog.go holds the run log: each invocation's typed events
// (events.Event), numbered from 1 without gaps, stored with the run so that
// a reader can start from any seq, and handed to OnEvent as they are stored.
// Every free text is stripped, redacted and capped before it is made.
//
// A slice's emits are stored in the transaction that stores the checkpoint
// after it, and an act's call with its attempt: a slice re-run after a crash
// does not log them twice. The ledger, not the log, is the authority on
// effects. Content published after the run ended is dropped.

package host

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/store"
)

func runEventKey(inv string, seq uint64) store.Key { return store.K("ev", inv, seq) }

// logCounter is where an invocation's log stands: its last seq, and the
// bytes of its events as stored (Bounds.Events), kept with it so that a
// resumed or recovered run goes on from its count. A counter stored before
// Bytes was counted reads 0: such a run counts from there.
type logCounter struct {
	Next  uint64 `cbor:"1,keyasint"`
	Bytes uint64 `cbor:"2,keyasint,omitempty"`
}

// appendLog numbers and stores events of one invocation within tx, and
// returns those stored: content is dropped once the invocation has ended.
func appendLog(tx *store.Tx, inv string, evs []events.Event) ([]events.Event, error) {
	kept, _, err := appendLogCount(tx, inv, evs)
	return kept, err
}

// appendLogCount is appendLog that also returns the log's counter before
// and after: the bytes it holds are what Bounds.Events caps.
func appendLogCount(tx *store.Tx, inv string, evs []events.Event) ([]events.Event, [2]logCounter, error) {
	var c logCounter
	if _, err := tx.Get(store.K("evn", inv), &c); err != nil {
		return nil, [2]logCounter{}, err
	}
	if len(evs) == 0 {
		return nil, [2]logCounter{c, c}, nil
	}
	kept, after, err := appendCounted(tx, inv, c, evs)
	return kept, [2]logCounter{c, after}, err
}

func appendCounted(tx *store.Tx, inv string, c logCounter, evs []events.Event) ([]events.Event, logCounter, error) {
	i, err := getInv(tx, inv)
	if err != nil {
		return nil, c, err
	}
	var kept []events.Event
	for _, ev := range evs {
		if i.Status.Terminal() && ev.Content() {
			continue
		}
		c.Next++
		ev.Run, ev.Seq = inv, c.Next
		if err := ev.Check(); err != nil {
			return nil, c, err
		}
		b, err := store.Encode(ev)
		if err != nil {
			return nil, c, fmt.Errorf("record %s: encode: %w", runEventKey(inv, c.Next), err)
		}
		if err := tx.PutRaw(runEventKey(inv, c.Next), b); err != nil {
			return nil, c, err
		}
		c.Bytes += uint64(len(b))
		kept = append(kept, ev)
	}
	return kept, c, tx.Put(store.K("evn", inv), c)
}

// log stores events in a transaction of their own and hands them on.
func (e *Engine) log(inv string, evs ...events.Event) error {
	return e.logWith(e.Store.Retry, inv, evs)
}

// logEnding is log for the events of work that stops (a run's end, a
// pause): like the writes that stop it, they may use the disk reserve, so
// that an ending applied is never reported failed for want of its events.
func (e *Engine) logEnding(inv string, evs ...events.Event) error {
	return e.logWith(e.Store.RetryInReserve, inv, evs)
}

func (e *Engine) logWith(retry func(store.Durability, func(*store.Tx) error) error, inv string, evs []events.Event) error {
	var kept []events.Event
	err := retry(store.Buffered, func(tx *store.Tx) error {
		var err error
		kept, err = appendLog(tx, inv, evs)
		return err
	})
	if err == nil {
		e.published(kept)
	}
	return err
}

// published hands stored events to the run's backlog and to OnEvent, and
// on a store shared by hosts tells the others that the tree changed.
func (e *Engine) published(evs []events.Event) {
	for _, ev := range evs {
		e.Backlog(ev.Run).Add(ev)
		if e.OnEvent != nil {
			e.OnEvent(ev)
		}
	}
	if len(evs) > 0 {
		e.TellChanged(evs[0].Run)
	}
}

// The builders. Each makes one event, its text cleaned.

func (e *Engine) redactor() *redact.Redactor {
	if e.Redactor != nil {
		return e.Redactor
	}
	return redact.Default
}

// clean is events.Clean with the engine's redactor.
func (e *Engine) clean(s string, n int) string { return events.Clean(e.redactor(), s, n) }

func (e *Engine) note(note, summary string) events.Event {
	return events.Event{At: e.Clock(), Kind: events.KindRunNote, RunNote: &events.RunNote{Note: note, Summary: e.clean(summary, events.SummaryCap)}}
}

func (e *Engine) emitEvent(at int64, name string, data []byte) events.Event {
	text := ""
	if len(data) > 0 {
		text = dataText(data)
	}
	return events.Event{At: at, Kind: events.KindEmit, Emit: &events.Emit{Name: e.clean(name, events.SummaryCap), Data: e.clean(text, events.OutputCap)}}
}

// dataText is a data value as JSON, or what was wrong with it, every string
// in it redacted first: once in JSON, a multi-line text's lines would escape
// the redactor's line rules.
func dataText(b []byte) string {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	j, err := checkpoint.DataToJSON(redactStrings(d))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(j)
}

// redactStrings redacts (known formats only) every string of a data value.
func redactStrings(v any) any {
	switch x := v.(type) {
	case string:
		return redact.String(x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = redactStrings(y)
		}
		return out
	case *checkpoint.Map:
		out := &checkpoint.Map{}
		for i, k := range x.Keys {
			out.Set(redactStrings(k), redactStrings(x.Values[i]))
		}
		return out
	}
	return v
}

// targetKeys are the argument names that say what an act is about, in order.
var targetKeys = []string{"path", "url", "tool", "endpoint", "question", "prog", "name", "query", "key"}

// describe is the one line of a tool_call: the tag and its target.
func describe(op *Operation) string {
	d, err := checkpoint.DecodeData(op.Args)
	if err != nil {
		return op.Tag
	}
	m, ok := d.(*checkpoint.Map)
	if !ok {
		return op.Tag
	}
	for _, k := range targetKeys {
		if v, ok := m.Get(k); ok {
			if s, ok := v.(string); ok {
				return op.Tag + " " + s
			}
		}
	}
	return op.Tag
}

func (e *Engine) callEvents(op *Operation, at int64, grant string) []events.Event {
	id := events.CallID(op.Invocation, op.Ordinal)
	tag := e.clean(op.Tag, 100) // a tag is the prog's text
	return []events.Event{
		{At: at, Kind: events.KindSpanStart, SpanStart: &events.SpanStart{SpanID: "act:" + id, Name: tag}},
		{At: at, Kind: events.KindToolCall, ToolCall: &events.ToolCall{CallID: id, Tool: tag, Description: e.clean(describe(op), events.SummaryCap), Grant: e.clean(grant, events.SummaryCap)}},
	}
}

// textWindow bounds the text of a reply that is cleaned for events: a
// reply may be megabytes, and only the first 8,000 characters are shown.
const textWindow = 64 << 10

// resultText renders an act's reply for the stream: an error as "error
// KIND: MSG"; a tool's result as its output, opened with "exit N:" (or
// "exit STOP:" when it was stopped) unless it exited 0; the text of a file,
// a page or a completion; else the reply as JSON.
func resultText(v any) string {
	m, ok := v.(*checkpoint.Map)
	if !ok {
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := checkpoint.EncodeData(v)
		return dataText(b)
	}
	get := func(k string) (string, bool) {
		x, ok := m.Get(k)
		s, isStr := x.(string)
		return s, ok && isStr
	}
	if code, ok := m.Get("exit_code"); ok {
		out, _ := get("stdout")
		errText, _ := get("stderr")
		stop, _ := get("stop")
		text := out + errText
		switch {
		case stop != "" && stop != "exited":
			detail, _ := get("detail")
			return "exit " + stop + ": " + detail + "\n" + text
		case code != int64(0):
			return fmt.Sprintf("exit %v: %s", code, text)
		}
		return text
	}
	for _, k := range []string{"content", "body"} {
		if s, ok := get(k); ok {
			return s
		}
	}
	b, _ := checkpoint.EncodeData(m)
	return dataText(b)
}

// resultEvents are an act's tool_result, the end of its span, its
// observation, a refusal note and, when the reply says how a model's context
// was assembled, a memory query.
func (e *Engine) resultEvents(op *Operation, o *Outcome, reply []byte) []events.Event {
	id := events.CallID(op.Invocation, op.Ordinal)
	r, err := checkpoint.DecodeReply(reply)
	tag := e.clean(op.Tag, 100)
	res := &events.ToolResult{CallID: id, Tool: tag, OK: true}
	var text string
	var value any
	switch {
	case err != nil:
		res.OK, text = false, "error: "+err.Error()
	case r.Err != nil:
		res.OK, text = false, "error "+r.Err.Kind+": "+r.Err.Msg
	default:
		value = r.Value
		text = resultText(r.Value)
		if m, ok := r.Value.(*checkpoint.Map); ok {
			if _, isTool := m.Get("exit_code"); isTool {
				code, hasCode, failed := events.ParseExitPrefix(text)
				if hasCode {
					res.ExitCode = &code
				}
				res.OK = !failed
			}
		}
	}
	full := len(text)
	if len(text) > textWindow {
		text = strings.ToValidUTF8(text[:textWindow], "") + fmt.Sprintf("\n…[%d more bytes]", full-textWindow)
	}
	res.Summary = events.Summary(e.redactor(), text)
	res.Output = e.clean(text, events.OutputCap)
	at := o.At
	out := []events.Event{{At: at, Kind: events.KindToolResult, ToolResult: res}}
	start := int64(0)
	if op.Attempt != nil {
		start = op.Attempt.At
	}
	status := "ok"
	if !res.OK {
		status = "error"
	}
	out = append(out, events.Event{At: at, Kind: events.KindSpanEnd, SpanEnd: &events.SpanEnd{SpanID: "act:" + id, Name: tag, StartedAt: start, DurationMs: max(at-start, 0), Status: status}})
	obsKind := events.ObsToolResult
	if k, ok := e.Adapters[op.Tag].(Observed); ok {
		obsKind = k.ObservationKind()
	}
	out = append(out, events.Event{At: at, Kind: events.KindObservation, Observation: &events.Observation{
		ObservationID: events.ObservationID(op.Invocation, op.Ordinal), Kind: obsKind,
		Summary: e.clean(tag+": "+res.Summary, events.SummaryCap), Detail: e.clean(text, events.DetailCap)}})
	if r.Err != nil && (r.Err.Kind == "denied" || r.Err.Kind == "limit") {
		out = append(out, e.note(events.NoteRefused, tag+" "+r.Err.Kind+": "+r.Err.Msg))
	}
	if mq := e.memoryQuery(op, value); mq != nil {
		out = append(out, events.Event{At: at, Kind: events.KindMemoryQuery, MemoryQuery: mq})
	}
	return out
}

// Observed is an adapter whose acts are observed as a kind other than
// tool_result (an approval, say).
type Observed interface {
	ObservationKind() string
}

// memoryQuery reads a reply's "context": {admitted, dropped: [{name,
// tokens}]}, the convention by which an adapter (model.chat) reports how it
// assembled a model's context.
func (e *Engine) memoryQuery(op *Operation, v any) *events.MemoryQuery {
	m, ok := v.(*checkpoint.Map)
	if !ok {
		return nil
	}
	c, ok := m.Get("context")
	cm, isMap := c.(*checkpoint.Map)
	if !ok || !isMap {
		return nil
	}
	blocks := func(k string) []events.Block {
		var out []events.Block
		l, _ := cm.Get(k)
		list, _ := l.([]any)
		for _, x := range list {
			bm, ok := x.(*checkpoint.Map)
			if !ok {
				continue
			}
			n, _ := bm.Get("name")
			t, _ := bm.Get("tokens")
			name, _ := n.(string)
			tokens, _ := t.(int64)
			out = append(out, events.Block{Name: e.clean(name, 100), Tokens: tokens})
		}
		return out
	}
	mq := &events.MemoryQuery{QueryID: events.QueryID(op.Invocation, op.Ordinal), Admitted: blocks("admitted"), Dropped: blocks("dropped")}
	for _, b := range mq.Admitted {
		mq.MemoryTokens += b.Tokens
	}
	return mq
}

// hostSecrets takes the host's own secrets out of a reply's strings before
// it is recorded: what the prog sees, the ledger keeps and a replay feeds
// back are the same, and none of them holds a secret the host knows.
func (e *Engine) hostSecrets(v any) any {
	if e.Redactor == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		// A secret may come back encoded: base64 that decodes to one is
		// taken out whole.
		if len(x) >= 8 && len(x)%4 == 0 {
			if b, err := base64.StdEncoding.DecodeString(x); err == nil && e.Redactor.Known(string(b)) != string(b) {
				return redact.Mark
			}
		}
		return e.Redactor.Known(x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = e.hostSecrets(y)
		}
		return out
	case *checkpoint.Map:
		out := &checkpoint.Map{}
		for i, k := range x.Keys {
			out.Set(e.hostSecrets(k), e.hostSecrets(x.Values[i]))
		}
		return out
	}
	return v
}

// statusNote is the note of a drive that left the invocation in a new status.
func (e *Engine) statusNote(out *RunState) []events.Event {
	switch out.Status {
	case Waiting, Joining:
		if out.Status == Waiting && out.Deadline != 0 && IsTimer(out.Awaits) {
			// A timer: nothing to answer, it goes on at its deadline.
			return []events.Event{e.note(events.NoteSleeping, "until "+time.UnixMilli(out.Deadline).UTC().Format(time.RFC3339))}
		}
		return []events.Event{e.note(events.NoteWaiting, "waiting for "+out.Waiting)}
	case Failed, Cancelled:
		msg := out.Status.String()
		if out.Err != nil {
			msg += ": " + out.Err.Kind + ": " + out.Err.Msg
		}
		return []events.Event{e.note(events.NoteStopped, msg)}
	}
	return nil
}

// finalEvents are what a run says as it ends: its answer (when it
// completed), and its verification and outcome. Building them never fails
// the run: a failure is noted as a degraded subsystem.
// answerEvent is a run's answer: its result as text (a string, or a map's
// "answer" string, else JSON).
func (e *Engine) answerEvent(at int64, result []byte) events.Event {
	return events.Event{At: at, Kind: events.KindAnswer, Answer: &events.Answer{Text: e.clean(AnswerText(result), 0)}}
}

// AnswerText is a result as its answer reads: a string itself, a map's
// "answer" string, or else the result as JSON (not yet redacted).
func AnswerText(result []byte) string {
	text := dataText(result)
	if d, err := checkpoint.DecodeData(result); err == nil {
		if s, ok := d.(string); ok {
			text = s
		} else if m, ok := d.(*checkpoint.Map); ok {
			if a, ok := m.Get("answer"); ok {
				if s, ok := a.(string); ok {
					text = s
				}
			}
		}
	}
	return text
}

func (e *Engine) finalEvents(inv string, status Status, result []byte) (out []events.Event) {
	defer func() {
		if p := recover(); p != nil {
			out = []events.Event{e.note(events.NoteDegraded, fmt.Sprintf("runtime_objects: %v", p))}
		}
	}()
	at := e.Clock()
	if status == Completed || status == Conflict {
		out = append(out, e.answerEvent(at, result))
	}
	var results []events.ToolResult
	var degraded []string
	prior, err := e.Events(inv, 1, 0)
	if err != nil {
		degraded = append(degraded, "run_log")
	}
	called := map[string]string{} // call id: the call's one line
	for _, ev := range prior {
		if ev.ToolCall != nil {
			called[ev.ToolCall.CallID] = ev.ToolCall.Description
		}
		if ev.ToolResult != nil {
			results = append(results, *ev.ToolResult)
		}
		if ev.RunNote != nil && ev.RunNote.Note == events.NoteDegraded {
			degraded = append(degraded, strings.SplitN(ev.RunNote.Summary, ":", 2)[0])
		}
	}
	isTest := func(r events.ToolResult) bool {
		name, _, _ := strings.Cut(strings.TrimPrefix(called[r.CallID], r.Tool+" "), " ")
		return isTestTool(name)
	}
	v := events.Verify(inv, status == Completed, results, isTest)
	if v != nil {
		out = append(out, events.Event{At: at, Kind: events.KindVerification, Verification: v})
	}
	st := map[Status]string{Completed: events.OutcomeCompleted, Failed: events.OutcomeFailed, Conflict: events.OutcomeSuperseded, Cancelled: events.OutcomeCancelled}[status]
	out = append(out, events.Event{At: at, Kind: events.KindOutcome, Outcome: events.Conclude(inv, st, v, degraded)})
	return out
}

// isTestTool says whether a tool is a test runner, whose clean exit is a
// test verification: by convention its name is test or ends in -test/_test.
func isTestTool(tool string) bool {
	return tool == "test" || strings.HasSuffix(tool, "-test") || strings.HasSuffix(tool, "_test")
}
