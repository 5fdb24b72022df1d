// store_export_test.go runs store export and store import as real processes: a store moved record for record into a new one that verifies, and bad files or live stores refused.

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/store"
)

// storeRecords is every record of the closed store in dir.
func storeRecords(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string][]byte{}
	if err := s.Records(func(r store.Record) error { out[string(r.Key)] = r.Value; return r.Err }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStoreExportImport(t *testing.T) {
	dir := filled(t)
	_, ps, _ := process(t, dir, "ps")
	_, grants, _ := process(t, dir, "grants")
	file := filepath.Join(t.TempDir(), "export")
	code, _, errs := process(t, dir, "store", "export", file)
	if code != exitOK || !strings.Contains(errs, "exported ") || !strings.Contains(errs, file) {
		t.Fatalf("export: exit %d, %q", code, errs)
	}
	if code, _, errs = process(t, dir, "store", "import", file); code != exitUsage || !strings.Contains(errs, "not empty") {
		t.Fatalf("import into the store itself: exit %d, %q", code, errs)
	}
	into := filepath.Join(t.TempDir(), "imported")
	code, _, errs = process(t, into, "store", "import", file)
	want := storeRecords(t, dir)
	if code != exitOK || !strings.Contains(errs, "imported ") || !strings.Contains(errs, " into "+into) {
		t.Fatalf("import: exit %d, %q", code, errs)
	}
	if n := len(want); !strings.Contains(errs, fmt.Sprintf("imported %d records", n)) {
		t.Fatalf("import: %q, want %d records", errs, n)
	}
	if code, out, _ := process(t, into, "store", "verify"); code != exitOK || !strings.Contains(out, "is sound") {
		t.Fatalf("verify the imported store: exit %d, %q", code, out)
	}
	got := storeRecords(t, into)
	if len(got) != len(want) {
		t.Fatalf("%d records imported, want %d", len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("record %s differs", store.Key(k))
		}
	}
	if _, ps2, _ := process(t, into, "ps"); ps2 != ps {
		t.Fatalf("ps of the imported store:\n%s\nwant\n%s", ps2, ps)
	}
	if _, g2, _ := process(t, into, "grants"); g2 != grants {
		t.Fatalf("grants of the imported store:\n%s\nwant\n%s", g2, grants)
	}
	if code, out, errs := process(t, into, "send", "r3", "go", "1"); code != exitOK || out != "131072\n" {
		t.Fatalf("the imported r3 goes on: exit %d, %q, %q", code, out, errs)
	}
}

func TestStoreImportRefusesBadFile(t *testing.T) {
	dir := filled(t)
	file := filepath.Join(t.TempDir(), "export")
	if code, _, errs := process(t, dir, "store", "export", file); code != exitOK {
		t.Fatalf("export: exit %d, %q", code, errs)
	}
	b, _ := os.ReadFile(file)
	os.WriteFile(file, b[:len(b)-1], 0o600)
	into := filepath.Join(t.TempDir(), "imported")
	code, _, errs := process(t, into, "store", "import", file)
	if code != exitUsage || !strings.Contains(errs, "not a whole runehost store export") || !strings.Contains(errs, file) {
		t.Fatalf("import of a truncated file: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(into); !os.IsNotExist(err) {
		t.Fatalf("the new store's directory was left: %v", err)
	}
	if code, _, errs = process(t, into, "store", "import", file+".missing"); code != exitUsage || !strings.Contains(errs, "no such file") {
		t.Fatalf("import of no file: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(into); !os.IsNotExist(err) {
		t.Fatalf("a store was made for a missing file: %v", err)
	}
	if code, _, errs = process(t, filepath.Join(t.TempDir(), "none"), "store", "export", file); code != exitUsage || !strings.Contains(errs, "no store at") {
		t.Fatalf("export of no store: exit %d, %q", code, errs)
	}
	if code, _, errs = process(t, dir, "store", "export"); code != exitUsage || !strings.Contains(errs, "want one FILE") {
		t.Fatalf("export with no FILE: exit %d, %q", code, errs)
	}
}
