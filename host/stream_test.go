// stream_test.go checks what an adapter streams: coalesced into a few
// events, cut only at breaks so that a secret is never split between two,
// and logged with the act's call id between its call and its result.

package host

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
)

// shown collects what a streamer shows.
type shown struct {
	mu     sync.Mutex
	pieces []string
}

func (s *shown) show(text string) {
	s.mu.Lock()
	s.pieces = append(s.pieces, text)
	s.mu.Unlock()
}

func (s *shown) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.pieces...)
}

func TestStreamCoalesces(t *testing.T) {
	var got shown
	st := &streamer{show: got.show, every: 40 * time.Millisecond}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20) + "end"
	var want strings.Builder
	n := 0
	for i := 0; i < len(text); i += 3 { // pieces that cut words
		st.add(text[i:min(i+3, len(text))])
		n++
		time.Sleep(time.Millisecond)
	}
	want.WriteString(text)
	st.end()
	st.add("after the end")
	pieces := got.all()
	if j := strings.Join(pieces, ""); j != want.String() {
		t.Fatalf("shown %q, want %q", j, want.String())
	}
	// 294 pieces over some 300 ms: a handful of events, not one a piece.
	if len(pieces) > n/4 {
		t.Fatalf("%d events for %d pieces: not coalesced", len(pieces), n)
	}
	for _, p := range pieces[:len(pieces)-1] {
		if !strings.HasSuffix(p, " ") {
			t.Fatalf("an event ends mid-word: %q", p)
		}
	}
}

// A secret streamed a character at a time, across many flushes, is whole in
// one event, so redaction takes it out.
func TestStreamNeverSplitsASecret(t *testing.T) {
	const key = "sk-live-0123456789abcdefghijklmnopqrstuv"
	r := redact.New(key)
	var got shown
	st := &streamer{show: func(s string) { got.show(r.String(s)) }, every: time.Nanosecond}
	text := "the key is " + key + " and\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\ndone"
	for _, c := range text {
		st.add(string(c))
	}
	st.end()
	all := strings.Join(got.all(), "")
	if strings.Contains(all, "0123456789") || strings.Contains(all, "MIIEvQ") {
		t.Fatalf("the secrets can be read across the events: %q", got.all())
	}
	if n := len(got.all()); n < 5 {
		t.Fatalf("%d events: the test streamed too little to mean anything", n)
	}
}

// A long text with no break is shown anyway once it is long.
func TestStreamLongWord(t *testing.T) {
	var got shown
	st := &streamer{show: got.show, every: time.Nanosecond}
	for range 3 * streamHold / 64 {
		st.add(strings.Repeat("x", 64))
	}
	if len(got.all()) == 0 {
		t.Fatalf("%d characters without a break, none shown", 3*streamHold)
	}
	st.end()
}

// sayer is an adapter that streams its reply before it returns it.
type sayer struct{ calls int }

func (a *sayer) Do(ctx context.Context, op *Operation) (any, error) {
	a.calls++
	say := Stream(ctx)
	for _, w := range []string{"Hello ", "there, ", "sk-test-secret-value-1234567890 ", "done."} {
		say(w)
	}
	return "Hello there, done.", nil
}

func TestStreamEventsInTheLog(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	e.Redactor = redact.New("sk-test-secret-value-1234567890")
	a := &sayer{}
	e.Adapters["say"] = a
	if _, err := e.Ward().Grant(AnyProg, "say"); err != nil {
		t.Fatal(err)
	}
	out, err := e.Start(context.Background(), "inv", "p", []byte(`return act "say" {}`), nil, 1_000_000, 7)
	if err != nil || out.Status != Completed {
		t.Fatalf("%+v %v", out, err)
	}
	evs, err := e.Events("inv", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	call, result := -1, -1
	for i, ev := range evs {
		switch ev.Kind {
		case events.KindToolCall:
			call = i
		case events.KindToolResult:
			result = i
		case events.KindAssistant:
			if ev.Assistant.CallID != events.CallID("inv", 1) || i < call || result >= 0 {
				t.Fatalf("assistant event %+v out of place (call at %d, result at %d)", ev.Assistant, call, result)
			}
			said.WriteString(ev.Assistant.Text)
		}
	}
	if got := said.String(); !strings.HasPrefix(got, "Hello there, ") || strings.Contains(got, "sk-test") || !strings.HasSuffix(got, "done.") {
		t.Fatalf("streamed %q", got)
	}

	if a.calls != 1 {
		t.Fatalf("adapter called %d times", a.calls)
	}
}
