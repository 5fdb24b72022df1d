// tokens_test.go checks the model-token allowance: an act refused before it
// is sent, a reply's usage charged, an over-spend clamped, tokens lent to a
// child and returned, and a crash between reservation and charge.

package host

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// llm is a fake Metered adapter: an act {reserve: R, spend: S} reserves R
// and answers {usage: {total_tokens: S}}. It is effect-free and reconciles
// by never finding an attempt (the contract model.chat keeps).
type llm struct {
	mu    sync.Mutex
	calls int
	crash bool // die (as if the process were killed) inside Do
}

func llmArg(op *Operation, key string) int64 {
	d, _ := checkpoint.DecodeData(op.Args)
	m, _ := d.(*checkpoint.Map)
	v, _ := m.Get(key)
	n, _ := v.(int64)
	return n
}

func (l *llm) Do(_ context.Context, op *Operation) (any, error) {
	l.mu.Lock()
	l.calls++
	crash := l.crash
	l.mu.Unlock()
	if crash {
		runtime.Goexit()
	}
	u := &checkpoint.Map{}
	u.Set("total_tokens", llmArg(op, "spend"))
	m := &checkpoint.Map{}
	m.Set("usage", u)
	if llmArg(op, "bad") != 0 {
		m.Set("usage", "none") // Spent panics on it
	}
	return m, nil
}

func (l *llm) Reserve(op *Operation) (uint64, error) {
	n := llmArg(op, "reserve")
	if n < 0 {
		return 0, fmt.Errorf("reserve must be 0 or more")
	}
	return uint64(n), nil
}

func (l *llm) Spent(reply any) uint64 {
	m, _ := reply.(*checkpoint.Map)
	u, _ := m.Get("usage")
	um, _ := u.(*checkpoint.Map)
	v, _ := um.Get("total_tokens")
	n, _ := v.(int64)
	return uint64(n)
}

func (l *llm) Lookup(context.Context, *Operation) (any, bool, error) { return nil, false, nil }

func (l *llm) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

func llmEngine(t *testing.T, s *store.Store, gen uint64) (*Engine, *llm) {
	e := engine(t, s, gen)
	l := &llm{}
	e.Adapters["llm"] = l
	if _, err := e.Ward().Grant(AnyProg, "llm"); err != nil {
		t.Fatal(err)
	}
	return e, l
}

func tokensOfInv(t *testing.T, e *Engine, inv string) Allowance {
	t.Helper()
	al, err := e.accounts.Tokens(inv)
	if err != nil {
		t.Fatal(err)
	}
	return al
}

const catchLLM = `try { return act "llm" input } catch err { return [err.kind, err.msg] }`

func llmInput(t *testing.T, reserve, spend int64) []byte {
	m := &checkpoint.Map{}
	m.Set("reserve", reserve)
	m.Set("spend", spend)
	return data(t, m)
}

// An act that would hold more than is left is refused with kind "limit",
// naming the figures, and the adapter is never called.
func TestTokensRefusedBeforeSent(t *testing.T) {
	e, l := llmEngine(t, memStore(t), 1)
	ctx := WithTokens(context.Background(), 100)
	out, err := e.Start(ctx, "r1", "p", []byte(catchLLM), llmInput(t, 101, 1), 1_000_000, 1)
	if err != nil || out.Status != Completed {
		t.Fatalf("got %+v %v", out, err)
	}
	got := porttestJSON(t, out.Result)
	if !strings.HasPrefix(got, `["limit",`) || !strings.Contains(got, "may spend 101 model tokens") || !strings.Contains(got, "has 100 left") {
		t.Fatalf("got %s", got)
	}
	if l.count() != 0 {
		t.Fatalf("the adapter was called %d times", l.count())
	}
	if al := tokensOfInv(t, e, "r1"); al != (Allowance{Limit: 100}) {
		t.Fatalf("tokens %+v", al)
	}
	op, _ := e.ledger.Get(OpID{"r1", 1})
	if op.Attempt.Executor != "tokens" || op.Attempt.Tokens != 0 {
		t.Fatalf("attempt %+v", op.Attempt)
	}
	// A limit of 0 allows no model calls; the default allows some.
	if out, _ := e.Start(WithTokens(context.Background(), 0), "r2", "p", []byte(catchLLM), llmInput(t, 1, 1), 1_000_000, 1); !strings.HasPrefix(porttestJSON(t, out.Result), `["limit",`) || !strings.Contains(porttestJSON(t, out.Result), "given none: run it with --tokens N") {
		t.Fatalf("limit 0: %s", porttestJSON(t, out.Result))
	}
	if out, _ := e.Start(context.Background(), "r3", "p", []byte(catchLLM), llmInput(t, 1000, 10), 1_000_000, 1); out.Status != Completed || tokensOfInv(t, e, "r3") != (Allowance{Limit: DefaultTokens, Charged: 10}) {
		t.Fatalf("default: %s %+v", porttestJSON(t, out.Result), tokensOfInv(t, e, "r3"))
	}
}

