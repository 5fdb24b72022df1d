// revoke_test.go: for every act family, a grant revoked between two acts of
// one run denies the second, before any effect.

package acts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts"
	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
)

func TestRevokeEveryFamily(t *testing.T) {
	srv := modeltest.New("", "one", "two")
	defer srv.Close()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) }))
	defer web.Close()
	toolDir, data := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(toolDir, "wc.wasm"), testtools.Build(t, "wc"), 0o644)
	os.WriteFile(filepath.Join(data, "f"), []byte("file"), 0o644)
	for _, c := range []struct{ family, grant, act string }{
		{"fs", "fs.read:" + data, `act "fs.read" {path: "` + data + `/f"}`},
		{"http", "http.get:" + strings.TrimPrefix(web.URL, "http://"), `act "http.get" {url: "` + web.URL + `"}`},
		{"model", "model.chat:default", `act "model.chat" {messages: [{role: "user", content: "hi"}]}`},
		{"approval", "approval", `act "approval" {question: "ok?"}`},
		{"tool", "tool.run:wc", `act "tool.run" {tool: "wc", stdin: "a"}`},
	} {
		t.Run(c.family, func(t *testing.T) {
			e := acttest.Engine(t, nil)
			closer := acts.Register(e, acts.Config{ToolDir: toolDir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"),
				Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}})
			defer closer()
			acttest.Grant(t, e, c.grant)
			src := `let first = ` + c.act + `
await {key: "go"}
try { ` + c.act + `; return "second ran" } catch err { return err.kind }`
			_, out := acttest.Run(t, e, src, nil)
			if out.Status != host.Waiting {
				t.Fatalf("first act: %+v", out)
			}
			if ok, err := e.Revoke(host.AnyProg, c.grant); !ok || err != nil {
				t.Fatalf("revoke: %v %v", ok, err)
			}
			invs, _ := e.List()
			out, err := e.Send(context.Background(), invs[len(invs)-1].ID, "go", nil)
			if err != nil || acttest.JSON(t, out.Result) != `"denied"` {
				t.Fatalf("second act: %+v %v", out, err)
			}
		})
	}
	if srv.Calls() != 1 {
		t.Fatalf("the model was called %d times", srv.Calls())
	}
}
