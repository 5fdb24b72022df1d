// examples_test.go runs every prog of examples/ through the CLI, as a user
// would, with the grants its header names, against fakes: a scripted
// OpenAI-compatible model (modeltest), an httptest web server and the test
// tools built from testdata/tools. Each case checks what the prog did, not
// just its exit status; an example without a case fails the test.

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/internal/testtools"
)

// exampleCases holds one case per examples/NAME.rune, by NAME.
var exampleCases = map[string]func(t *testing.T, prog string){
	"agent":     exampleAgent,
	"summarise": exampleSummarise,
	"approve":   exampleApprove,
	"fanout":    exampleFanout,
	"fetch":     exampleFetch,
	"primes":    examplePrimes,
}

const examplesDir = "../../examples"

func TestExamples(t *testing.T) {
	progs, err := filepath.Glob(filepath.Join(examplesDir, "*.rune"))
	if err != nil || len(progs) == 0 {
		t.Fatalf("no examples in %s (%v)", examplesDir, err)
	}
	readme, err := os.ReadFile(filepath.Join(examplesDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, prog := range progs {
		name := strings.TrimSuffix(filepath.Base(prog), ".rune")
		found[name] = true
		src, err := os.ReadFile(prog)
		if err != nil {
			t.Fatal(err)
		}
		// The header says what it needs granted and how to run it.
		if !strings.Contains(string(src), "// Grants: ") || !strings.Contains(string(src), "runehost run examples/"+name+".rune") {
			t.Errorf("examples/%s.rune: its header comment should name its grants (// Grants: ...) and the command that runs it", name)
		}
		if !strings.Contains(string(readme), "("+name+".rune)") {
			t.Errorf("examples/README.md has no line for %s.rune", name)
		}
		f, ok := exampleCases[name]
		if !ok {
			t.Errorf("examples/%s.rune has no case in TestExamples: add one to exampleCases (cmd/runehost/examples_test.go)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
			if code, out, errs := invoke(t, "check", prog); code != exitOK {
				t.Fatalf("check: exit %d %s %s", code, out, errs)
			}
			f(t, prog)
		})
	}
	for name := range exampleCases {
		if !found[name] {
			t.Errorf("a case for examples/%s.rune, which is not there", name)
		}
	}
}

// exRun runs the CLI, wants exit status want, and returns the decoded
// result (stdout) and stderr.
func exRun(t *testing.T, want int, args ...string) (any, string) {
	t.Helper()
	code, out, errs := invoke(t, args...)
	if code != want {
		t.Fatalf("runehost %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, want, out, errs)
	}
	if want != exitOK {
		return nil, errs
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("runehost %s: stdout is not JSON (%v): %q", strings.Join(args, " "), err, out)
	}
	return v, errs
}

// exWantJSON fails unless got is the JSON text want.
func exWantJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("result\n got %s\nwant %s", g, want)
	}
}

// exJS is s as a JSON string literal, for building wants.
func exJS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func exGrant(t *testing.T, prog string, statements ...string) {
	t.Helper()
	if code, _, errs := invoke(t, append([]string{"grant", "--prog", prog}, statements...)...); code != exitOK {
		t.Fatalf("grant %v: exit %d %s", statements, code, errs)
	}
}

func exWriteFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exLastMessage(r modeltest.Request) string { return r.Messages[len(r.Messages)-1].Content }

// The agent reads a file, runs two tools on it at once, is denied a file
// outside its grant, and stops at a streamed answer; the tools are offered
// natively and each result goes back as its call's tool message.
func exampleAgent(t *testing.T, prog string) {
	data := t.TempDir()
	notes := filepath.Join(data, "notes.txt")
	exWriteFiles(t, data, map[string]string{"notes.txt": "alpha\nbeta TODO\ngamma TODO\n"})
	secret := filepath.Join(t.TempDir(), "secret.txt")
	exWriteFiles(t, filepath.Dir(secret), map[string]string{"secret.txt": "not for the agent"})
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "grep.wasm"), testtools.Build(t, "grep"), 0o644)
	os.WriteFile(filepath.Join(tools, "wc.wasm"), testtools.Build(t, "wc"), 0o644)
	t.Setenv("RUNEHOST_TOOLS", tools)
	call := func(id, name, args string) []modeltest.ToolCall {
		return []modeltest.ToolCall{{ID: id, Name: name, Arguments: args}}
	}
	srv := modeltest.Script("sk-examples-agent-key",
		modeltest.Reply{ToolCalls: call("call_1", "read", `{"path": `+exJS(notes)+`}`)},
		modeltest.Reply{Content: "Two tools at once.", ToolCalls: append(call("call_2", "grep", `{"pattern": "TODO", "file": `+exJS(notes)+`}`),
			call("call_3", "wc", `{"text": "one two three"}`)...)},
		modeltest.Reply{ToolCalls: call("call_4", "read", `{"path": `+exJS(secret)+`}`)},
		modeltest.Reply{Content: "2 lines of notes.txt mention TODO"},
	)
	defer srv.Close()
	t.Setenv("RUNEHOST_MODEL_URL", srv.URL+"/v1")
	t.Setenv("RUNEHOST_MODEL", "fake-model")
	t.Setenv("RUNEHOST_MODEL_KEY", srv.Key)
	exGrant(t, "agent", "model.chat:default", "fs.read:"+data, "tool.run:grep", "tool.run:wc")
	res, errs := exRun(t, exitOK, "run", prog, "--input", `{"task": "How many lines of `+notes+` mention TODO?"}`)
	exWantJSON(t, res, `{"answer": "2 lines of notes.txt mention TODO", "turns": 4, "stopped": "answer"}`)
	if srv.Calls() != 4 {
		t.Fatalf("model calls: %d, want 4", srv.Calls())
	}
	rq := srv.Requests
	for i, b := range srv.Bodies() {
		if !rq[i].Stream || rq[i].Model != "fake-model" || !strings.Contains(b, `"tools":[{"type":"function","function":{"name":"read"`) ||
			!strings.Contains(b, `"name":"wc"`) || !strings.Contains(b, `"name":"grep"`) {
			t.Errorf("request %d does not stream or offer the three tools: %s", i+1, b)
		}
	}
	if rq[0].Messages[0].Role != "system" || !strings.Contains(exLastMessage(rq[0]), "mention TODO?") {
		t.Errorf("first request: %+v", rq[0])
	}
	deny := "error denied: fs.read " + secret + ": the path is outside every granted directory (runehost grant --prog agent fs.read:" + filepath.Dir(secret) + ")"
	for _, c := range []struct {
		req  int
		id   string
		want string
	}{
		{1, "call_1", "alpha\nbeta TODO\ngamma TODO\n"},
		{2, "call_2", "exit 0:\nbeta TODO\ngamma TODO\n"},
		{2, "call_3", "exit 0:\n0 3 13\n"},
		{3, "call_4", deny},
	} {
		found := false
		for _, m := range rq[c.req].Messages {
			if m.Role == "tool" && m.ToolCallID == c.id {
				found = true
				if m.Content != c.want {
					t.Errorf("request %d: %s's tool message is %q, want %q", c.req+1, c.id, m.Content, c.want)
				}
			}
		}
		if !found {
			t.Errorf("request %d has no tool message for %s", c.req+1, c.id)
		}
	}
	if n := len(rq[3].Messages); n != 9 { // system, task, then the calls of three turns and their four results
		t.Errorf("the last request has %d messages, want 9", n)
	}
	if !strings.Contains(errs, "✎") || !strings.Contains(errs, "mention TODO") || !strings.Contains(errs, `agent.tool {"turn":3,"name":"read","id":"call_4","error":true}`) {
		t.Errorf("no streamed text or tool events on the terminal:\n%s", errs)
	}
	exampleAgentKilled(t, prog, notes)
}