// What the reply says it spent is charged; the rest of the reservation
// returns, so the next act can hold it.
func TestTokensChargedFromSpent(t *testing.T) {
	e, l := llmEngine(t, memStore(t), 1)
	src := `var n = 0
for i in range(3) { let r = act "llm" {reserve: 400, spend: 100}; n += r.usage.total_tokens }
return n`
	out, err := e.Start(WithTokens(context.Background(), 600), "r1", "p", []byte(src), nil, 1_000_000, 1)
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "300" {
		t.Fatalf("got %+v %v", out, err)
	}
	if al := tokensOfInv(t, e, "r1"); al != (Allowance{Limit: 600, Charged: 300}) || l.count() != 3 {
		t.Fatalf("tokens %+v, %d calls", al, l.count())
	}
	// An adapter whose Spent panics on a reply is charged its reservation.
	out, err = e.Start(WithTokens(context.Background(), 600), "r2", "p", []byte(`return act "llm" {reserve: 250, spend: 1, bad: 1}`), nil, 1_000_000, 1)
	if err != nil || out.Status != Completed || tokensOfInv(t, e, "r2") != (Allowance{Limit: 600, Charged: 250}) {
		t.Fatalf("got %+v %v, tokens %+v", out, err, tokensOfInv(t, e, "r2"))
	}
	in, err := e.Inspect("r1")
	if err != nil || in.Tokens != (Allowance{Limit: 600, Charged: 300}) {
		t.Fatalf("inspect %+v %v", in, err)
	}
}

// Spending past the reservation is charged up to the limit, never past it,
// with a warning.
func TestTokensOverSpendClamps(t *testing.T) {
	e, _ := llmEngine(t, memStore(t), 1)
	var warned []string
	e.OnWarn = func(_, msg string) { warned = append(warned, msg) }
	out, err := e.Start(WithTokens(context.Background(), 150), "r1", "p", []byte(catchLLM), llmInput(t, 100, 500), 1_000_000, 1)
	if err != nil || out.Status != Completed {
		t.Fatalf("got %+v %v", out, err)
	}
	if al := tokensOfInv(t, e, "r1"); al != (Allowance{Limit: 150, Charged: 150}) {
		t.Fatalf("tokens %+v", al)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "spent 500 model tokens, over its reservation of 100: 150 charged") {
		t.Fatalf("warnings %q", warned)
	}
}

