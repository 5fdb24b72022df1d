// serve_concurrent_test.go runs other processes against a running serve:
// ps, events --follow and revoke while a prog started through the API
// runs (the revoke denies its next act), and two commands at once while
// the Slack dispatcher runs a mention in the same process.

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/slack/fakeslack"
)

// startServed starts the test binary as `runehost serve` on dir.
func startServed(t *testing.T, dir string, extra ...string) *serveProc {
	t.Helper()
	t.Setenv("RUNEHOST_TEST_AS_CLI", "1") // the test binary is runehost (TestMain)
	return startServeProc(t, os.Args[0], dir, true, extra...)
}

// readerProg reads a file between stretches of work until a read is
// refused, and says how many went through and why the last did not.
const readerProg = `
var n = 0
var why = "never refused"
while n < 1000000 {
  try { act "fs.read" {path: input} } catch err { why = err.kind; break }
  n += 1
  var s = 0
  for j in range(20000) { s += j }
}
return [n > 0, why]
`

func TestServedOtherProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	data := t.TempDir()
	file := filepath.Join(data, "notes.txt")
	os.WriteFile(file, []byte("hello"), 0o644)
	grant := "fs.read:" + data
	if code, _, errs := process(t, dir, "grant", "--prog", "reader", grant); code != exitOK {
		t.Fatalf("grant: %d %s", code, errs)
	}
	p := startServed(t, dir)
	in, _ := json.Marshal(file)
	body, _ := json.Marshal(api.RunRequest{Prog: "reader", Source: readerProg, Input: in, Limit: 1 << 40})
	resp, err := p.c.Post("http://runehost/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var rr api.RunResponse
	json.NewDecoder(resp.Body).Decode(&rr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("admission: %d", resp.StatusCode)
	}
	inv := rr.Invocation
	// It runs, reading: wait for a few reads.
	for deadline := time.Now().Add(20 * time.Second); ; {
		var evs []json.RawMessage
		if err := p.get("/v1/invocations/"+inv+"/events", &evs); err != nil {
			t.Fatal(err)
		}
		if len(evs) > 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reads: %d events\n%s", len(evs), p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Three other processes at once: a follower to the end, a lister and
	// the revocation.
	var wg sync.WaitGroup
	type result struct {
		code     int
		out, err string
	}
	var follow, ps, revoke result
	wg.Add(3)
	go func() {
		defer wg.Done()
		follow.code, follow.out, follow.err = process(t, dir, "events", "--follow", inv)
	}()
	go func() {
		defer wg.Done()
		ps.code, ps.out, ps.err = process(t, dir, "ps")
	}()
	go func() {
		defer wg.Done()
		revoke.code, revoke.out, revoke.err = process(t, dir, "revoke", "--prog", "reader", grant)
	}()
	wg.Wait()
	if ps.code != exitOK || !strings.Contains(ps.out, inv) {
		t.Errorf("ps: %d %q %q", ps.code, ps.out, ps.err)
	}
	if revoke.code != exitOK || !strings.Contains(revoke.err, "revoked: "+grant) {
		t.Errorf("revoke: %d %q", revoke.code, revoke.err)
	}
	if follow.code != exitOK || !strings.Contains(follow.out, `answer [true,"denied"]`) {
		t.Errorf("events --follow: %d %.2000q %q", follow.code, follow.out, follow.err)
	}
	var st api.RunState
	if err := p.get("/v1/invocations/"+inv+"/state", &st); err != nil || st.Status != "completed" || string(st.Result) != `[true,"denied"]` {
		t.Fatalf("the run: %+v %v", st, err)
	}
}

func TestServedWithSlack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	progs := t.TempDir()
	os.WriteFile(filepath.Join(progs, "agent.rune"), []byte(`var s = 0
for i in range(300) { emit("tick", i); for j in range(2000) { s += j } }
return "shipped " + str(s)`), 0o644)
	fake := fakeslack.NewStrict(nil)
	defer fake.Close()
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-test")
	t.Setenv("SLACK_APP_TOKEN", "xapp-test")
	t.Setenv("SLACK_API_URL", fake.URL())
	p := startServed(t, dir, "--slack", "--progs", progs)
	if !fake.WaitConnected(10 * time.Second) {
		t.Fatalf("no Socket Mode connection:\n%s", p.stderr)
	}
	thread := fake.Mention("C1", "U1", "agent")
	// Two commands at once while the mention's run goes on.
	hello := writeProg(t, `return "hi " + str(input)`)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	outs := make([]string, 2)
	wg.Add(2)
	go func() { defer wg.Done(); codes[0], outs[0], _ = process(t, dir, "run", hello, "--input", "1") }()
	go func() { defer wg.Done(); codes[1], outs[1], _ = process(t, dir, "ps") }()
	wg.Wait()
	if codes[0] != exitOK || outs[0] != "\"hi 1\"\n" {
		t.Errorf("run: %d %q", codes[0], outs[0])
	}
	if codes[1] != exitOK {
		t.Errorf("ps: %d %q", codes[1], outs[1])
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms := fake.Messages()
		if len(ms) > 0 && ms[0].ThreadTS == thread && strings.Contains(ms[0].Text, "completed") {
			if !strings.Contains(ms[0].Blocks, "/r/") {
				t.Errorf("the card does not link to the run's page: %s", ms[0].Blocks)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the card never completed: %+v\n%s", ms, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, _ := process(t, dir, "ps")
	if code != exitOK || strings.Count(out, "completed") != 2 {
		t.Fatalf("ps after: %d %q", code, out)
	}
}
