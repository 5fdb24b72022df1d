// tutorial_test.go runs docs/tutorial.md: its shell blocks in order, in
// one shell's environment at the repository's root, each block's output
// compared with the output block the tutorial shows after it, modulo
// times, paths and the lines it trims with "…".

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/model/modeltest"
)

// The tutorial's literal places, and where the test puts them.
const (
	tutorialRoot  = "/home/ada/runehost" // the clone, as the tutorial shows it
	tutorialModel = "127.0.0.1:8080"     // make dev-model's address
	skipMark      = "<!-- tutorial-test: skip"
)

// tutorialStep is a shell block and the output shown after it.
type tutorialStep struct {
	line   int // of the shell block, in docs/tutorial.md
	script string
	want   []string // nil when the tutorial shows none
	at     int      // the first line of want, in docs/tutorial.md
	skip   string   // why the test does not run it
}

// tutorialSteps reads the shell blocks of a tutorial and their outputs: an
// output is the first plain ``` block after a shell block, before the next.
// A block after "<!-- tutorial-test: skip: WHY -->" is not run.
func tutorialSteps(path string) ([]tutorialStep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var steps []tutorialStep
	sc := bufio.NewScanner(f)
	n, skip, lang, open := 0, "", "", false
	var body []string
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case !open && strings.HasPrefix(l, skipMark):
			skip = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, skipMark), "-->"))
			skip = strings.TrimSpace(strings.TrimPrefix(skip, ":"))
		case !open && strings.HasPrefix(l, "```"):
			open, lang, body = true, strings.TrimPrefix(l, "```"), nil
		case open && l == "```":
			open = false
			switch {
			case lang == "sh":
				steps = append(steps, tutorialStep{line: n - len(body) - 1, script: strings.Join(body, "\n"), skip: skip})
				skip = ""
			case lang == "" && len(steps) > 0 && steps[len(steps)-1].want == nil:
				steps[len(steps)-1].want = append([]string{}, body...)
				steps[len(steps)-1].at = n - len(body)
			}
		case open:
			body = append(body, l)
		}
	}
	if open {
		return nil, fmt.Errorf("%s: a block opened and not closed", path)
	}
	return steps, sc.Err()
}

var tutorialTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// tutorialNorm is a line as compared: its times one word, its runs of
// spaces one (columns padded to a path's length line up elsewhere).
func tutorialNorm(l string) string {
	return tutorialSpaces.ReplaceAllString(tutorialTime.ReplaceAllString(l, "T"), " ")
}

var tutorialSpaces = regexp.MustCompile(`  +`)

// lineMatches says whether got is the shown line want: equal, or where
// want trims with "…", starting, ending and going on as want does.
func lineMatches(want, got string) bool {
	parts := strings.Split(want, "…")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) || !strings.HasSuffix(got[len(parts[0]):], parts[len(parts)-1]) {
		return false
	}
	rest := got[len(parts[0]) : len(got)-len(parts[len(parts)-1])]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// linesMatch says whether got is the shown output want, where a line "…"
