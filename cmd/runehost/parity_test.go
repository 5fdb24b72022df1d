// parity_test.go runs progs at the edges of the language's limits durably,
// in the sandbox and with --native, and requires the same outcome and a
// stored invocation that is settled and inspectable.

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunParity(t *testing.T) {
	deep := strings.Repeat("[", 60) + "1" + strings.Repeat("]", 60)
	for _, tc := range []struct{ name, src string }{
		{"deep result", "return " + strings.Repeat("[", 15) + strings.Repeat("]", 15)},
		{"deep json", `return json_decode("` + deep + `")`},
		{"deep error data", `throw error("x", "boom", ` + deep + `)`},
		{"deep caught act args", `try { act "fs.read" {path: "x", x: ` + deep + `} } catch e { return e.kind }`},
		{"long error message", `throw error("x", "a" * 100000)`},
		{"long emit kind", `emit("k" * 300, 1)`},
		{"long chain", "return 1" + strings.Repeat(" + 1", 100000)},
		{"list bomb", "var l = [1]\nwhile len(l) < 100000 { l = l + l }\nl = l * 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeProg(t, tc.src)
			var codes [2]int
			var outs, errs [2]string
			for i, mode := range []string{"--native", "--slice=1000"} {
				t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
				codes[i], outs[i], errs[i] = invoke(t, "run", f, mode)
				if codes[i] != exitOK && codes[i] != exitFailed {
					t.Fatalf("%s: exit %d: %s", mode, codes[i], lastLine(errs[i]))
				}
				code, out, e := invoke(t, "ps", "--jsonl")
				var row struct {
					Invocation, Status string
				}
				if code != exitOK || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &row) != nil {
					t.Fatalf("%s: ps: exit %d %q %s", mode, code, out, e)
				}
				if s := row.Status; s != "completed" && s != "failed" {
					t.Fatalf("%s: invocation left %s", mode, s)
				}
				if code, _, e := invoke(t, "inspect", row.Invocation); code != exitOK {
					t.Fatalf("%s: inspect: exit %d: %s", mode, code, e)
				}
			}
			if codes[0] != codes[1] || outs[0] != outs[1] || lastLine(errs[0]) != lastLine(errs[1]) {
				t.Fatalf("native: exit %d %q %q; sandbox: exit %d %q %q", codes[0], outs[0], lastLine(errs[0]), codes[1], outs[1], lastLine(errs[1]))
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestRunOutOfMemory: a prog that outgrows the sandbox fails with a limit
// error (exit 1, not a host failure), its invocation is failed, not left
// running, and the next run is served.
func TestRunOutOfMemory(t *testing.T) {
	sandboxMemoryPages = 1024 // 64 MiB
	defer func() { sandboxMemoryPages = 0 }()
	f := writeProg(t, "var keep = []\nwhile true { append(keep, range(100000)) }")
	code, _, errs := invoke(t, "run", f)
	if code != exitFailed || !strings.Contains(errs, "limit: memory: the prog needs more than the sandbox's 64 MiB") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, out, _ := invoke(t, "ps", "--status", "failed"); code != exitOK || !strings.Contains(out, "r1") {
		t.Fatalf("ps: exit %d %q", code, out)
	}
	if code, out, errs := invoke(t, "inspect", "r1"); code != exitOK || !strings.Contains(out, "memory") {
		t.Fatalf("inspect: exit %d %q %s", code, out, errs)
	}
	if code, out, errs := invoke(t, "run", "--replace", writeProg(t, "return 6 * 7")); code != exitOK || out != "42\n" {
		t.Fatalf("next run: exit %d %q %s", code, out, errs)
	}
}
