// serve_nats_test.go tests the store on JetStream from the command line: a
// prog run on NATS servers by URL, moved in from Badger by export and
// import, and one host per stream.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/store"
)

func TestStoreOnNATS(t *testing.T) {
	node, err := store.StartNode(store.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown()
	// A prog on Badger, moved to JetStream.
	old := filepath.Join(t.TempDir(), "old")
	waits := writeProg(t, "let e = await {key: \"go\"}\nreturn e + 1")
	if code, _, errs := process(t, old, "run", "--native", waits); code != exitWaiting {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "export")
	if code, _, errs := process(t, old, "store", "export", file); code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	t.Setenv("RUNEHOST_NATS", node.ClientURL())
	t.Setenv("RUNEHOST_NATS_STREAM", "CLI")
	local := filepath.Join(t.TempDir(), "host") // the host's own files; the records are in JetStream
	if code, _, errs := process(t, local, "store", "import", file); code != exitOK {
		t.Fatalf("import into JetStream: exit %d: %s", code, errs)
	}
	if code, out, errs := process(t, local, "send", "r1", "go", "41"); code != exitOK || out != "42\n" {
		t.Fatalf("the imported run goes on: exit %d, %q, %s", code, out, errs)
	}
	hello := writeProg(t, `return "hello"`)
	if code, out, errs := process(t, local, "run", "--native", "--name", "hello", hello); code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("run on JetStream: exit %d, %q, %s", code, out, errs)
	}
	if code, out, _ := process(t, local, "ps"); code != exitOK || !strings.Contains(out, "r1") || !strings.Contains(out, "r2") {
		t.Fatalf("ps: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(local, "nats")); err == nil {
		t.Fatal("a store by URL made a node of its own")
	}
	// One host per stream: a second serve elsewhere is refused, naming the
	// first.
	stop, err := startServe(t.Context(), local, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	other := filepath.Join(t.TempDir(), "other")
	if code, _, errs := process(t, other, "serve", "--native"); code != exitUsage || !strings.Contains(errs, "in use by pid") {
		t.Fatalf("a second host on the stream: exit %d, %s", code, errs)
	}
}
