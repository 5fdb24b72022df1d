// devmodel_test.go runs docs/tutorial.md's model step offline, as a
// newcomer would with `make dev-model`: the tutorial's agent against the
// scripted stand-in (modeltest.Tutorial), with the tutorial's grants.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/model/modeltest"
	"github.com/runehost/runehost/internal/testtools"
)

func TestTutorialAgentOffline(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "grep.wasm"), testtools.Build(t, "grep"), 0o644)
	os.WriteFile(filepath.Join(tools, "wc.wasm"), testtools.Build(t, "wc"), 0o644)
	t.Setenv("RUNEHOST_TOOLS", tools)
	srv, err := modeltest.ScriptOn("127.0.0.1:0", "", modeltest.Tutorial...)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("RUNEHOST_MODEL_URL", srv.URL+"/v1")
	t.Setenv("RUNEHOST_MODEL", "devmodel")
	t.Setenv("RUNEHOST_MODEL_KEY", "")
	t.Chdir("../..") // the tutorial's commands run at the repository's root
	exGrant(t, "agent", "model.chat:default", "fs.read:./examples", "tool.run:wc", "tool.run:grep")
	res, errs := exRun(t, exitOK, "run", "examples/agent.rune", "--tokens", "20000", "--input", `{"task": "How many lines has examples/README.md, and which examples call a model?"}`)
	exWantJSON(t, res, `{"answer": "examples/README.md has 47 lines. Two examples call a model: agent.rune, and summarise.rune when asked to (ask_model).", "turns": 3, "stopped": "answer"}`)
	for _, want := range []string{"→    ", "tool.run wc", "tool.run grep", "fs.read: error denied: fs.read docs/acts.md: the path is outside every granted directory"} {
		if !strings.Contains(errs, want) {
			t.Errorf("no %q in the run's events:\n%s", want, errs)
		}
	}
}