// exampleAgentKilled kills (SIGKILL) a runehost running the agent while the
// model streams its third reply; the resume asks again for that reply
// alone, with the same request, and for none the killed run had recorded.
func exampleAgentKilled(t *testing.T, prog, notes string) {
	long := strings.Repeat("Reading the notes again, slowly and carefully, word by word. ", 8)
	turn3 := modeltest.Reply{Content: long, ToolCalls: []modeltest.ToolCall{{ID: "call_3", Name: "wc", Arguments: `{"file": ` + exJS(notes) + `}`}}}
	srv := modeltest.Script("",
		modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path": ` + exJS(notes) + `}`}}},
		modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_2", Name: "grep", Arguments: `{"pattern": "TODO", "file": ` + exJS(notes) + `}`}}},
		turn3, // cut by the kill
		turn3, // asked again on resume
		modeltest.Reply{Content: "notes.txt has 3 lines, 2 with TODO"},
	)
	cut, release := make(chan struct{}), make(chan struct{})
	chunks := 0
	srv.SetOnChunk(func([]byte) { // the client is another process: set under the server's lock
		if srv.Calls() != 3 {
			return
		}
		if chunks++; chunks == 20 { // well into turn 3's text
			close(cut)
			<-release // until the process is dead: the stream never ends
		}
	})
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	t.Setenv("RUNEHOST_MODEL_URL", srv.URL+"/v1")
	t.Setenv("RUNEHOST_MODEL_KEY", "")
	cmd := exec.Command(os.Args[0], "run", prog, "--tokens", "50000", "--input", `{"task": "Count the lines of `+notes+`"}`)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-cut:
	case err := <-done:
		t.Fatalf("the run ended before turn 3 streamed: %v\n%s", err, stderr)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("turn 3 did not stream in 30 s:\n%s", stderr)
	}
	// The terminal shows the text as it streams, before the reply is whole.
	for deadline := time.Now().Add(10 * time.Second); !regexp.MustCompile(`r2 ✎ +\d+ model Reading`).MatchString(stderr.String()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no streamed text of turn 3 on the terminal:\n%s", stderr)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-done; err == nil || cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("the run ended before it was killed: %v\n%s", err, stderr)
	}
	close(release)
	if strings.Contains(stderr.String(), "model.chat: Reading") {
		t.Fatalf("turn 3's reply was recorded before the kill:\n%s", stderr)
	}
	if code, out, _ := invoke(t, "ps"); code != exitOK || !strings.Contains(out, "r2         running") {
		t.Fatalf("ps after the kill:\n%s", out)
	}
	res, errs := exRun(t, exitOK, "resume", "r2")
	exWantJSON(t, res, `{"answer": "notes.txt has 3 lines, 2 with TODO", "turns": 4, "stopped": "answer"}`)
	bodies := srv.Bodies()
	if len(bodies) != 5 {
		t.Fatalf("%d model requests, want 5 (four turns, the cut one twice):\n%s", len(bodies), strings.Join(bodies, "\n"))
	}
	if bodies[3] != bodies[2] {
		t.Fatalf("the cut turn was asked again with another request:\n%s\n%s", bodies[2], bodies[3])
	}
	for i := range bodies {
		for j := range i {
			if bodies[i] == bodies[j] && !(j == 2 && i == 3) {
				t.Fatalf("requests %d and %d are the same: a recorded reply was asked for again", j+1, i+1)
			}
		}
	}
	// Only turn 3's tool (wc on the file: one fs.read) runs after the resume.
	if strings.Count(errs, "fs.read "+notes) != 1 || strings.Contains(errs, "tool.run grep") || !strings.Contains(errs, "tool.run wc") {
		t.Errorf("the resume ran turn 1 or 2's tools again:\n%s", errs)
	}
	// The tokens: held with each attempt, charged from usage, the cut
	// attempt's as spent; nothing held once it ended.
	_, out, _ := invoke(t, "inspect", "r2")
	var limit, charged, held, lent int
	if i := strings.Index(out, "model tokens: "); i < 0 {
		t.Fatalf("inspect shows no model tokens:\n%s", out)
	} else if _, err := fmt.Sscanf(out[i:], "model tokens: %d limit, %d charged, %d held, %d lent", &limit, &charged, &held, &lent); err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	// modeltest's usage: the words of the last message and of the reply.
	used := 0
	for i, r := range []modeltest.Reply{{}, {}, {}, turn3, {Content: "notes.txt has 3 lines, 2 with TODO"}} {
		if i != 2 {
			used += len(strings.Fields(exLastMessage(srv.Requests[i]))) + len(strings.Fields(r.Content))
		}
	}
	if limit != 50000 || charged <= used || held != 0 || lent != 0 {
		t.Fatalf("model tokens: %d limit, %d charged, %d held, %d lent; want more charged than the %d the recorded replies used", limit, charged, held, lent, used)
	}
	t.Logf("model tokens: %d charged, %d of them used by the four recorded replies", charged, used)
}

