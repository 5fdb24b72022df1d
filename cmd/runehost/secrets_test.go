// secrets_test.go: the host's secrets never leave the host through the CLI.
// A model reply and a tool reply that echo them in every common encoding
// leave none in the prog's result, the terminal, the run log or the store
// directory; no grant covers /proc (where the environment is), the store
// or the cache, at `grant`, at `tool run` and at each attempt.

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/events/redact"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
	"github.com/runehost/runehost/store"
)

// encoded is secret inside some text in every common encoding, at each
// base64 alignment, one a line.
func encoded(secret string) string {
	var b strings.Builder
	for align := range 3 {
		plain := []byte("ab"[:align] + secret + "!")
		for _, s := range []string{
			base64.StdEncoding.EncodeToString(plain), base64.RawStdEncoding.EncodeToString(plain),
			base64.URLEncoding.EncodeToString(plain), base64.RawURLEncoding.EncodeToString(plain),
			hex.EncodeToString(plain), strings.ToUpper(hex.EncodeToString(plain)),
			url.QueryEscape(string(plain)), url.PathEscape(string(plain)), strings.ToUpper(string(plain)),
			"?t=" + url.QueryEscape(base64.StdEncoding.EncodeToString(plain)),
		} {
			b.WriteString("value: " + s + "\n")
		}
	}
	return b.String()
}

// traces are the texts that would show a secret got out, in any case: it
// raw, its hex and URL escapes, and of its base64 at each alignment (in
// each alphabet, URL-escaped too) the characters whose six bits all come
// from the secret.
func traces(secret string) []string {
	out := []string{secret, hex.EncodeToString([]byte(secret)), url.QueryEscape(secret), url.PathEscape(secret)}
	for align := range 3 {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString([]byte("\x00\x00"[:align] + secret))
			in := e[(8*align+5)/6 : 8*(align+len(secret))/6]
			out = append(out, in, url.QueryEscape(in))
		}
	}
	for i := range out {
		out[i] = strings.ToLower(out[i])
	}
	return out
}

func TestHostSecretEncodingsNeverLeak(t *testing.T) {
	const key = "sk-enc-Host/Key+Qx81zz~ab"
	const slackToken = "xoxb-1234567890-secret-Token"
	srv := modeltest.New(key, "here it is, encoded:\n"+encoded(key)+encoded(slackToken))
	defer srv.Close()
	storeDir := filepath.Join(t.TempDir(), "store")
	t.Setenv("RUNEHOST_STORE", storeDir)
	t.Setenv("RUNEHOST_MODEL_URL", srv.URL+"/v1")
	t.Setenv("RUNEHOST_MODEL_KEY", key)
	t.Setenv("SLACK_BOT_TOKEN", slackToken)
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "cat.wasm"), testtools.Build(t, "cat"), 0o644)
	t.Setenv("RUNEHOST_TOOLS", tools)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "enc.txt"), []byte(encoded(key)+encoded(slackToken)), 0o644)
	var all strings.Builder
	run := func(args ...string) (int, string) {
		code, out, errs := invoke(t, args...)
		all.WriteString(out + errs)
		return code, out + errs
	}
	if code, out := run("grant", "--prog", "p", "tool.run:cat", "fs.read:"+data+"=/d", "model.chat:default"); code != exitOK {
		t.Fatal(out)
	}
	f := writeProg(t, `let r = act "tool.run" {tool: "cat", args: ["/d/enc.txt"]}
log(r.stdout)
let m = act "model.chat" {messages: [{role: "user", content: "say it"}]}
emit("model", {said: m.content})
return {tool: r.stdout, model: m.content}`)
	code, out := run("run", f)
	if code != exitOK || strings.Count(out, redact.Mark) < 2*30 {
		t.Fatalf("run: %d %s", code, out)
	}
	for _, args := range [][]string{{"events", "r1", "--all"}, {"events", "r1", "--json"}, {"inspect", "r1"}, {"inspect", "r1", "--json"}} {
		if code, out := run(args...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	shown := strings.ToLower(all.String())
	var files [][]byte
	filepath.Walk(storeDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(path)
			files = append(files, bytes.ToLower(b))
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no store files")
	}
	for _, secret := range []string{key, slackToken} {
		for _, tr := range traces(secret) {
			if strings.Contains(shown, tr) {
				t.Errorf("%q (a form of %s) reached the CLI's output", tr, secret[:6])
			}
			for _, b := range files {
				if bytes.Contains(b, []byte(tr)) {
					t.Errorf("%q (a form of %s) is in the store", tr, secret[:6])
				}
			}
		}
	}
}

func TestPlacesRefusedByTheCLI(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "store")
	t.Setenv("RUNEHOST_STORE", storeDir)
	cache := filepath.Join(os.TempDir(), "runehost-test-wazero-cache")
	cat := filepath.Join(t.TempDir(), "cat.wasm")
	os.WriteFile(cat, testtools.Build(t, "cat"), 0o644)
	for _, c := range []struct{ grant, why string }{
		{"fs.read:/proc", "/proc is the kernel's view of processes"},
		{"fs.read:/", "/ holds /proc"},
		{"fs.write:" + filepath.Dir(storeDir), "holds " + storeDir + ", the store directory"},
		{"fs.read:" + cache, "the compilation cache"},
	} {
		code, _, errs := invoke(t, "grant", c.grant)
		if code != exitUsage || !strings.Contains(errs, c.why) {
			t.Errorf("grant %s: %d %s", c.grant, code, errs)
		}
		code, _, errs = invoke(t, "tool", "run", cat, "--grant", c.grant)
		if code != exitUsage || !strings.Contains(errs, c.why) {
			t.Errorf("tool run --grant %s: %d %s", c.grant, code, errs)
		}
	}
	if code, out, errs := invoke(t, "grants"); code != exitOK || out != "" {
		t.Fatalf("grants: %d %q %s", code, out, errs)
	}
}

// The reproduction: with a grant over /proc recorded before the rule, a
// prog read /proc/self/environ and the Slack token came back and was
// stored. Now the attempt is denied, with the reason.
func TestEnvironThroughAnOldGrant(t *testing.T) {
	const token = "xoxb-environ-9988776655-Secret"
	t.Setenv("SLACK_BOT_TOKEN", token)
	storeDir := filepath.Join(t.TempDir(), "store")
	t.Setenv("RUNEHOST_STORE", storeDir)
	s, err := store.Open(store.Options{Dir: storeDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := host.NewWard(s, nowMillis).Grant(host.AnyProg, "fs.read:/proc"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f := writeProg(t, `try { return act "fs.read" {path: "/proc/self/environ", base64: true} } catch err { return [err.kind, err.msg] }`)
	code, out, errs := invoke(t, "run", f)
	if code != exitOK || !strings.Contains(out, `"denied"`) || !strings.Contains(out, "the grant fs.read:/proc is refused") {
		t.Fatalf("run: %d %s %s", code, out, errs)
	}
	filepath.Walk(storeDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte("SLACK_BOT_TOKEN="+token)))) {
				t.Errorf("the token is in %s", path)
			}
		}
		return nil
	})
}
