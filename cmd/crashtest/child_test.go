// child_test.go checks the harness's own rules: a copy keeps holes, and a
// power cut keeps each log as of its last sync and every other file as is.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCopyFileKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("head"), 0)
	f.WriteAt([]byte("tail"), 16<<20)
	f.Truncate(32 << 20)
	f.Close()
	if err := copyFile(src, dst); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(src)
	b, _ := os.ReadFile(dst)
	if !bytes.Equal(a, b) {
		t.Fatal("the copy differs")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dst, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > 1<<20 {
		t.Fatalf("the copy of a 32 MiB file with 8 bytes of data takes %d bytes", st.Blocks*512)
	}
}

func TestPowerCutKeepsSyncedLogsOnly(t *testing.T) {
	dir := t.TempDir()
	store, durable := filepath.Join(dir, "store"), filepath.Join(dir, "durable")
	os.MkdirAll(store, 0o700)
	os.MkdirAll(durable, 0o700)
	write := func(d, name, s string) {
		if err := os.WriteFile(filepath.Join(d, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(store, "000001.vlog", "synced and more")
	write(durable, "000001.vlog", "synced")
	write(store, "00002.mem", "never synced")
	write(store, "000003.sst", "table")
	write(store, "MANIFEST", "manifest")
	write(durable, "00001.mem", "flushed to a table and deleted")
	if err := powerCut(store, durable); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"000001.vlog": "synced", "000003.sst": "table", "MANIFEST": "manifest"}
	ents, _ := os.ReadDir(store)
	if len(ents) != len(want) {
		t.Errorf("after the cut the store holds %d files, want %d", len(ents), len(want))
	}
	for name, s := range want {
		if b, err := os.ReadFile(filepath.Join(store, name)); err != nil || string(b) != s {
			t.Errorf("%s: %q, %v; want %q", name, b, err, s)
		}
	}
}
