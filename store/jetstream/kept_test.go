// kept_test.go: a directory whose records are in JetStream is never opened
// as a new, empty Badger store, nor a Badger store served by a node.

package jetstream

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/store"
)

// dirNames lists a directory's files.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return strings.Join(out, " ")
}

func TestKeptInJetStream(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(store.Options{Dir: dir}, Config{Stream: "KEPT", Node: NodeOptions{Listen: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("k"), "v") })
	s.Close()
	before := dirNames(t, dir)
	_, err = store.Open(store.Options{Dir: dir})
	var ee *store.ElsewhereError
	if !errors.Is(err, store.ErrElsewhere) || !errors.As(err, &ee) || ee.Kept == nil || !ee.Kept.Embedded || ee.Kept.Stream != "KEPT" || !strings.HasPrefix(ee.Kept.Listen, "127.0.0.1:") || ee.Kept.Listen == "127.0.0.1:0" {
		t.Fatalf("opened as Badger: %v", err)
	}
	if after := dirNames(t, dir); after != before {
		t.Fatalf("files changed: %s, now %s", before, after)
	}
	// The node opens it again, with its record.
	s, err = Open(store.Options{Dir: dir}, Config{Stream: "KEPT"})
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if ok, err := getOne(s, store.K("k"), &v); !ok || v != "v" {
		t.Fatalf("after reopening: %v %q %v", ok, v, err)
	}
	s.Close()

	// A directory a host left before notes were written: the node's files.
	os.Remove(filepath.Join(dir, "BACKEND"))
	if _, err := store.Open(store.Options{Dir: dir}); !errors.As(err, &ee) || ee.Kept == nil || !ee.Kept.Embedded {
		t.Fatalf("a node's directory without its note opened as Badger: %v", err)
	}
	// A note that cannot be read refuses too.
	os.WriteFile(filepath.Join(dir, "BACKEND"), []byte("{\"backend\":"), 0o600)
	if _, err := store.Open(store.Options{Dir: dir}); !errors.As(err, &ee) || ee.Err == nil {
		t.Fatalf("a damaged note: %v", err)
	}
	if strings.Contains(dirNames(t, dir), "MANIFEST") {
		t.Fatal("a Badger store was made")
	}
}

func TestKeptOnServers(t *testing.T) {
	js := holdNode(t, HoldFor)
	js.Note, js.Shared = true, true
	dir := t.TempDir()
	s, err := Open(store.Options{Dir: dir}, js)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var ee *store.ElsewhereError
	if _, err := store.Open(store.Options{Dir: dir}); !errors.As(err, &ee) || ee.Kept == nil || ee.Kept.Embedded || ee.Kept.URLs[0] != js.URLs[0] {
		t.Fatalf("opened as Badger: %v", err)
	}
	// Without Note (a command reaching the servers), nothing is noted.
	js.Note = false
	other := t.TempDir()
	if s, err = Open(store.Options{Dir: other}, js); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if dirNames(t, other) != "" {
		t.Fatalf("a command's directory noted: %s", dirNames(t, other))
	}
}

func TestBadgerNotServedByANode(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("k"), "v") })
	s.Close()
	before := dirNames(t, dir)
	var ee *store.ElsewhereError
	if _, err := Open(store.Options{Dir: dir}, Config{}); !errors.As(err, &ee) || !ee.Badger {
		t.Fatalf("a node served a Badger store: %v", err)
	}
	js := holdNode(t, HoldFor)
	js.Note = true
	if _, err := Open(store.Options{Dir: dir}, js); !errors.As(err, &ee) || !ee.Badger {
		t.Fatalf("a host on servers noted a Badger store: %v", err)
	}
	if after := dirNames(t, dir); after != before {
		t.Fatalf("files changed: %s, now %s", before, after)
	}
	if s, err = store.Open(store.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// A directory where an earlier runehost made a Badger store beside a
// node's files, with no note, is opened as neither: which holds the
// records cannot be known.
func TestKeptBoth(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Mkdir(filepath.Join(dir, "nats"), 0o700)
	before := dirNames(t, dir)
	var ee *store.ElsewhereError
	if _, err := store.Open(store.Options{Dir: dir}); !errors.As(err, &ee) || !ee.Both {
		t.Fatalf("opened as Badger: %v", err)
	}
	if _, err := Open(store.Options{Dir: dir}, Config{}); !errors.As(err, &ee) || !ee.Both {
		t.Fatalf("opened on a node: %v", err)
	}
	if after := dirNames(t, dir); after != before {
		t.Fatalf("files changed: %s, now %s", before, after)
	}
}
