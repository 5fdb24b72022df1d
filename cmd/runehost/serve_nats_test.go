// serve_nats_test.go tests the store on JetStream from the command line: a
// prog run on NATS servers by URL, moved in from Badger by export and
// import, and one host per stream.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/store/jetstream"
)

func TestStoreOnNATS(t *testing.T) {
	node, err := jetstream.StartNode(jetstream.NodeOptions{Listen: "127.0.0.1:0"})
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
	if code, out, errs := process(t, local, "store", "verify"); code != exitOK || !strings.Contains(out, "is sound") {
		t.Fatalf("verify on JetStream: exit %d: %s %s", code, out, errs)
	}
	hello := writeProg(t, `return "hello"`)
	if code, out, errs := process(t, local, "run", "--native", "--name", "hello", hello); code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("run on JetStream: exit %d, %q, %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(local, "nats")); err == nil {
		t.Fatal("a store by URL made a node of its own")
	}
	// Two hosts on the stream, each with its own directory for its socket:
	// a run admitted through one, the imported run woken through the other.
	t.Setenv("RUNEHOST_TEST_AS_CLI", "1")
	other := filepath.Join(t.TempDir(), "other")
	startServeProc(t, os.Args[0], local, true)
	startServeProc(t, os.Args[0], other, true)
	if code, out, errs := process(t, other, "send", "r1", "go", "41"); code != exitOK || out != "42\n" {
		t.Fatalf("the imported run goes on through the second host: exit %d, %q, %s", code, out, errs)
	}
	if code, out, errs := process(t, local, "run", "--native", "--name", "hello", hello); code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("run through the first host: exit %d, %q, %s", code, out, errs)
	}
	if code, out, errs := process(t, other, "events", "r3"); code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("the events of a run through the other host: exit %d, %q, %s", code, out, errs)
	}
	for _, dir := range []string{local, other} {
		if code, out, _ := process(t, dir, "ps"); code != exitOK || !strings.Contains(out, "r1") || !strings.Contains(out, "r3") {
			t.Fatalf("ps through %s: exit %d, %q", dir, code, out)
		}
	}
}

// A store directory a JetStream host served says so once the host is
// gone: a command on it without the cluster refuses, names how to reach
// the records, and makes no Badger store beside them; the host, served
// again, has them all.
func TestStoreDirKnowsItsBackend(t *testing.T) {
	badgerFiles(t) // a command without the cluster is one on Badger
	t.Setenv("RUNEHOST_TEST_AS_CLI", "1")
	dir := filepath.Join(t.TempDir(), "store")
	p := startServeProc(t, os.Args[0], dir, true, "--nats-embedded", "--nats-listen", "127.0.0.1:0", "--listen", "off")
	hello := writeProg(t, `return "hello"`)
	if code, out, errs := process(t, dir, "run", "--native", hello); code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("run: exit %d, %q, %s", code, out, errs)
	}
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	for _, args := range [][]string{{"ps"}, {"run", "--native", hello}, {"store", "verify"}, {"events", "r1"}} {
		code, out, errs := process(t, dir, args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "keeps its records in NATS JetStream") || !strings.Contains(errs, "runehost serve --nats-embedded --store "+dir) {
			t.Errorf("%v: exit %d, %q, %s", args, code, out, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
		t.Fatal("a Badger store was made beside the node's files")
	}
	startServeProc(t, os.Args[0], dir, true, "--nats-embedded", "--nats-listen", "127.0.0.1:0", "--listen", "off")
	if code, out, errs := process(t, dir, "ps"); code != exitOK || !strings.Contains(out, "r1") || !strings.Contains(out, "completed") {
		t.Fatalf("ps, served again: exit %d, %q, %s", code, out, errs)
	}
}

// On a store shared by hosts, a run followed through a host that dies is
// followed on by the command: the tree is the dead host's until its claim
// lapses, then the command's, or the other host's, and either way the
// command reports it ended.
func TestServerGoneOnSharedStore(t *testing.T) {
	node, err := jetstream.StartNode(jetstream.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown()
	t.Setenv("RUNEHOST_NATS", node.ClientURL())
	t.Setenv("RUNEHOST_CLAIM_FOR", "1s")
	t.Setenv("RUNEHOST_TEST_AS_CLI", "1")
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	pa := startServeProc(t, os.Args[0], a, true)
	startServeProc(t, os.Args[0], b, true)
	run := start(t, a, []string{"RUNEHOST_NATS=" + node.ClientURL(), "RUNEHOST_CLAIM_FOR=1s"}, "run", "--native", "--limit", longLimit, writeProg(t, longProg))
	run.await(t, "invocation r1")
	pa.cmd.Process.Kill()
	<-pa.done
	if code := run.wait(t, 2*time.Minute); code != exitOK || !strings.Contains(run.stderr(), "the server went away; r1 goes on here") || !strings.Contains(run.stderr(), "done: r1 completed") {
		t.Fatalf("exit %d:\n%s", code, run.stderr())
	}
	t.Logf("the command:\n%s", run.stderr())
}