// A parent lends tokens to a child (none unless it says); what the child
// spent is charged to the parent, the rest comes back; lending more than is
// left is refused.
func TestTokensLentToChildren(t *testing.T) {
	e, _ := llmEngine(t, memStore(t), 1)
	src := `
if input != nil { let r = act "llm" {reserve: input, spend: 70}; return r.usage.total_tokens }
let a = act "spawn" {steps: 100000, tokens: 300, input: 200}
let b = act "spawn" {steps: 100000, input: 50}
let ra = await {key: a.id}
let rb = await {key: b.id}
var over = ""
try { act "spawn" {steps: 1000, tokens: 200001, input: 1} } catch err { over = err.msg }
return [ra.result, rb.status, over]`
	i := runTree(t, e, "r1", src, nil, 1_000_000)
	if i.Status != Completed {
		t.Fatalf("got %s %v", i.Status, i.Err)
	}
	if got := porttestJSON(t, i.Result); got != `[70,"failed","spawn: r1 has 199930 model tokens to lend, not 200001"]` {
		t.Fatalf("got %s", got)
	}
	if k := tokensOfInv(t, e, "r1.1"); k != (Allowance{Limit: 300, Charged: 70}) {
		t.Fatalf("child tokens %+v", k)
	}
	if k := tokensOfInv(t, e, "r1.2"); k != (Allowance{Limit: 0}) {
		t.Fatalf("a child lent none has %+v", k)
	}
	if p := tokensOfInv(t, e, "r1"); p != (Allowance{Limit: DefaultTokens, Charged: 70}) {
		t.Fatalf("parent tokens %+v", p)
	}
}

// The process dies inside the adapter, after the reservation is held and
// before its charge: the invariant holds with it held, and resuming reopens
// the attempt (the fake never finds it), charges the old reservation as
// spent and reserves anew. An operator's resolution charges it instead.
func TestTokensCrashBetweenReserveAndCharge(t *testing.T) {
	for _, operator := range []bool{false, true} {
		t.Run(fmt.Sprint("operator=", operator), func(t *testing.T) {
			dir := t.TempDir()
			s, err := store.Open(store.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			e, _, err := Open(s, port.NewNative(), engine(t, s, 0).Clock)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Ward().Grant(AnyProg, "llm"); err != nil {
				t.Fatal(err)
			}
			l := &llm{crash: true}
			e.Adapters["llm"] = l
			src := `let r = act "llm" {reserve: 400, spend: 100}
return r`
			if !dies(func() { e.Start(WithTokens(context.Background(), 1000), "r1", "p", []byte(src), nil, 1_000_000, 1) }) {
				t.Fatal("the adapter did not die")
			}
			s.Close()
			if s, err = store.Open(store.Options{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			e, unknown, err := Open(s, port.NewNative(), e.Clock)
			if err != nil || len(unknown) != 1 {
				t.Fatalf("open: %v %v", unknown, err)
			}
			l = &llm{}
			e.Adapters["llm"] = l
			if al := tokensOfInv(t, e, "r1"); al != (Allowance{Limit: 1000, Held: 400}) || unknown[0].Attempt.Tokens != 400 {
				t.Fatalf("after the crash: tokens %+v, attempt %+v", al, unknown[0].Attempt)
			}
			want := Allowance{Limit: 1000, Charged: 500} // the lost reservation, and the new call's 100
			if operator {
				b, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(0)})
				if err := e.Settle(OpID{"r1", 1}, b); err != nil {
					t.Fatal(err)
				}
				if al := tokensOfInv(t, e, "r1"); al != (Allowance{Limit: 1000, Charged: 400}) {
					t.Fatalf("resolved: tokens %+v", al)
				}
				want = Allowance{Limit: 1000, Charged: 400}
			}
			if err := (&Scheduler{E: e, Scope: "r1"}).Run(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			i, _ := e.invs.get("r1")
			if i.Status != Completed {
				t.Fatalf("got %s %v", i.Status, i.Err)
			}
			if al := tokensOfInv(t, e, "r1"); al != want {
				t.Fatalf("tokens %+v, want %+v", al, want)
			}
			if calls := l.count(); calls != map[bool]int{false: 1, true: 0}[operator] {
				t.Fatalf("asked again %d times", calls)
			}
		})
	}
}

// Token allowances are checked like step allowances: a change that would
// break the invariant is refused and nothing is written.
func TestTokensInvariantChecked(t *testing.T) {
	s := memStore(t)
	err := s.Retry(store.Synced, func(tx *store.Tx) error {
		if err := tx.Put(tokenKey("r1"), Allowance{Limit: 10}); err != nil {
			return err
		}
		_, err := changeTokens(tx, "r1", func(al *Allowance) error { al.Held = 11; return nil })
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "over limit 10") {
		t.Fatalf("got %v", err)
	}
}
