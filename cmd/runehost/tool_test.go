// tool_test.go holds `runehost tool run` to the rules every path to a tool
// keeps: the host's own configuration is refused, and a host secret in any
// encoding under another name; --timeout stops a tool that computes, a
// writable mount keeps the tool inside.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/testtools"
)

func TestToolRunHostEnvRefused(t *testing.T) {
	envsnoop := filepath.Join(t.TempDir(), "envsnoop.wasm")
	os.WriteFile(envsnoop, testtools.Build(t, "envsnoop"), 0o644)
	t.Setenv("RUNEHOST_MODEL_KEY", "sk-cli-secret-0123456789")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-cli-secret-0123")
	t.Setenv("MY_COPY", "xoxb-cli-secret-0123")
	for _, name := range []string{"RUNEHOST_MODEL_KEY", "SLACK_BOT_TOKEN", "RUNEHOST_ANYTHING", "MY_COPY"} {
		code, out, errs := invoke(t, "tool", "run", envsnoop, "--grant", "tool.env:"+name, "--", name)
		if code != exitUsage || strings.Contains(out+errs, "secret-0123") || !strings.Contains(errs, "never given to a tool") {
			t.Errorf("tool.env:%s: exit %d\n%s%s", name, code, out, errs)
		}
	}
	if code, _, errs := invoke(t, "tool", "run", envsnoop, "--fuel", "18446744073709551615"); code != exitUsage || !strings.Contains(errs, "--fuel") {
		t.Errorf("fuel past the most: %d %s", code, errs)
	}
}

func TestToolRunTimeoutWhileComputing(t *testing.T) {
	spin := filepath.Join(t.TempDir(), "spin.wasm")
	os.WriteFile(spin, testtools.Build(t, "spin"), 0o644)
	start := time.Now()
	code, _, errs := invoke(t, "tool", "run", spin, "--timeout", "500ms", "--fuel", "1099511627776")
	if code != exitToolTimeout || time.Since(start) > time.Minute {
		t.Fatalf("exit %d after %s: %s", code, time.Since(start), errs)
	}
}

// A FIFO on a writable mount is refused at once, not read past --timeout.
func TestToolRunFifoOnWritableMount(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(t.TempDir(), "cat.wasm")
	os.WriteFile(cat, testtools.Build(t, "cat"), 0o644)
	code, _, errs := invoke(t, "tool", "run", cat, "--grant", "fs.write:"+dir+"=/w", "--timeout", "20s", "--", "/w/pipe")
	if code != 1 || !strings.Contains(errs, "Permission denied") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// A host secret hidden in another variable, in any encoding and anywhere in
// its value, is refused by name and encoding, never shown.
func TestToolRunHostSecretInAnyEncoding(t *testing.T) {
	envsnoop := filepath.Join(t.TempDir(), "envsnoop.wasm")
	os.WriteFile(envsnoop, testtools.Build(t, "envsnoop"), 0o644)
	for _, s := range testtools.HostSecrets {
		t.Setenv(s.Name, s.Value)
	}
	for _, s := range testtools.HostSecrets {
		for _, h := range testtools.Hide(s.Value) {
			t.Setenv("BUILD_INFO", h.Value)
			code, out, errs := invoke(t, "tool", "run", envsnoop, "--grant", "tool.env:BUILD_INFO", "--", "BUILD_INFO")
			if code != exitUsage || !strings.Contains(errs, "BUILD_INFO holds the value of "+s.Name+" (") || strings.Contains(strings.ToLower(out+errs), strings.ToLower(s.Value)) {
				t.Errorf("%s %s: exit %d\n%s%s", s.Name, h.Case, code, out, errs)
			}
		}
	}
	t.Setenv("BUILD_INFO", testtools.Innocent[len(testtools.Innocent)-1])
	if code, out, errs := invoke(t, "tool", "run", envsnoop, "--grant", "tool.env:BUILD_INFO", "--", "BUILD_INFO"); code != exitOK || !strings.Contains(out, "found BUILD_INFO=") {
		t.Errorf("an innocent value: exit %d\n%s%s", code, out, errs)
	}
}