// The summariser counts what wc would, skips what is not text, asks the
// model from the first lines; without the model's grant, says why.
func exampleSummarise(t *testing.T, prog string) {
	data := t.TempDir()
	exWriteFiles(t, data, map[string]string{
		"b.txt":       "\n  the first real line  \nsecond line\tof b\n",
		"a.md":        "# Alpha\n\nsome words here\n",
		"c.bin":       "\xff\xfe\x00binary",
		"sub/deep.md": "not listed",
	})
	srv := modeltest.New("", "Two short notes: a heading and a list of lines.")
	defer srv.Close()
	t.Setenv("RUNEHOST_MODEL_URL", srv.URL+"/v1")
	exGrant(t, "summarise", "fs.list:"+data, "fs.read:"+data, "model.chat:default")
	res, _ := exRun(t, exitOK, "run", prog, "--input", `{"dir": `+exJS(data)+`, "ask_model": true}`)
	exWantJSON(t, res, `{"dir": `+exJS(data)+`,
		"total": {"files": 2, "lines": 6, "words": 13, "chars": 67},
		"longest": "b.txt",
		"files": [
			{"name": "a.md", "lines": 3, "words": 5, "chars": 25, "first": "# Alpha"},
			{"name": "b.txt", "lines": 3, "words": 8, "chars": 42, "first": "the first real line"}],
		"skipped": [{"name": "c.bin", "reason": "value: fs.read `+data+`/c.bin: not UTF-8 text (read it with base64: true)"}],
		"summary": "Two short notes: a heading and a list of lines."}`)
	if srv.Calls() != 1 || !strings.Contains(exLastMessage(srv.Requests[0]), "- a.md (3 lines): # Alpha\n- b.txt (3 lines): the first real line") {
		t.Fatalf("model: %d calls, %+v", srv.Calls(), srv.Requests)
	}
	if code, _, errs := invoke(t, "revoke", "--prog", "summarise", "model.chat:default"); code != exitOK {
		t.Fatalf("revoke: %s", errs)
	}
	res, _ = exRun(t, exitOK, "run", prog, "--input", `{"dir": `+exJS(data)+`, "ask_model": true}`)
	m := res.(map[string]any)
	if _, ok := m["summary"]; ok || !strings.HasPrefix(m["summary_error"].(string), "denied: ") || m["total"].(map[string]any)["words"] != 13.0 {
		t.Fatalf("without the model's grant: %v", m)
	}
	if srv.Calls() != 1 {
		t.Fatalf("the model was called without a grant")
	}
}

