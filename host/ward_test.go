// ward_test.go checks grants: deny by default, the statement recorded on the
// attempt, per-prog and every-prog subjects, targets only through an
// adapter that can check them, revocation between two acts, and preflight.

package host

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// targeted allows an act whose "path" argument is a granted target.
type targeted struct{ recorder }

func (a *targeted) Authorize(_ context.Context, op *Operation, gs []Grant) (string, error) {
	for _, g := range gs {
		if strings.Contains(string(op.Args), g.Target()) {
			return g.Statement, nil
		}
	}
	return "", errors.New("no grant covers this path")
}

func TestWardDecides(t *testing.T) {
	prog := `try { return act "calc" {n: 4, path: "/data/x"} } catch err { return err.msg }`
	for _, c := range []struct {
		name      string
		grants    [][2]string
		authorize bool
		want      string // the result
		grant     string // the statement on the attempt
	}{
		{"none", nil, false, `"no grant for act calc (runehost grant --prog p calc)"`, ""},
		{"this prog", [][2]string{{"p", "calc"}}, false, `40`, "calc"},
		{"another prog", [][2]string{{"q", "calc"}}, false, `"no grant for act calc (runehost grant --prog p calc)"`, ""},
		{"every prog", [][2]string{{AnyProg, "calc"}}, false, `40`, "calc"},
		{"another tag", [][2]string{{"p", "calcx"}, {"p", "cal"}}, false, `"no grant for act calc (runehost grant --prog p calc)"`, ""},
		{"target, unchecked", [][2]string{{"p", "calc:/data"}}, false, `"act calc is granted only for targets, which its adapter cannot check"`, ""},
		{"target, checked", [][2]string{{"p", "calc:/other"}, {"p", "calc:/data"}}, true, `40`, "calc:/data"},
		{"target, checked, sibling", [][2]string{{"p", "calc:/dat/"}}, true, `"no grant covers this path"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memStore(t)
			e := NewEngine(s, engine(t, memStore(t), 1).Runtime, 1, func() int64 { return 1 })
			rec := &targeted{}
			if c.authorize {
				e.Adapters["calc"] = rec
			} else {
				e.Adapters["calc"] = &rec.recorder
			}
			for _, g := range c.grants {
				if _, err := e.Ward().Grant(g[0], g[1]); err != nil {
					t.Fatal(err)
				}
			}
			out, err := e.Start(context.Background(), "r1", "p", []byte(prog), nil, 100_000, 1)
			if err != nil || porttestJSON(t, out.Result) != c.want {
				t.Fatalf("got %+v %v", out, err)
			}
			op, _ := e.ledger.Get(OpID{"r1", 1})
			if op.Attempt.Grant != c.grant {
				t.Fatalf("attempt %+v", op.Attempt)
			}
			if called := len(rec.calls) > 0; called != (c.grant != "") {
				t.Fatalf("adapter called %v, granted %q", rec.calls, c.grant)
			}
		})
	}
}

// A grant revoked between two acts of one run denies the second.
func TestWardRevokeBetweenActs(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	e.Ward().Grant("p", "calc")
	e.Ward().Revoke(AnyProg, "calc") // the helper's
	src := `let a = act "calc" {n: 1}
await {key: "go"}
try { return [a, act "calc" {n: 2}] } catch err { return [a, err.kind] }`
	out, err := e.Start(context.Background(), "r1", "p", []byte(src), nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("got %+v %v", out, err)
	}
	if ok, err := e.Ward().Revoke("p", "calc"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	out, err = e.Send(context.Background(), "r1", "go", nil)
	if err != nil || porttestJSON(t, out.Result) != `[10,"denied"]` {
		t.Fatalf("got %+v %v", out, err)
	}
}

// A grant made between acts allows the next one: what the ward keeps of
// the grants it read is dropped.
func TestWardGrantBetweenActs(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	e.Ward().Revoke(AnyProg, "calc") // the helper's
	src := `var a = "none"
try { a = act "calc" {n: 1} } catch err { a = err.kind }
await {key: "go"}
return [a, act "calc" {n: 2}]`
	out, err := e.Start(context.Background(), "r1", "p", []byte(src), nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("got %+v %v", out, err)
	}
	if _, err := e.Ward().Grant("p", "calc"); err != nil {
		t.Fatal(err)
	}
	out, err = e.Send(context.Background(), "r1", "go", nil)
	if err != nil || porttestJSON(t, out.Result) != `["denied",20]` {
		t.Fatalf("got %+v %v", out, err)
	}
}

func TestWardStatements(t *testing.T) {
	w := NewWard(memStore(t), func() int64 { return 5 })
	for _, bad := range []string{"", ":x", "a b", "fs.read:x\ny", "spawn"} {
		if _, err := w.Grant("p", bad); !errors.Is(err, ErrBadStatement) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	w.Grant("p", "fs.read:./data")
	w.Grant("p", "fs.read:./data") // again: no change
	w.Grant(AnyProg, "model.chat:local")
	gs, _ := w.List("")
	if len(gs) != 2 || gs[0].Subject != AnyProg || gs[1].Target() != "./data" {
		t.Fatalf("grants %+v", gs)
	}
	missing, _ := w.Missing("p", []string{"fs.read", "spawn", "http.get", "model.chat", "http.get"})
	if strings.Join(missing, ",") != "http.get" {
		t.Fatalf("missing %v", missing)
	}
	if ok, _ := w.Revoke("p", "nothing"); ok {
		t.Fatal("revoked a grant that was not there")
	}
}
