// hints_test.go: the commands the CLI suggests work as printed (each test
// takes them from the output and runs them), and a prog's name is bound to
// its file.

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hintRE finds suggested commands: "(runehost ...)" and lines that are one.
var hintRE = regexp.MustCompile(`\((runehost [^()]*)\)|(?m)^\s*(runehost .*?)(?:\s{3}.*)?$`)

// hints are the runehost commands suggested in text, as argument lists.
func hints(text string) [][]string {
	var out [][]string
	for _, m := range hintRE.FindAllStringSubmatch(text, -1) {
		cmd := m[1] + m[2]
		for _, part := range strings.Split(cmd, ", or ") {
			out = append(out, shellSplit(strings.TrimSpace(part))[1:])
		}
	}
	return out
}

// shellSplit splits a command line as a POSIX shell would, for the quoting
// host.ShellWord does.
func shellSplit(s string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

func TestShellSplit(t *testing.T) {
	got := shellSplit(`runehost grant --prog 'my prog' 'fs.read:/a b/it'\''s' x\ y`)
	want := []string{"runehost", "grant", "--prog", "my prog", "fs.read:/a b/it's", "x y"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("%q", got)
	}
}

// A denied act's hint grants it: run as printed, the act is allowed.
func TestDenialHintGrants(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	data := filepath.Join(t.TempDir(), "my data")
	os.Mkdir(data, 0o755)
	os.WriteFile(filepath.Join(data, "x.txt"), []byte("hello"), 0o644)
	f := writeProg(t, `try { return act "fs.read" {path: input} } catch e { return e.kind }`)
	in := `"` + filepath.Join(data, "x.txt") + `"`
	code, out, errs := invoke(t, "run", f, "--input", in)
	if code != exitOK || out != "\"denied\"\n" || !strings.Contains(errs, "its grant names a target: want a directory: fs.read:DIR") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	hs := hints(errs)
	if len(hs) == 0 || hs[0][0] != "grant" {
		t.Fatalf("no grant hint in %q", errs)
	}
	if code, _, e := invoke(t, hs[0]...); code != exitOK {
		t.Fatalf("%q: exit %d, %s", hs[0], code, e)
	}
	if code, out, errs := invoke(t, "run", f, "--input", in); code != exitOK || out != "\"hello\"\n" {
		t.Fatalf("after the hint: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// A tag whose grant has no target gets the command before it runs.
	g := writeProg(t, `try { return act "approval" {question: "ok?"} } catch e { return e.kind }`)
	code, _, errs = invoke(t, "run", "--name", "asks", g)
	if !strings.Contains(errs, "grants: asks has no grant for act approval; it will be denied (runehost grant --prog asks approval)") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if code, _, e := invoke(t, hints(errs)[0]...); code != exitOK {
		t.Fatalf("exit %d, %s", code, e)
	}
}

// A different file under a name already bound is refused, creating
// nothing; each suggested way out works as printed, and state and grants
// are the name's.
func TestProgIdentity(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	root := t.TempDir()
	counter := "var n = 0\nif state != nil { n = state.n }\nreturn {n: n + 1, who: input}\n"
	mine := filepath.Join(root, "p", "hi.rune")
	theirs := filepath.Join(root, "other", "hi.rune")
	for _, f := range []string{mine, theirs} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, []byte(counter), 0o644)
	}
	for _, want := range []string{`"n":1`, `"n":2`} {
		if code, out, errs := invoke(t, "run", mine, "--input", `"mine"`); code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("mine: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	}
	if code, _, e := invoke(t, "grant", "--prog", "hi", "approval"); code != exitOK {
		t.Fatalf("grant: %d %s", code, e)
	}
	code, out, errs := invoke(t, "run", theirs)
	if code != exitUsage || out != "" || !strings.Contains(errs, "prog hi is the file "+mine+"; this is the file "+theirs) {
		t.Fatalf("theirs: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, ps, _ := invoke(t, "ps"); strings.Contains(ps, "r3") {
		t.Fatalf("a refused run was admitted: %s", ps)
	}
	hs := hints(errs)
	if len(hs) != 2 {
		t.Fatalf("want two hints in %q, got %q", errs, hs)
	}
	// --name: a prog of its own, from no state, with no grants.
	// No id was spent on the refused run: the next is r3.
	if code, out, e := invoke(t, hs[0]...); code != exitOK || !strings.Contains(out, `"n":1`) || !strings.Contains(strings.Join(hs[0], " "), "--name other-hi") || !strings.Contains(e, "invocation r3\n") {
		t.Fatalf("%q: exit %d, %q, %s", hs[0], code, out, e)
	}
	if _, out, _ := invoke(t, "grants", "--prog", "other-hi"); strings.Contains(out, "approval") {
		t.Fatalf("other-hi has hi's grants: %s", out)
	}
	// --replace: the file becomes hi, with hi's state; then mine is refused.
	if code, out, e := invoke(t, hs[1]...); code != exitOK || !strings.Contains(out, `"n":3`) {
		t.Fatalf("%q: exit %d, %q, %s", hs[1], code, out, e)
	}
	if code, _, errs := invoke(t, "run", mine); code != exitUsage || !strings.Contains(errs, "prog hi is the file "+theirs) {
		t.Fatalf("mine after replace: exit %d, %s", code, errs)
	}
	// Editing the bound file is the same prog; a name no one can type back is refused.
	os.WriteFile(theirs, []byte("return state.n * 10\n"), 0o644)
	if code, out, e := invoke(t, "run", theirs); code != exitOK || out != "30\n" {
		t.Fatalf("edited: exit %d, %q, %s", code, out, e)
	}
	if code, _, errs := invoke(t, "run", "--name", "a b", mine); code != exitUsage || !strings.Contains(errs, `prog name "a b": no spaces`) {
		t.Fatalf("bad name: exit %d, %s", code, errs)
	}
}

// A run that waits for one event names it in the command that sends it.
func TestWaitingHint(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, `let e = await {key: "go"}`+"\nreturn e.n\n")
	code, _, errs := invoke(t, "run", f)
	if code != exitWaiting || !strings.Contains(errs, "(runehost send r1 go JSON, or runehost resume r1)") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	send := hints(errs)[0]
	send[len(send)-1] = `{"n": 7}` // the JSON is the sender's
	if code, out, e := invoke(t, send...); code != exitOK || out != "7\n" {
		t.Fatalf("%q: exit %d, %q, %s", send, code, out, e)
	}
}

// A parent that may not start another prog is told the grant that lets it.
func TestSpawnHint(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	kid := filepath.Join(t.TempDir(), "kid.rune")
	os.WriteFile(kid, []byte("return input * 2\n"), 0o644)
	if code, _, e := invoke(t, "run", kid, "--input", "1"); code != exitOK {
		t.Fatal(e)
	}
	f := writeProg(t, `let c = act "spawn" {steps: 1000, input: 21, prog: "kid"}`+"\nreturn (await {key: c.id}).result\n")
	code, _, errs := invoke(t, "run", f)
	if code != exitFailed || !strings.Contains(errs, `spawn: p may not start prog "kid" (runehost grant --prog p spawn:kid)`) {
		t.Fatalf("exit %d, %s", code, errs)
	}
	if code, _, e := invoke(t, hints(errs)[0]...); code != exitOK {
		t.Fatalf("%q: exit %d, %s", hints(errs)[0], code, e)
	}
	if code, out, errs := invoke(t, "run", f); code != exitOK || out != "42\n" {
		t.Fatalf("after the hint: exit %d, %q, %s", code, out, errs)
	}
	// An act no adapter has is named as such, not given a grant that fails.
	g := writeProg(t, `try { return act "jion" {} } catch e { return e.kind }`)
	if _, _, errs := invoke(t, "run", "--replace", g); !strings.Contains(errs, "grants: p has no grant for act jion; it will be denied (no act is called jion on this host") {
		t.Fatalf("%s", errs)
	}
}
