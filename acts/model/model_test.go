// model_test.go checks model.chat against the scripted server: a granted
// endpoint answers; an ungranted or unknown one is denied before any call;
// the key never reaches the prog; a resumed run does not call again.

package model_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/host"
)

func TestModelChat(t *testing.T) {
	srv := modeltest.New("sk-test-secret-key", "Paris.", "Four.")
	defer srv.Close()
	bad := modeltest.New("other-key")
	defer bad.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{
		"default":  {Name: "default", BaseURL: srv.URL + "/v1", Model: "tiny", Key: "sk-test-secret-key"},
		"wrongkey": {Name: "wrongkey", BaseURL: bad.URL + "/v1", Model: "tiny", Key: "sk-test-secret-key"},
		"spare":    {Name: "spare", BaseURL: srv.URL + "/v1", Model: "tiny"},
	}}
	e := acttest.Engine(t, map[string]host.Adapter{model.Tag: a})
	acttest.Grant(t, e, "model.chat:default", "model.chat:wrongkey")
	if _, err := e.Grant(host.AnyProg, "model.chat:nowhere"); err == nil {
		t.Fatal("granted an endpoint that is not configured")
	}
	ask := func(extra string) string {
		return acttest.Catch(`(act "model.chat" {messages: [{role: "user", content: "Capital of France?"}]` + extra + `}).content`)
	}
	for _, c := range []struct{ name, src, want string }{
		{"granted", ask(""), `"Paris."`},
		{"ungranted endpoint", ask(`, endpoint: "spare"`), `["denied",`},
		{"unknown endpoint", ask(`, endpoint: "nope"`), `["denied",`},
		{"bad messages", acttest.Catch(`act "model.chat" {messages: [{role: "god", content: "x"}]}`), `["value",`},
		{"server refuses", ask(`, endpoint: "wrongkey"`), `["failed","model.chat wrongkey: HTTP 401`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := acttest.Run(t, e, c.src, nil)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %s, want %s…", got, c.want)
			}
			if strings.Contains(got, "sk-test-secret-key") {
				t.Fatalf("the key reached the prog: %s", got)
			}
		})
	}
	if srv.Calls() != 1 || srv.Requests[0].Model != "tiny" {
		t.Fatalf("calls %d, requests %+v", srv.Calls(), srv.Requests)
	}
}

// A server that echoes the key encoded in its error, past the cut of the
// message: no form of it reaches the prog, not even a fragment at the cut.
func TestKeyEncodedInAnError(t *testing.T) {
	const key = "sk-error-echo-Key/Qx81+zz"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := []byte(r.Header.Get("Authorization"))
		http.Error(w, strings.Repeat("x", 350)+" "+base64.StdEncoding.EncodeToString(b)+" "+hex.EncodeToString(b)+" "+strings.ToUpper(string(b)), http.StatusBadRequest)
	}))
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1", Key: key}}}
	e := acttest.Engine(t, map[string]host.Adapter{model.Tag: a})
	acttest.Grant(t, e, "model.chat:default")
	got, _ := acttest.Run(t, e, acttest.Catch(`act "model.chat" {messages: [{role: "user", content: "hi"}]}`), nil)
	if !strings.HasPrefix(got, `["failed","model.chat default: HTTP 400`) {
		t.Fatalf("got %s", got)
	}
	for _, form := range redact.Forms(key) {
		for i := 0; i+8 <= len(form); i++ {
			if strings.Contains(strings.ToLower(got), strings.ToLower(form[i:i+8])) {
				t.Fatalf("%q of the key survived: %s", form[i:i+8], got)
			}
		}
	}
}

// An endpoint with no model named (RUNEHOST_MODEL unset) sends no "model"
// field, which a server of one model takes, rather than an empty one; with
// no endpoint configured, a grant says what to set.
func TestNoModelNamed(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	a := &model.Adapter{Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: srv.URL + "/v1"}}}
	e := acttest.Engine(t, map[string]host.Adapter{model.Tag: a})
	acttest.Grant(t, e, "model.chat:default")
	if got, _ := acttest.Run(t, e, `return (act "model.chat" {messages: [{role: "user", content: "hi"}]}).content`, nil); got != `"ok"` {
		t.Fatalf("got %s", got)
	}
	if _, ok := body["model"]; ok || body["messages"] == nil {
		t.Fatalf("request %v", body)
	}
	none := acttest.Engine(t, map[string]host.Adapter{model.Tag: &model.Adapter{}})
	if _, err := none.Grant(host.AnyProg, "model.chat:default"); err == nil || !strings.Contains(err.Error(), "no model endpoint is configured: set RUNEHOST_MODEL_URL") {
		t.Fatalf("grant with no endpoint: %v", err)
	}
}
