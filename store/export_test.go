// export_test.go checks export and import: round trips equal record for record, on both kinds of store, and bad files or non-empty stores refused with nothing written.

package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kinds are the stores the tests run on, with the largest value each holds
// in one transaction (in memory, Badger keeps values in the transaction:
// at most 1 MiB).
var kinds = []struct {
	name string
	big  int
	open func(t *testing.T) *Store
}{
	{"memory", 1<<20 - 1024, func(t *testing.T) *Store {
		s, err := Open(Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"dir", 10 << 20, func(t *testing.T) *Store {
		s, err := Open(Options{Dir: filepath.Join(t.TempDir(), "store")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// records is every record of a store but its own.
func records(t *testing.T, s *Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if err := s.Records(func(r Record) error { out[string(r.Key)] = r.Value; return r.Err }); err != nil {
		t.Fatal(err)
	}
	return out
}

// fillKinds writes records of many kinds, a value of big bytes, 300 of 15
// KiB, 100 of 100 KiB and 2,000 small run-log records.
func fillKinds(t *testing.T, s *Store, big int) {
	t.Helper()
	put := func(fn func(tx *Tx) error) {
		t.Helper()
		if err := s.Update(Synced, fn); err != nil {
			t.Fatal(err)
		}
	}
	put(func(tx *Tx) error {
		for _, r := range []struct {
			k Key
			v any
		}{
			{K("prog", "hello"), rec{N: 1}},
			{K("src", "9f86d081"), "return 1"},
			{K("inv", "r1"), rec{N: 2}},
			{K("run", "r1", "r1"), true},
			{K("kid", "r1", "r2"), true},
			{K("alw", "r1"), []uint64{10, 2, 0, 0}},
			{K("op", "r1", uint64(1)), map[int]string{1: "tool"}},
			{K("open", "r1", uint64(1)), true},
			{K("grant", "*", "tool.env:HOME"), true},
			{K("gen"), uint64(3)},
			{K("seq"), uint64(2)},
			{K("wait", "r2"), rec{N: 7}},
		} {
			if err := tx.Put(r.k, r.v); err != nil {
				return err
			}
		}
		return tx.PutRaw(K("cp", "r1"), []byte{}) // an empty value
	})
	put(func(tx *Tx) error {
		return tx.PutRaw(K("blob", "big"), bytes.Repeat([]byte("0123456789abcdef"), big/16))
	})
	// 300 values of 15 KiB: under Badger's value threshold, so too large
	// for one of its transactions together (import halves the batch).
	for i := 0; i < 300; i += 100 {
		put(func(tx *Tx) error {
			for j := i; j < i+100; j++ {
				if err := tx.PutRaw(K("chk", "r1", uint64(j)), bytes.Repeat([]byte{byte(j)}, 15<<10)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// 100 of 100 KiB: 10 MiB, more than one import transaction's bytes.
	for i := 0; i < 100; i += 10 {
		put(func(tx *Tx) error {
			for j := i; j < i+10; j++ {
				if err := tx.PutRaw(K("blob", uint64(j)), bytes.Repeat([]byte{byte(j)}, 100<<10)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for i := 0; i < 2000; i += 250 {
		put(func(tx *Tx) error {
			for j := i; j < i+250; j++ {
				if err := tx.Put(K("ev", "r1", uint64(j)), rec{N: uint64(j)}); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			src := kind.open(t)
			fillKinds(t, src, kind.big)
			want := records(t, src)
			var buf bytes.Buffer
			info, err := src.Export(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if info.Records != int64(len(want)) || info.Bytes != int64(buf.Len()) || !strings.HasPrefix(buf.String(), exportMagic) {
				t.Fatalf("export: %+v, %d records, %d bytes", info, len(want), buf.Len())
			}
			file := filepath.Join(t.TempDir(), "export")
			if _, err := src.ExportFile(file); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(file); !bytes.Equal(b, buf.Bytes()) {
				t.Fatal("ExportFile and Export differ")
			}
			if _, err := os.Stat(file + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temporary file left: %v", err)
			}

			dst := kind.open(t)
			cb := &countingBackend{Backend: dst.be}
			dst.be = cb
			got, err := dst.ImportFile(file, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Records != info.Records || got.Data != info.Data || got.Transactions != cb.commits {
				t.Fatalf("import: %+v, export %+v, %d commits", got, info, cb.commits)
			}
			// The limits written out, not the constants: JetStream's batches hold 1,000 messages.
			if cb.maxRecords > 500 || cb.maxBytes > 8<<20 || cb.buffered > 0 {
				t.Fatalf("import committed up to %d records, %d bytes in a transaction (limits 500, 8 MiB), %d transactions buffered", cb.maxRecords, cb.maxBytes, cb.buffered)
			}
			have := records(t, dst)
			if len(have) != len(want) {
				t.Fatalf("%d records imported, want %d", len(have), len(want))
			}
			for k, v := range want {
				if !bytes.Equal(have[k], v) {
					t.Fatalf("record %s: %d bytes, want %d", Key(k), len(have[k]), len(v))
				}
			}
			var again bytes.Buffer
			if _, err := dst.Export(&again); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
				t.Fatalf("export of the import differs (%v)", err)
			}
		})
	}
}

func TestExportEmptyStore(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			var buf bytes.Buffer
			info, err := kind.open(t).Export(&buf)
			if err != nil || info.Records != 0 || buf.Len() != len(exportMagic)+frameSize+exportTrailerSize {
				t.Fatalf("%+v, %d bytes, %v", info, buf.Len(), err)
			}
			dst := kind.open(t)
			if got, err := dst.Import(bytes.NewReader(buf.Bytes()), ImportOptions{}); err != nil || got.Records != 0 {
				t.Fatalf("%+v %v", got, err)
			}
			if n := len(records(t, dst)); n != 0 {
				t.Fatalf("%d records", n)
			}
		})
	}
}

func TestImportRefusesNonEmptyStore(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			src := kind.open(t)
			src.Update(Synced, func(tx *Tx) error { return tx.Put(K("seq"), uint64(1)) })
			var buf bytes.Buffer
			if _, err := src.Export(&buf); err != nil {
				t.Fatal(err)
			}
			dst := kind.open(t)
			dst.Update(Synced, func(tx *Tx) error { return tx.Put(K("gen"), uint64(9)) })
			_, err := dst.Import(&buf, ImportOptions{})
			if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "gen") {
				t.Fatalf("import into a store holding gen: %v", err)
			}
			if r := records(t, dst); len(r) != 1 {
				t.Fatalf("records: %v", r)
			}
		})
	}
}

// countingBackend counts what update transactions commit: the most
// records and bytes in one (but a single record's), and those not Synced.
type countingBackend struct {
	Backend
	commits, maxRecords, maxBytes, buffered int
	drop                                    Key // a set of it is lost, unseen
}

func (c *countingBackend) Begin(update bool) (BackendTx, error) {
	b, err := c.Backend.Begin(update)
	if err != nil {
		return nil, err
	}
	return &countingTx{BackendTx: b, c: c}, nil
}

type countingTx struct {
	BackendTx
	c              *countingBackend
	records, bytes int
}

func (t *countingTx) Set(key Key, val []byte) error {
	t.records++
	t.bytes += len(key) + len(val)
	if bytes.Equal(key, t.c.drop) {
		return nil
	}
	return t.BackendTx.Set(key, val)
}

func (t *countingTx) Commit(d Durability, inReserve bool, size int) error {
	err := t.BackendTx.Commit(d, inReserve, size)
	if err == nil {
		t.c.commits++
		t.c.maxRecords = max(t.c.maxRecords, t.records)
		if t.records > 1 {
			t.c.maxBytes = max(t.c.maxBytes, t.bytes)
		}
		if d != Synced {
			t.c.buffered++
		}
	}
	return err
}

// rawExport frames records as given, unchecked, with a true trailer.
func rawExport(t *testing.T, recs ...[2]string) []byte {
	var buf bytes.Buffer
	e, _ := newExportWriter(&buf)
	for _, r := range recs {
		e.frame(len(r[0]), len(r[1]))
		e.cw.Write([]byte(r[0]))
		e.cw.Write([]byte(r[1]))
		e.info.Records++
	}
	if _, err := e.finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestImportRefusesBadFiles(t *testing.T) {
	src := kinds[0].open(t)
	src.Update(Synced, func(tx *Tx) error {
		for i := range 1200 { // more than two import transactions
			if err := tx.PutRaw(K("ev", "r1", uint64(i)), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	var good bytes.Buffer
	if _, err := src.Export(&good); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	edit := func(fn func(b []byte) []byte) []byte { return fn(bytes.Clone(g)) }
	trailer := len(g) - exportTrailerSize
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "empty"},
		{"header only", []byte(exportMagic), "truncated"},
		{"truncated in a record", g[:len(g)/2], "truncated"},
		{"truncated in the trailer", g[:len(g)-5], "no trailer"},
		{"no trailer", g[:trailer], "no trailer"},
		{"flipped byte in a value", edit(func(b []byte) []byte { b[len(exportMagic)+frameSize+23+5] ^= 1; return b }), "checksum"},
		{"flipped byte in a key", edit(func(b []byte) []byte { b[len(exportMagic)+frameSize] ^= 1; return b }), "checksum"}, // ev to dv: still in order,
		{"flipped byte in the checksum", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "checksum"},
		{"wrong magic", edit(func(b []byte) []byte { b[0] = 'R'; return b }), "no export header"},
		{"a backup", []byte(backupMagic + strings.Repeat("x", 200)), "no export header"},
		{"trailer count wrong", edit(func(b []byte) []byte { b[trailer+len(exportMagic)]++; return b }), "trailer says 1201 records"},
		{"trailer length wrong", edit(func(b []byte) []byte { b[trailer+len(exportMagic)+8]++; return b }), "bytes before it"},
		{"bytes after the trailer", append(bytes.Clone(g), 0), "after its trailer"},
		{"empty key", rawExport(t, [2]string{"", "v"}), "empty key"},
		{"repeated key", rawExport(t, [2]string{"a\x00", "1"}, [2]string{"a\x00", "2"}), "repeated or out of order"},
		{"keys out of order", rawExport(t, [2]string{"b\x00", "1"}, [2]string{"a\x00", "2"}), "repeated or out of order"},
		{"the store's own key", rawExport(t, [2]string{string(markKey), "\xf5"}), "store's own"},
		{"value over MaxRecord", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(exportMagic)+4:], MaxRecord+1)
			return b
		}), "over 67108864"},
	} {
		for _, kind := range kinds {
			t.Run(c.name+"/"+kind.name, func(t *testing.T) {
				dst := kind.open(t)
				_, err := dst.Import(bytes.NewReader(c.file), ImportOptions{})
				if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want ErrBadExport with %q", err, c.want)
				}
				if r := records(t, dst); len(r) != 0 {
					t.Fatalf("%d records written", len(r))
				}
			})
		}
	}
	// Through a file, the error names it.
	file := filepath.Join(t.TempDir(), "cut")
	os.WriteFile(file, g[:100], 0o600)
	if _, err := kinds[0].open(t).ImportFile(file, ImportOptions{}); !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), file) {
		t.Fatalf("ImportFile: %v", err)
	}
}

// A record the backend lost is found when the store is read back.
func TestImportReadsBack(t *testing.T) {
	src := kinds[0].open(t)
	src.Update(Synced, func(tx *Tx) error {
		tx.Put(K("gen"), uint64(1))
		return tx.Put(K("seq"), uint64(2))
	})
	var buf bytes.Buffer
	src.Export(&buf)
	dst := kinds[0].open(t)
	dst.be = &countingBackend{Backend: dst.be, drop: K("seq")}
	if _, err := dst.Import(&buf, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "read back holds 1 records") {
		t.Fatalf("import with a record lost: %v", err)
	}
}

// An input that cannot seek (a pipe) is copied aside, and imported the same.
func TestImportFromPipe(t *testing.T) {
	src := kinds[0].open(t)
	src.Update(Synced, func(tx *Tx) error { return tx.Put(K("seq"), uint64(4)) })
	var buf bytes.Buffer
	src.Export(&buf)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { pw.Write(buf.Bytes()); pw.Close() }()
	dir := t.TempDir()
	dst := kinds[0].open(t)
	if info, err := dst.Import(pr, ImportOptions{TempDir: dir}); err != nil || info.Records != 1 {
		t.Fatalf("%+v %v", info, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in TempDir: %v", left)
	}
}

// A View's function run again starts the output over.
func TestExportOutputResets(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reset, flush := fileOutput(f)
	w, _ := reset()
	w.Write(bytes.Repeat([]byte("x"), 3<<20)) // past the buffer: some of it in the file
	w, _ = reset()
	fmt.Fprint(w, "second run")
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "second run" {
		t.Fatalf("file holds %d bytes: %.20q", len(b), b)
	}
}

func FuzzImport(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte(exportMagic))
	f.Add(rawExport(nil))
	f.Add(rawExport(nil, [2]string{"a\x00", "1"}, [2]string{"b\x00", ""}))
	f.Add(rawExport(nil, [2]string{"b\x00", "1"}, [2]string{"a\x00", "2"}))
	f.Add(rawExport(nil, [2]string{"seal\x00", "1"}))
	// One store for every input, emptied after each: opening Badger costs
	// more than an import.
	s, err := Open(Options{InMemory: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		defer func() {
			for k := range records(t, s) {
				if err := s.Update(Buffered, func(tx *Tx) error { return tx.Delete(Key(k)) }); err != nil {
					t.Fatal(err)
				}
			}
		}()
		_, err := s.Import(bytes.NewReader(b), ImportOptions{})
		if errors.Is(err, ErrBadExport) {
			if r := records(t, s); len(r) != 0 {
				t.Fatalf("%v, and %d records written", err, len(r))
			}
			return
		}
		if err != nil {
			return
		}
		var out bytes.Buffer
		if _, err := s.Export(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("imported, and exported again as %d other bytes", out.Len())
		}
	})
}