// The file is written only when the answer is {"ok": true}.
func exampleApprove(t *testing.T, prog string) {
	dir := t.TempDir()
	exGrant(t, "approve", "approval", "fs.write:"+dir)
	ask := func(inv, file string, extra string) {
		t.Helper()
		_, errs := exRun(t, exitWaiting, "run", prog, "--input", `{"path": `+exJS(filepath.Join(dir, file))+`, "content": "deploy at noon\n"`+extra+`}`)
		if !strings.Contains(errs, "runehost send "+inv+" approval:1 JSON") || !strings.Contains(errs, "Write 15 characters to "+filepath.Join(dir, file)+"?") {
			t.Fatalf("%s: the question and how to answer it are not shown: %s", inv, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
			t.Fatalf("%s: written before it was approved", file)
		}
	}
	written := func(file string) bool {
		_, err := os.Stat(filepath.Join(dir, file))
		return err == nil
	}

	ask("r1", "yes.txt", "")
	if code, out, _ := invoke(t, "ps", "--status", "waiting"); code != exitOK || !strings.Contains(out, "r1") {
		t.Fatalf("ps: %q", out)
	}
	res, errs := exRun(t, exitOK, "send", "r1", "approval:1", `{"ok": true, "by": "ada"}`)
	if !strings.Contains(errs, `answered {"answer":{"ok":true,"by":"ada"}}`) {
		t.Errorf("the answer is not in the run log: %s", errs)
	}
	exWantJSON(t, res, `{"approved": true, "written": true, "by": "ada", "path": `+exJS(filepath.Join(dir, "yes.txt"))+`, "bytes": 15}`)
	if b, err := os.ReadFile(filepath.Join(dir, "yes.txt")); err != nil || string(b) != "deploy at noon\n" {
		t.Fatalf("yes.txt: %q %v", b, err)
	}

	ask("r2", "no.txt", "")
	res, _ = exRun(t, exitOK, "send", "r2", "approval:1", `{"ok": false, "reason": "not on a Friday"}`)
	exWantJSON(t, res, `{"approved": false, "written": false, "reason": "not on a Friday"}`)

	// No answer in time: a run may see its 1 ms pass, or wait and see it on resume.
	code, out, errs := invoke(t, "run", prog, "--input", `{"path": `+exJS(filepath.Join(dir, "late.txt"))+`, "content": "x", "timeout_ms": 1}`)
	if code == exitWaiting {
		time.Sleep(10 * time.Millisecond)
		code, out, errs = invoke(t, "resume", "r3")
	}
	if code != exitOK {
		t.Fatalf("timeout: exit %d %s %s", code, out, errs)
	}
	var late any
	json.Unmarshal([]byte(out), &late)
	exWantJSON(t, late, `{"approved": false, "written": false, "reason": "no answer in time"}`)

	// Approved, but outside the grant: reported, not thrown, nothing written.
	outside := t.TempDir()
	exRun(t, exitWaiting, "run", prog, "--input", `{"path": `+exJS(filepath.Join(outside, "x.txt"))+`, "content": "x"}`)
	res, _ = exRun(t, exitOK, "send", "r4", "approval:1", `{"ok": true}`)
	m := res.(map[string]any)
	if m["approved"] != true || m["written"] != false || !strings.HasPrefix(m["reason"].(string), "denied: ") {
		t.Fatalf("outside the grant: %v", m)
	}
	for _, f := range []string{"no.txt", "late.txt"} {
		if written(f) {
			t.Errorf("%s was written without an approval", f)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Error("written outside the grant")
	}
}

// Eleven files in waves of four children; the missing one's child fails
// and is reported in its place.
func exampleFanout(t *testing.T, prog string) {
	data := t.TempDir()
	var files []string
	want := 0
	for i := range 10 {
		name := filepath.Join(data, "f"+string(rune('0'+i))+".txt")
		var b strings.Builder
		for j := range 20 {
			if j%(i+2) == 0 {
				b.WriteString("fix this: TODO\n")
				want++
			} else {
				b.WriteString("fine\n")
			}
		}
		exWriteFiles(t, data, map[string]string{filepath.Base(name): b.String()})
		files = append(files, name)
	}
	missing := filepath.Join(data, "missing.txt")
	files = append(files[:5], append([]string{missing}, files[5:]...)...)
	list, _ := json.Marshal(files)
	exGrant(t, "fanout", "fs.read:"+data)
	res, _ := exRun(t, exitOK, "run", prog, "--input", `{"pattern": "TODO", "width": 4, "steps": 100000, "files": `+string(list)+`}`)
	m := res.(map[string]any)
	if m["files"] != 11.0 || m["matches"] != float64(want) || m["failed"] != 1.0 {
		t.Fatalf("files %v, matches %v (want %d), failed %v", m["files"], m["matches"], want, m["failed"])
	}
	reports := m["reports"].([]any)
	failedChild := ""
	for i, r := range reports {
		r := r.(map[string]any)
		if r["file"] != files[i] {
			t.Fatalf("report %d is of %v, want %s", i, r["file"], files[i])
		}
		if files[i] == missing {
			if !strings.HasPrefix(r["child"].(string), "r1.") || !strings.HasPrefix(r["error"].(string), "not_found: ") {
				t.Fatalf("the missing file's report: %v", r)
			}
			failedChild = r["child"].(string)
			continue
		}
		first := r["first"].([]any)
		if len(first) == 0 || first[0].(map[string]any)["line"] != 1.0 || first[0].(map[string]any)["text"] != "fix this: TODO" {
			t.Fatalf("report %d: %v", i, r)
		}
	}
	_, out, _ := invoke(t, "ps")
	status := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); strings.HasPrefix(f[0], "r1.") {
			status[f[1]]++
			if f[0] == failedChild && f[1] != "failed" {
				t.Errorf("ps: %s", line)
			}
		}
	}
	if status["completed"] != 10 || status["failed"] != 1 {
		t.Fatalf("ps: one child a file, the missing one's failed:\n%s", out)
	}
}