// stands for any lines, none included.
func linesMatch(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "…" {
		for i := 0; i <= len(got); i++ {
			if linesMatch(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && linesMatch(want[1:], got[1:])
}

func TestTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("the tutorial runs some 40 commands and builds the test tools")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := tutorialSteps(filepath.Join(root, "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	// runehost on PATH is this test binary, as the CLI.
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	os.Mkdir(bin, 0o755)
	wrapper := fmt.Sprintf("#!/bin/sh\nRUNEHOST_TEST_AS_CLI=1 exec %q \"$@\"\n", os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "runehost"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	model, err := modeltest.ScriptOn("127.0.0.1:0", "", modeltest.Tutorial...)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	modelAddr := strings.TrimPrefix(model.URL, "http://")
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8", "TZ=UTC",
		"RUNEHOST_CACHE_DIR=" + filepath.Join(os.TempDir(), "runehost-test-wazero-cache")}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "GOCACHE" || k == "GOPATH" || k == "GOFLAGS" || k == "GOMODCACHE" || k == "TMPDIR" {
			env = append(env, kv)
		}
	}
	state := filepath.Join(tmp, "env")
	os.WriteFile(state, nil, 0o644)
	// The tutorial's /tmp/tut and /tmp/tut-store are the test's own, and
	// its model is the stand-in the test serves.
	local := strings.NewReplacer("/tmp/tut", tmp+"/tut", tutorialModel, modelAddr)
	shown := strings.NewReplacer(tmp, "/tmp", root, tutorialRoot, modelAddr, tutorialModel)
	// RUNEHOST_TUTORIAL_UPDATE=1 writes what each drifted block printed
	// into the tutorial, for a person to trim and check.
	update := map[int][]string{}
	ran, compared := 0, 0
	for _, st := range steps {
		if st.skip != "" {
			t.Logf("docs/tutorial.md:%d: not run: %s", st.line, st.skip)
			continue
		}
		ran++
		script := fmt.Sprintf(". %q\n%s\nexport -p > %q\n", state, local.Replace(st.script), state)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir, cmd.Env = root, env
		cmd.WaitDelay = 10 * time.Second // a child left holding the output
		out, err := cmd.CombinedOutput()
		late := ctx.Err()
		cancel()
		if late != nil {
			t.Fatalf("docs/tutorial.md:%d: the block ran past 5 minutes: %v\n%s", st.line, err, out)
		}
		if st.want == nil {
			continue
		}
		compared++
		got := strings.Split(strings.TrimRight(shown.Replace(string(out)), "\n"), "\n")
		for i, l := range got {
			got[i] = tutorialNorm(l)
		}
		want := make([]string, len(st.want))
		for i, l := range st.want {
			want[i] = tutorialNorm(l)
		}
		if !linesMatch(want, got) && os.Getenv("RUNEHOST_TUTORIAL_UPDATE") == "1" && len(st.want) > 0 {
			update[st.at] = strings.Split(strings.TrimRight(shown.Replace(string(out)), "\n"), "\n")
			update[-st.at] = st.want
		} else if !linesMatch(want, got) {
			t.Errorf("docs/tutorial.md:%d: the output drifted from what the tutorial shows (times and paths aside; … trims); run it and copy the output:\n$ %s\n--- shown\n%s\n--- got\n%s",
				st.line, strings.ReplaceAll(st.script, "\n", "\n$ "), strings.Join(st.want, "\n"), strings.Join(got, "\n"))
		}
	}
	if len(update) > 0 {
		p := filepath.Join(root, "docs", "tutorial.md")
		b, _ := os.ReadFile(p)
		lines := strings.Split(string(b), "\n")
		var out []string
		for i := 0; i < len(lines); i++ {
			if got, ok := update[i+1]; ok {
				out = append(out, got...)
				i += len(update[-(i+1)]) - 1
				continue
			}
			out = append(out, lines[i])
		}
		os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644)
		t.Errorf("updated %d blocks of %s: check and trim them", len(update)/2, p)
	}
	// Not vacuous: a fence renamed (```text) would compare nothing.
	if ran < 20 || compared < 15 {
		t.Errorf("only %d of the tutorial's %d shell blocks ran, %d compared", ran, len(steps), compared)
	}
}

func TestTutorialMatching(t *testing.T) {
	for _, c := range []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "b"}, []string{"a", "c"}, false},
		{[]string{"a", "…", "d"}, []string{"a", "b", "c", "d"}, true},
		{[]string{"a", "…", "d"}, []string{"a", "d"}, true},
		{[]string{"a", "…"}, []string{"a"}, true},
		{[]string{"…", "d"}, []string{"a", "b"}, false},
		{[]string{"grants: x (target: …)"}, []string{"grants: x (target: want a dir)"}, true},
		{[]string{"grants: x (target: …)"}, []string{"grants: y (target: want a dir)"}, false},
		{[]string{"{a…,{b}…c}"}, []string{"{a,1,{b},2,c}"}, true},
		{[]string{"{a…,{b}…c}"}, []string{"{a,1,{x},2,c}"}, false},
		{[]string{"a"}, []string{"a", "b"}, false},
	} {
		if got := linesMatch(c.want, c.got); got != c.ok {
			t.Errorf("linesMatch(%q, %q) = %v", c.want, c.got, got)
		}
	}
}
