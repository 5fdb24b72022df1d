// jsonout_test.go: --json is one JSON document on every read command, and
// --jsonl one object a line where a list is streamed.

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJSONIsOneDocument(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	f := writeProg(t, "emit(\"step\", {n: 1})\nreturn 1\n")
	bad := writeProg(t, "return nope\n")
	for range 2 {
		if code, _, errs := invoke(t, "run", f); code != exitOK {
			t.Fatalf("run: %d %s", code, errs)
		}
	}
	if code, _, errs := invoke(t, "grant", "--prog", "p", "http.get:api.example.com"); code != exitOK {
		t.Fatalf("grant: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "link", "r1"); code != exitOK {
		t.Fatalf("link: %d %s", code, errs)
	}
	for _, c := range []struct {
		args  []string
		code  int
		lines bool // offers --jsonl
	}{
		{[]string{"ps"}, exitOK, true},
		{[]string{"ps", "--status", "failed"}, exitOK, true}, // an empty list is []
		{[]string{"events", "r1"}, exitOK, true},
		{[]string{"events", "r1", "--follow"}, exitOK, true}, // ended: the array closes
		{[]string{"grants", "--prog", "*"}, exitOK, true},
		{[]string{"inspect", "r2"}, exitOK, false},
		{[]string{"link", "--list", "r1"}, exitOK, false},
		{[]string{"store", "verify"}, exitOK, false},
		{[]string{"check", f, bad}, exitUsage, false},
	} {
		name := strings.Join(c.args, " ")
		code, out, errs := invoke(t, append(c.args, "--json")...)
		var doc any
		if code != c.code || json.Unmarshal([]byte(out), &doc) != nil {
			t.Errorf("%s --json: exit %d (want %d), not one document:\n%s\nstderr %s", name, code, c.code, out, errs)
			continue
		}
		if !c.lines {
			if code, _, errs := invoke(t, append(c.args, "--jsonl")...); code != exitUsage || !strings.Contains(errs, "unknown flag --jsonl") {
				t.Errorf("%s --jsonl: exit %d, %s", name, code, errs)
			}
			continue
		}
		list, _ := doc.([]any)
		code, out, errs = invoke(t, append(c.args, "--jsonl")...)
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if out == "" {
			got = nil
		}
		if code != c.code || len(got) != len(list) {
			t.Errorf("%s --jsonl: exit %d, %d lines for %d rows:\n%s\nstderr %s", name, code, len(got), len(list), out, errs)
		}
		for i, line := range got {
			var row any
			if json.Unmarshal([]byte(line), &row) != nil {
				t.Errorf("%s --jsonl: line %d is not an object: %s", name, i+1, line)
			}
		}
		if code, _, errs := invoke(t, append(c.args, "--json", "--jsonl")...); code != exitUsage || !strings.Contains(errs, "--json or --jsonl, not both") {
			t.Errorf("%s --json --jsonl: exit %d, %s", name, code, errs)
		}
	}
	// check's row for an error names where it is.
	_, out, _ := invoke(t, "check", bad, "--json")
	if !strings.Contains(out, `"line":1`) || !strings.Contains(out, `"message":"undefined: nope"`) {
		t.Errorf("check --json: no position: %s", out)
	}
}

// events --follow --json stopped by Ctrl-C still writes one document: the
// array closes.
func TestFollowJSONClosesOnInterrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f := writeProg(t, "emit(\"step\", {n: 1})\nreturn await {key: \"go\"}\n")
	if code, _, errs := process(t, dir, "run", f); code != exitWaiting {
		t.Fatalf("run: %d %s", code, errs)
	}
	cmd := exec.Command(os.Args[0], "events", "r1", "--follow", "--json")
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir)
	var out, errs syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(errs.String(), "nothing drives it here"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("events never said it follows: %s", errs.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	var evs []map[string]any
	if err := json.Unmarshal([]byte(out.String()), &evs); err != nil || len(evs) < 3 {
		t.Fatalf("exit %d, not one document of its events (%v):\n%s", cmd.ProcessState.ExitCode(), err, out.String())
	}
}
