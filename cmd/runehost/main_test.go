// main_test.go runs the CLI as a user would and checks output and exit codes.

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/internal/testtools"
	"github.com/runehost/runehost/store"
)

func invoke(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if os.Getenv("RUNEHOST_STORE") == "" {
		t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	}
	t.Setenv("RUNEHOST_CACHE_DIR", filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	serveStore(t, os.Getenv("RUNEHOST_STORE"))
	var out, errb bytes.Buffer
	code = realMain(append([]string{"runehost"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func writeProg(t *testing.T, src string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "p.rune")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRunHello(t *testing.T) {
	code, out, errs := invoke(t, "run", "../../testdata/progs/hello.rune", "--input", `{"name":"Ada"}`)
	if code != exitOK || out != `{"greeting":"Hello, Ada!","letters":3}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, `3 greeting {"to":"Ada"}`) || !strings.Contains(errs, `answer {"greeting":"Hello, Ada!","letters":3}`) {
		t.Fatalf("events missing from stderr: %q", errs)
	}
}

func TestRunFlagsEitherSide(t *testing.T) {
	f := writeProg(t, "return input")
	for _, args := range [][]string{
		{"run", "--input", "[1]", f},
		{"run", f, "--input", "[1]"},
		{"run", f, "--input=[1]", "--slice", "3"},
	} {
		code, out, errs := invoke(t, args...)
		if code != exitOK || out != "[1]\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

func TestRunFailure(t *testing.T) {
	f := writeProg(t, "let x = 1\nreturn x / 0")
	code, _, errs := invoke(t, "run", f)
	if code != exitFailed || !strings.Contains(errs, f+":2:10: zero_division: division by zero") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestRunLimit(t *testing.T) {
	f := writeProg(t, "while true {}")
	code, _, errs := invoke(t, "run", f, "--limit", "500")
	if code != exitFailed || !strings.Contains(errs, "steps: step limit of 500 exceeded") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestRunActDenied(t *testing.T) {
	f := writeProg(t, `try { act "fs.read" {path: "x"} } catch e { return e.kind }`)
	code, out, errs := invoke(t, "run", f)
	if code != exitOK || out != "\"denied\"\n" || !strings.Contains(errs, `→    4 fs.read x`) || !strings.Contains(errs, `✗    5 fs.read: error denied: no grant for act fs.read`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "want exactly one FILE"},
		{[]string{"run", "/nonexistent.rune"}, "no such file"},
		{[]string{"run", "../../testdata/progs/hello.rune", "--input", "{bad"}, "--input: invalid JSON"},
		{[]string{"check"}, "no file given"},
	} {
		code, _, errs := invoke(t, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	good := writeProg(t, `let r = act "fs.read" {}`+"\nreturn r")
	code, out, _ := invoke(t, "check", good)
	if code != exitOK || !strings.Contains(out, "ok (1 function; acts: fs.read)") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	bad := writeProg(t, "let x = 1\nreturn y")
	code, _, errs := invoke(t, "check", bad)
	if code != exitUsage || !strings.Contains(errs, bad+":2:8: undefined: y") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, out, _ = invoke(t, "check", "-d", good)
	if code != exitOK || !strings.Contains(out, "act") || !strings.Contains(out, "fn 0 main") {
		t.Fatalf("disassembly: exit %d, %q", code, out)
	}
}

func TestCompileErrorOnRun(t *testing.T) {
	f := writeProg(t, "let = 3")
	code, _, errs := invoke(t, "run", f)
	if code != exitUsage || !strings.Contains(errs, f+":1:5: got =, want identifier") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// A prog's state is the result of its last completed run.
func TestRunKeepsState(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := filepath.Join(t.TempDir(), "counter.rune")
	os.WriteFile(f, []byte("return (state || 0) + 1"), 0o644)
	for want := 1; want <= 3; want++ {
		code, out, errs := invoke(t, "run", f)
		if code != exitOK || out != fmt.Sprintf("%d\n", want) {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q", want, code, out, errs)
		}
	}
	code, out, _ := invoke(t, "ps", "--status", "completed")
	if code != exitOK || strings.Count(out, "counter") != 3 {
		t.Fatalf("ps: exit %d, %q", code, out)
	}
}

func TestRunWaitsThenSend(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "let v = await {key: \"approve\"}\nreturn v.by")
	code, _, errs := invoke(t, "run", f)
	if code != exitWaiting || !strings.Contains(errs, "waiting: r1 waits for an event [approve]") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, out, errs := invoke(t, "send", "r1", "approve", `{"by": "ada"}`)
	if code != exitOK || out != "\"ada\"\n" {
		t.Fatalf("send: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = invoke(t, "send", "r9", "approve", `{}`)
	if code != exitUsage || !strings.Contains(errs, "no such invocation") {
		t.Fatalf("send to nobody: exit %d, stderr %q", code, errs)
	}
}

func TestStoreInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Setenv("RUNEHOST_STORE", dir)
	code, _, errs := invoke(t, "ps")
	if code != exitUsage || !strings.Contains(errs, "is in use by pid") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestInspect(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, `try { act "fs.read" {path: "x"} } catch e { }`+"\nreturn 1")
	if code, _, errs := invoke(t, "run", f); code != exitOK {
		t.Fatalf("run: %d %s", code, errs)
	}
	code, out, errs := invoke(t, "inspect", "--json", "r1")
	if code != exitOK || !strings.Contains(out, `"status":"completed"`) || !strings.Contains(out, `"phase":"consumed"`) || !strings.Contains(out, `"outcome":"denied: no grant for act fs.read (runehost grant --prog p fs.read:`) {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errs)
	}
	if code, _, _ := invoke(t, "inspect", "r7"); code != exitUsage {
		t.Fatalf("inspect of nobody: exit %d", code)
	}
}

// --tokens is the run's model-token limit (the default without it), and
// inspect shows it.
func TestRunTokens(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "return 1")
	for i, c := range []struct{ args, want string }{{"", `"tokens":{"charged":0,"held":0,"lent":0,"limit":200000}`}, {"--tokens=1234", `"tokens":{"charged":0,"held":0,"lent":0,"limit":1234}`}} {
		args := []string{"run", f}
		if c.args != "" {
			args = append(args, c.args)
		}
		if code, _, errs := invoke(t, args...); code != exitOK {
			t.Fatalf("run: %d %s", code, errs)
		}
		inv := fmt.Sprintf("r%d", i+1)
		if code, out, errs := invoke(t, "inspect", "--json", inv); code != exitOK || !strings.Contains(out, c.want) {
			t.Fatalf("inspect %s: exit %d, stdout %s, stderr %s", inv, code, out, errs)
		}
		if code, out, errs := invoke(t, "inspect", inv); code != exitOK || !strings.Contains(out, "model tokens: "+strings.TrimSuffix(c.want[strings.LastIndex(c.want, ":")+1:], "}")+" limit, 0 charged") {
			t.Fatalf("inspect %s: exit %d, stdout %s, stderr %s", inv, code, out, errs)
		}
	}
}

func TestCancel(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "return await {key: \"go\"}")
	if code, _, _ := invoke(t, "run", f); code != exitWaiting {
		t.Fatalf("run: exit %d", code)
	}
	if code, _, errs := invoke(t, "cancel", "r1"); code != exitOK {
		t.Fatalf("cancel: exit %d, %s", code, errs)
	}
	if code, _, errs := invoke(t, "send", "r1", "go", "1"); code != exitUsage || !strings.Contains(errs, "cancelled") {
		t.Fatalf("send to a cancelled invocation: exit %d, %s", code, errs)
	}
	if code, _, errs := invoke(t, "cancel", "r1"); code != exitUsage || !strings.Contains(errs, "r1 has ended: it was cancelled already") {
		t.Fatalf("cancel twice: exit %d, %s", code, errs)
	}
	if code, out, _ := invoke(t, "ps", "--status", "cancelled"); code != exitOK || !strings.Contains(out, "r1") {
		t.Fatalf("ps: exit %d, %q", code, out)
	}
}

// A prog that spawns children runs its whole tree in the sandbox.
func TestRunSpawns(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, `if input != nil { return input * input }
var kids = []
for i in range(1, 4) { kids = append(kids, act "spawn" {steps: 20000, input: i}) }
var sum = 0
for k in kids { sum += (await {key: k.id}).result }
return sum`)
	code, out, errs := invoke(t, "run", f)
	if code != exitOK || out != "14\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestGrantsAndPreflight(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, `try { return act "fs.read" {path: "x"} } catch e { return e.kind }`)
	code, out, errs := invoke(t, "run", f)
	if code != exitOK || out != "\"denied\"\n" || !strings.Contains(errs, "grants: p has no grant for act fs.read; it will be denied (its grant names a target: want a directory: fs.read:DIR or fs.read:DIR=/GUEST; a denial names the one it needs)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = invoke(t, "run", "--strict-grants", f)
	if code != exitUsage || !strings.Contains(errs, "refused by --strict-grants: p has no grant for fs.read") {
		t.Fatalf("strict: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := invoke(t, "ps"); code != exitOK || strings.Contains(errs, "r2") {
		t.Fatalf("a refused run was admitted: %s", errs)
	}
	data := t.TempDir()
	if code, _, errs := invoke(t, "grant", "--prog", "p", "fs.read:"+data); code != exitOK {
		t.Fatalf("grant: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "grant", "fs.read"); code != exitUsage || !strings.Contains(errs, "want a directory") {
		t.Fatalf("fs.read without a directory: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "grant", "bad tag"); code != exitUsage || !strings.Contains(errs, "want TAG or TAG:TARGET") {
		t.Fatalf("bad grant: %d %s", code, errs)
	}
	code, out, _ = invoke(t, "grants", "--jsonl")
	if code != exitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"statement":"fs.read:`+data+`","tag":"fs.read","target":"`+data+`"`) {
		t.Fatalf("grants: %d %s", code, out)
	}
	code, _, errs = invoke(t, "run", "--strict-grants", f)
	if code != exitOK || strings.Contains(errs, "grants:") {
		t.Fatalf("granted: exit %d, stderr %q", code, errs)
	}
	wd, _ := os.Getwd()
	os.Chdir(filepath.Dir(data))
	defer os.Chdir(wd)
	if code, _, errs := invoke(t, "revoke", "--prog", "p", "fs.read:./"+filepath.Base(data)); code != exitOK {
		t.Fatalf("revoke: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "revoke", "--prog", "p", "fs.read:"+data); code != exitUsage || !strings.Contains(errs, "has no grant") {
		t.Fatalf("revoke again: %d %s", code, errs)
	}
}

func TestEvents(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, `emit("step", {n: 1})
try { act "fs.read" {path: "x"} } catch e { }
let v = await {key: "go"}
emit("step", {n: 2})
return v`)
	if code, _, errs := invoke(t, "run", f); code != exitWaiting {
		t.Fatalf("run: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "send", "r1", "go", `"yes"`); code != exitOK {
		t.Fatalf("send: %d %s", code, errs)
	}
	code, out, errs := invoke(t, "events", "r1")
	want := []string{`▶    1 input null`, `ℹ    2 p rev 0`, `◆    3 step {"n":1}`, `→    5 fs.read x`, `✗    6 fs.read: error denied: no grant for act fs.read`,
		`⊘    9 refused: fs.read denied`, `•   10 waiting: waiting for an event [go]`, `◆   11 step {"n":2}`, `★   12 answer yes`, `■   13 out:r1 completed`}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != len(want) {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errs)
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, want[i]) {
			t.Errorf("line %d: %q, want %q", i+1, line, want[i])
		}
	}
	// Every seq, spans included, once and in order; from N: exactly the rest.
	code, out, _ = invoke(t, "events", "r1", "--jsonl")
	all := strings.Split(strings.TrimSpace(out), "\n")
	for i, line := range all {
		if !strings.HasPrefix(line, fmt.Sprintf(`{"seq":%d,`, i+1)) {
			t.Fatalf("line %d of --jsonl: %s", i+1, line)
		}
	}
	code, out, _ = invoke(t, "events", "r1", "--from", "11", "--jsonl")
	if code != exitOK || strings.Count(out, "\n") != len(all)-10 || !strings.HasPrefix(out, `{"seq":11,`) || !strings.Contains(out, `"type":"emit","name":"step","data":"{\"n\":2}"`) {
		t.Fatalf("from 11: %d %s", code, out)
	}
	// --follow on an ended invocation prints and returns.
	if code, out, _ = invoke(t, "events", "r1", "--follow", "--from", "12"); code != exitOK || !strings.Contains(out, "completed") {
		t.Fatalf("follow: %d %s", code, out)
	}
	if code, _, errs = invoke(t, "events", "r9"); code != exitUsage || !strings.Contains(errs, "no such invocation") {
		t.Fatalf("unknown: %d %s", code, errs)
	}
}

// A checkpoint the host cannot run pauses its invocation; inspect saves it,
// migrate refuses garbage and takes a valid replacement.
func TestMigrate(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "return await {key: \"go\"}")
	if code, _, errs := invoke(t, "run", f); code != exitWaiting {
		t.Fatalf("run: %d %s", code, errs)
	}
	saved := filepath.Join(t.TempDir(), "cp")
	if code, _, errs := invoke(t, "inspect", "r1", "--save-checkpoint", saved); code != exitOK {
		t.Fatalf("inspect: %d %s", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("garbage"), 0o644)
	if code, _, errs := invoke(t, "migrate", "r1", bad); code != exitFailed || !strings.Contains(errs, "replacement checkpoint refused") {
		t.Fatalf("migrate garbage: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "migrate", "r1", saved, "--dry-run"); code != exitOK || !strings.Contains(errs, "valid (dry run") {
		t.Fatalf("dry run: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "migrate", "r1", saved); code != exitOK || !strings.Contains(errs, "migrated: r1") {
		t.Fatalf("migrate: %d %s", code, errs)
	}
	if code, out, errs := invoke(t, "send", "r1", "go", "7"); code != exitOK || out != "7\n" {
		t.Fatalf("send: %d %s %s", code, out, errs)
	}
}

func TestGC(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "return 1")
	invoke(t, "run", f)
	if code, _, errs := invoke(t, "gc", "--older-than", "1h"); code != exitOK || !strings.Contains(errs, "deleted 0 invocations") {
		t.Fatalf("gc: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "gc", "--older-than", "0s", "--dry-run"); code != exitOK || !strings.Contains(errs, "would delete 1 invocations") {
		t.Fatalf("gc dry: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "gc", "--older-than", "0s"); code != exitOK || !strings.Contains(errs, "deleted 1 invocations") {
		t.Fatalf("gc: %d %s", code, errs)
	}
	if code, out, _ := invoke(t, "ps"); code != exitOK || out != "" {
		t.Fatalf("ps after gc: %q", out)
	}
}

// `runehost tool run` stands in for a WASI runtime: stdin through, output
// as it runs, the tool's exit status.
func TestToolRun(t *testing.T) {
	dir := t.TempDir()
	wc := filepath.Join(dir, "wc.wasm")
	os.WriteFile(wc, testtools.Build(t, "wc"), 0o644)
	grep := filepath.Join(dir, "grep.wasm")
	os.WriteFile(grep, testtools.Build(t, "grep"), 0o644)
	spin := filepath.Join(dir, "spin.wasm")
	os.WriteFile(spin, testtools.Build(t, "spin"), 0o644)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	code, out, errs := invoke(t, "tool", "run", grep, "--grant", "fs.read:"+data+"=/d", "--", "t", "/d/f.txt")
	if code != 0 || out != "two\nthree\n" {
		t.Fatalf("grep: %d %q %q", code, out, errs)
	}
	if code, out, errs = invoke(t, "tool", "run", grep, "--grant", "fs.read:"+data+"=/d", "--", "zzz", "/d/f.txt"); code != 1 || errs != "" {
		t.Fatalf("grep without a match: %d %q %q", code, out, errs)
	}
	if code, _, errs = invoke(t, "tool", "run", grep, "--", "t", data+"/f.txt"); code != 2 || !strings.Contains(errs, "grep:") {
		t.Fatalf("grep of an ungranted file: %d %q", code, errs)
	}
	if code, _, errs = invoke(t, "tool", "run", spin, "--fuel", "100000", "--json"); code != exitToolFuel || !strings.Contains(errs, `"stop":"fuel"`) {
		t.Fatalf("spin: %d %q", code, errs)
	}
	if code, _, errs = invoke(t, "tool", "run", wc, "--grant", "net:everything"); code != exitUsage {
		t.Fatalf("bad grant: %d %q", code, errs)
	}
}

func TestRedactFilter(t *testing.T) {
	t.Setenv("RUNEHOST_MODEL_URL", "http://127.0.0.1:1/v1")
	t.Setenv("RUNEHOST_MODEL_KEY", "host-sentinel-Qx81")
	// A block that opens mid-line is gathered too; a line longer than the
	// reader's buffer is redacted whole.
	long := strings.Repeat("x ", 32760) // the secret crosses the 64 KiB buffer
	in := "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nPORT=3000\nkey host-sentinel-Qx81 here\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n" +
		"log: -----BEGIN RSA PRIVATE KEY-----\nMIIEbody1\nbody2\n-----END RSA PRIVATE KEY-----\n" + long + "password=hunter2hunter2\n"
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter, app.Reader = &out, &errb, strings.NewReader(in)
	if err := app.Run([]string{"runehost", "redact"}); err != nil {
		t.Fatal(err)
	}
	want := "AWS_SECRET_ACCESS_KEY=«redacted»\nPORT=3000\nkey «redacted» here\n-----BEGIN EC PRIVATE KEY-----«redacted»-----END EC PRIVATE KEY-----\n" +
		"log: -----BEGIN RSA PRIVATE KEY-----«redacted»-----END RSA PRIVATE KEY-----\n" + long + "password=«redacted»\n"
	if out.String() != want {
		t.Fatalf("got %.300q", out.String())
	}
}

// A secret set in the host's configuration and echoed by a tool (and by a
// model) never appears in the store, the events, or the CLI's output.
func TestSentinelSecretNeverLeaks(t *testing.T) {
	const sentinel = "sk-sentinel-Zz81Qw77Lm"
	srv := modeltest.New(sentinel, "your key is "+sentinel)
	defer srv.Close()
	storeDir := filepath.Join(t.TempDir(), "store")
	t.Setenv("RUNEHOST_STORE", storeDir)
	t.Setenv("RUNEHOST_MODEL_URL", srv.URL+"/v1")
	t.Setenv("RUNEHOST_MODEL_KEY", sentinel)
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "cat.wasm"), testtools.Build(t, "cat"), 0o644)
	t.Setenv("RUNEHOST_TOOLS", tools)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "app.env"), []byte("MODEL_KEY="+sentinel+"\n"), 0o644)
	var all strings.Builder
	run := func(args ...string) (int, string) {
		code, out, errs := invoke(t, args...)
		all.WriteString(out + errs)
		return code, out + errs
	}
	if code, out := run("grant", "--prog", "p", "tool.run:cat", "fs.read:"+data+"=/d", "model.chat:default"); code != exitOK {
		t.Fatal(out)
	}
	f := writeProg(t, `let r = act "tool.run" {tool: "cat", args: ["/d/app.env"]}
emit("tool", {out: r.stdout})
log(r.stdout)
let m = act "model.chat" {messages: [{role: "user", content: "echo: " + r.stdout}]}
return {tool: r.stdout, model: m.content}`)
	code, out := run("run", f)
	if code != exitOK || !strings.Contains(out, "MODEL_KEY=«redacted»") || !strings.Contains(out, "your key is «redacted»") {
		t.Fatalf("run: %d %s", code, out)
	}
	for _, args := range [][]string{{"events", "r1", "--all"}, {"events", "r1", "--json"}, {"inspect", "r1"}, {"inspect", "r1", "--json"}, {"ps", "--json"}} {
		if code, out := run(args...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	if strings.Contains(all.String(), sentinel) || strings.Contains(all.String(), sentinel[:12]) {
		t.Fatalf("the secret reached the CLI's output:\n%s", all.String())
	}
	if srv.Calls() != 1 {
		t.Fatalf("model calls: %d", srv.Calls())
	}
	// Grep the whole store directory.
	filepath.Walk(storeDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(sentinel)) || bytes.Contains(b, []byte(sentinel[:12])) {
			t.Errorf("the secret is in %s", path)
		}
		return nil
	})
}

func TestToolEnvOfTheHostRefused(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	if code, _, errs := invoke(t, "grant", "tool.env:RUNEHOST_MODEL_KEY"); code != exitUsage || !strings.Contains(errs, "never given to a tool") {
		t.Fatalf("%d %s", code, errs)
	}
}

// lineReader hands over one line per Read, as a pipe from tail -f does.
type lineReader struct{ lines []string }

func (r *lineReader) Read(p []byte) (int, error) {
	if len(r.lines) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.lines[0])
	if r.lines[0] = r.lines[0][n:]; r.lines[0] == "" {
		r.lines = r.lines[1:]
	}
	return n, nil
}

// A block that spans lines arriving one by one is still redacted whole.
func TestRedactFilterLineByLine(t *testing.T) {
	in := &lineReader{lines: []string{"password: |\n", "  s3cretValue9x\n", "  more of it\n", "next: ok\n",
		"key: -----BEGIN PRIVATE KEY-----\n", "MIIEvQIBADANBg\n", "-----END PRIVATE KEY-----\n", "done\n"}}
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter, app.Reader = &out, &errb, in
	if err := app.Run([]string{"runehost", "redact"}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, s := range []string{"s3cretValue9x", "more of it", "MIIEvQIBADANBg"} {
		if strings.Contains(got, s) {
			t.Fatalf("%q survived: %q", s, got)
		}
	}
	if !strings.Contains(got, "next: ok\n") || !strings.HasSuffix(got, "done\n") {
		t.Fatalf("lines lost: %q", got)
	}
}

// A prog holding some 112 MB cannot be checkpointed: the run ends as the
// prog's own limit error, naming the size and the limit, the invocation is
// failed (not running, not paused), resume says it has ended without
// running it again, and the host goes on.
func TestRunHeapTooLargeToCheckpoint(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	t.Setenv("RUNEHOST_CHECKPOINT_EVERY", "1h") // no checkpoint before the end
	f := writeProg(t, `let s = "x" * 8000000
let l = [s+"a", s+"b", s+"c", s+"d", s+"e", s+"f", s+"g", s+"h", s+"i", s+"j", s+"k", s+"l", s+"m"]
return len(l)`)
	code, out, errs := invoke(t, "run", f)
	if code != exitFailed || !strings.Contains(errs, "limit: checkpoint of 112000") || !strings.Contains(errs, "bytes exceeds the limit of 67108864") {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs = invoke(t, "ps"); code != exitOK || !strings.Contains(out, "r1") || !strings.Contains(out, "failed") || strings.Contains(out, "paused") || strings.Contains(out, "running") {
		t.Fatalf("ps: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs = invoke(t, "inspect", "r1"); code != exitOK || !strings.Contains(out, "error limit: checkpoint of 112000") || !strings.Contains(out, "failed") {
		t.Fatalf("inspect: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs = invoke(t, "resume", "r1"); code != exitUsage || !strings.Contains(errs, "r1 has ended (failed): nothing to resume") {
		t.Fatalf("resume: exit %d, %q", code, errs)
	}
	if code, out, errs = invoke(t, "run", "--name", "seven", writeProg(t, "return 7")); code != exitOK || out != "7\n" {
		t.Fatalf("another run: exit %d, %q, %q", code, out, errs)
	}
}
