// bounds_test.go checks each cap: a warning near it, a clear "limit" error
// past it, and large replies stored once by reference.

package host

import (
	"context"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// echo answers an act with its "s" argument repeated "n" times.
type echo struct{ calls int }

func (a *echo) Do(_ context.Context, op *Operation) (any, error) {
	a.calls++
	d, _ := decodeMap(op.Args)
	s, _ := d.Get("s")
	n, _ := d.Get("n")
	return strings.Repeat(s.(string), int(n.(int64))), nil
}

func boundedEngine(t *testing.T) (*Engine, *[]string) {
	e := engine(t, memStore(t), 1)
	e.Ward().Grant(AnyProg, "echo")
	e.Adapters["echo"] = &echo{}
	e.Bounds = Bounds{Checkpoint: 20000, ActArgs: 100, ActReply: 1000, Journal: 10, ByRef: 200}
	e.Cadence = Cadence{Steps: 1} // a checkpoint at every slice: each is measured
	var warnings []string
	e.OnWarn = func(inv, msg string) { warnings = append(warnings, msg) }
	return e, &warnings
}

func runCatch(t *testing.T, e *Engine, body string) string {
	t.Helper()
	out, err := e.Start(context.Background(), "r1", "p", []byte(`try { `+body+` } catch err { return [err.kind, err.msg] }`), nil, 1_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Err != nil {
		return out.Err.Kind + ": " + out.Err.Msg
	}
	return porttestJSON(t, out.Result)
}

func TestBounds(t *testing.T) {
	for _, c := range []struct{ name, body, want, warning string }{
		{"args near", `return len(act "echo" {s: "` + strings.Repeat("a", 80) + `", n: 1})`, `80`, "arguments of 9"},
		{"args over", `return act "echo" {s: "` + strings.Repeat("a", 120) + `", n: 1}`, `["limit","act echo: arguments of 13`, ""},
		{"reply near", `return len(act "echo" {s: "ab", n: 420})`, `840`, "reply of 84"},
		{"reply over", `return act "echo" {s: "ab", n: 600}`, `["limit","act echo: reply of 120`, ""},
		{"journal", `var n = 0
for i in range(20) { act "echo" {s: "", n: 0}; n += 1 }
return n`, `["limit","the journal is full: 11 acts and awaits (cap 10)"]`, "8 acts and awaits, near the cap of 10"},
		{"journal await", `for i in range(10) { act "echo" {s: "", n: 0} }
return await {key: "x"}`, `["limit","the journal is full: 11`, ""},
		{"checkpoint", `var l = []
for i in range(5000) { l = append(l, "item " + str(i)) }
return len(l)`, `limit: checkpoint of`, "near the cap of 20000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, warnings := boundedEngine(t)
			if got := runCatch(t, e, c.body); !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %s, want %s…", got, c.want)
			}
			if c.warning != "" && !strings.Contains(strings.Join(*warnings, "\n"), c.warning) {
				t.Fatalf("warnings %q, want %q", *warnings, c.warning)
			}
		})
	}
}

// A large reply is stored once, by reference, and the prog gets all of it.
func TestReplyByReference(t *testing.T) {
	e, _ := boundedEngine(t)
	got := runCatch(t, e, `let a = act "echo" {s: "xyz", n: 100}
let b = act "echo" {s: "xyz", n: 100}
return [len(a), a == b]`)
	if got != `[300,true]` {
		t.Fatalf("got %s", got)
	}
	for ord := uint64(1); ord <= 2; ord++ {
		op, _ := e.ledger.Get(OpID{"r1", ord})
		if op.Outcome.Ref == "" || len(op.Outcome.Reply) != 0 || op.Outcome.Size < 300 {
			t.Fatalf("op %d outcome %+v", ord, op.Outcome)
		}
	}
	blobs := 0
	e.Store.View(func(tx *store.Tx) error {
		return tx.Scan(store.K("blob"), func(store.Key, func(any) error) (bool, error) { blobs++; return true, nil })
	})
	if blobs != 1 {
		t.Fatalf("%d blobs, want 1", blobs)
	}
	// A blob that does not match its hash is refused, not fed to the prog.
	op, _ := e.ledger.Get(OpID{"r1", 1})
	putRaw(t, e, blobKey(op.Outcome.Ref), []byte("tampered"))
	if _, err := e.reply(op.Outcome); err == nil || !strings.Contains(err.Error(), "not what its hash says") {
		t.Fatalf("got %v", err)
	}
}

func decodeMap(b []byte) (*checkpoint.Map, error) {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		return nil, err
	}
	m, _ := d.(*checkpoint.Map)
	return m, nil
}

// With lazy slices the cap is met where a checkpoint is stored: here, at
// the act after the list grew.
func TestBoundsCheckpointLazy(t *testing.T) {
	e, _ := boundedEngine(t)
	e.Cadence = Cadence{}
	got := runCatch(t, e, `var l = []
for i in range(5000) { l = append(l, "item " + str(i)) }
act "echo" {s: "", n: 0}
return len(l)`)
	if !strings.HasPrefix(got, "limit: checkpoint of") {
		t.Fatalf("got %s, want the checkpoint's limit", got)
	}
}