// Each URL's status, type, sizes and title, or its error: not granted,
// no connection.
func exampleFetch(t *testing.T, prog string) {
	mux := http.NewServeMux()
	page := "<html><head><title> The test page </title></head><body>héllo</body></html>"
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok": true}`))
	})
	mux.HandleFunc("/logo.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0xff, 0xd8, 0xff, 0x00, 0x01, 0x02})
	})
	mux.Handle("/old", http.RedirectHandler("/", http.StatusFound))
	web := httptest.NewServer(mux)
	defer web.Close()
	gone := httptest.NewServer(mux)
	gone.Close()
	host := strings.TrimPrefix(web.URL, "http://")
	exGrant(t, "fetch", "http.get:"+host, "http.get:"+strings.TrimPrefix(gone.URL, "http://"))
	urls := []string{web.URL + "/", web.URL + "/data.json", web.URL + "/nope", web.URL + "/logo.bin", web.URL + "/old", gone.URL + "/", "http://not-granted.example/"}
	list, _ := json.Marshal(urls)
	res, _ := exRun(t, exitOK, "run", prog, "--input", `{"urls": `+string(list)+`}`)
	m := res.(map[string]any)
	exWantJSON(t, m["summary"], `{"ok": 4, "other": 1, "errors": 2}`)
	pages := m["pages"].([]any)
	if len(pages) != len(urls) {
		t.Fatalf("%d pages for %d URLs", len(pages), len(urls))
	}
	html := `{"status": 200, "type": "text/html; charset=utf-8", "bytes": 75, "chars": 74, "title": "The test page"`
	for i, want := range []string{
		`{"url": ` + exJS(urls[0]) + `, ` + html[1:] + `}`,
		`{"url": ` + exJS(urls[1]) + `, "status": 200, "type": "application/json", "bytes": 12, "chars": 12}`,
		`{"url": ` + exJS(urls[2]) + `, "status": 404, "type": "text/plain; charset=utf-8", "bytes": 19, "chars": 19}`,
		`{"url": ` + exJS(urls[3]) + `, "status": 200, "type": "application/octet-stream", "bytes": 6, "base64_chars": 8}`,
		`{"url": ` + exJS(urls[4]) + `, ` + html[1:] + `, "final_url": ` + exJS(web.URL+"/") + `}`,
	} {
		exWantJSON(t, pages[i], want)
	}
	for i, kind := range map[int]string{5: "failed", 6: "denied"} {
		p := pages[i].(map[string]any)
		if p["error"] != kind || !strings.Contains(p["msg"].(string), urls[i]) {
			t.Errorf("%s: %v, want an error of kind %s", urls[i], p, kind)
		}
	}
}

