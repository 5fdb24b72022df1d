package approval_test

import (
	"context"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/approval"
	"github.com/runehost/runehost/host"
)

func TestApproval(t *testing.T) {
	e := acttest.Engine(t, map[string]host.Adapter{approval.Tag: approval.Adapter{}})
	src := `let req = act "approval" {question: "Deploy?"}
let ans = await {key: req.key}
return [req.key, ans.ok]`
	if got, _ := acttest.Run(t, e, acttest.Catch(`act "approval" {question: "x"}`), nil); got != `["denied","no grant for act approval (runehost grant --prog p approval)"]` {
		t.Fatalf("ungranted: %s", got)
	}
	acttest.Grant(t, e, "approval")
	_, out := acttest.Run(t, e, src, nil)
	if out.Status != host.Waiting || out.Waiting != "an event [approval:1]" {
		t.Fatalf("got %+v", out)
	}
	invs, _ := e.List()
	inv := invs[len(invs)-1].ID
	out, err := e.Send(context.Background(), inv, "approval:1", acttest.Data(t, `{"ok": true}`))
	if err != nil || acttest.JSON(t, out.Result) != `["approval:1",true]` {
		t.Fatalf("got %+v %v", out, err)
	}
	if got, _ := acttest.Run(t, e, acttest.Catch(`act "approval" {}`), nil); got != `["value","approval wants {question: STRING}"]` {
		t.Fatalf("no question: %s", got)
	}
}