// A run killed with SIGKILL mid-way is resumed from its checkpoint: it
// ends with the primes counted, and its log has every chunk once.
func examplePrimes(t *testing.T, prog string) {
	dir := t.TempDir()
	exGrant(t, "primes", "fs.write:"+dir)
	// Killed: the test binary is runehost (TestMain).
	killed := filepath.Join(dir, "killed.txt")
	// Chunks long enough, compiled, that the kill lands inside one.
	cmd := exec.Command(os.Args[0], "run", prog, "--limit", "1000000000", "--input", `{"log": `+exJS(killed)+`, "upto": 300000, "chunk": 60000}`)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+os.Getenv("RUNEHOST_STORE"), "RUNEHOST_CACHE_DIR="+os.Getenv("RUNEHOST_CACHE_DIR"))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	// Killed as soon as the header's and two chunks' writes are stored (a
	// result is printed once it is), so inside the next chunk's computing,
	// away from a write: a kill inside an append leaves it unknown, for an
	// operator. A sleep after the log's lines once raced the compiled code.
	for {
		if strings.Count(stderr.String(), "fs.write: {") >= 3 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before it was killed: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no two chunks in 30 s:\n%s", stderr)
		}
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-done; err == nil || cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("the run ended before it was killed: %v\n%s", err, stderr)
	}
	before, _ := os.ReadFile(killed)
	if code, out, _ := invoke(t, "ps"); code != exitOK || !strings.HasPrefix(out, "r1         running") {
		t.Fatalf("ps after the kill:\n%s", out)
	}
	res, errs := exRun(t, exitOK, "resume", "r1")
	exWantJSON(t, res, `{"upto": 300000, "primes": 25997}`)
	after, _ := os.ReadFile(killed)
	want := "primes below 300000, 60000 numbers a chunk\n0..60000: 6057 primes, 6057 so far\n60000..120000: 5244 primes, 11301 so far\n" +
		"120000..180000: 5041 primes, 16342 so far\n180000..240000: 4879 primes, 21221 so far\n240000..300000: 4776 primes, 25997 so far\n"
	if string(after) != want || !strings.HasPrefix(string(after), string(before)) {
		t.Fatalf("log before the kill:\n%s\nafter the resume:\n%s\nwant:\n%s\nresume's stderr:\n%s", before, after, want, errs)
	}
	// The resume did only the writes the killed run had not done.
	if n, done := strings.Count(errs, "fs.write "+killed), strings.Count(string(before), "\n"); n != 6-done {
		t.Fatalf("the resume wrote %d times, after %d writes before the kill, of 6:\n%s", n, done, errs)
	}
}
