// export.go holds export and import: every record, through the backend boundary alone, to and from a framed, checksummed file.

package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
)

// exportMagic opens an export file; the trailer repeats it.
const exportMagic = "runehost-store-export 1\n"

// exportTrailerSize is the trailer's: the magic, the record count and the
// length of all before the trailer (8 bytes each, little endian), and the
// SHA-256 of all before the trailer.
const exportTrailerSize = len(exportMagic) + 8 + 8 + sha256.Size

// frameSize is a record's frame: its key's and its value's lengths (4
// bytes each, little endian). A frame of two zero lengths ends the records.
const frameSize = 8

// Import's transaction limits. The JetStream backend commits a transaction
// as one atomic batch of at most 1,000 messages of at most 1 MiB each
// (docs/store.md, "What was measured"): half the messages leave room for
// its check messages and the seal's. A backend that refuses a batch as too
// large (Badger caps a transaction at 15% of a memtable) gets it in halves.
const (
	importBatchRecords = 500
	importBatchBytes   = 8 << 20 // keys and values; a larger record goes alone
)

// maxExportKey bounds a key in an export: far above any key the host makes,
// below Badger's limit (65,000 bytes).
const maxExportKey = 32 << 10

// ErrBadExport is an export file that is not one, not whole, or not what
// an export writes (a record too large, an empty or repeated key).
var ErrBadExport = errors.New("not a whole runehost store export")

// ErrNotEmpty is an import refused because the store already holds records.
var ErrNotEmpty = errors.New("store is not empty")

// ExportInfo describes an export.
type ExportInfo struct {
	Records int64             // records in it
	Data    int64             // bytes of their keys and values
	Bytes   int64             // of the file
	Sum     [sha256.Size]byte // the trailer's checksum
}

// ImportOptions configure Import.
type ImportOptions struct {
	// TempDir is where an input that cannot seek is copied first: it is
	// read twice, checked whole and then written. "" is os.TempDir().
	TempDir string
}

// ImportInfo describes an import.
type ImportInfo struct {
	Records      int64 // records written
	Data         int64 // bytes of their keys and values
	Transactions int   // commits it took
}

// holderKind is the kind of the records of a backend's hold on the store
// (store/jetstream's hold.go): its own, as the seal's marks are Badger's.
const holderKind = "holder"

// ownKey is a record of the store's own, never exported nor imported.
func ownKey(key Key) bool {
	return bytes.Equal(key, markKey) || bytes.Equal(key, flushKey) || bytes.HasPrefix(key, K(holderKind))
}

// exportWriter frames records after the header, hashing all it writes
// until the trailer.
type exportWriter struct {
	cw   *countWriter // over the output and sum
	out  io.Writer
	sum  hash.Hash
	info ExportInfo
	buf  [frameSize]byte
}

func newExportWriter(out io.Writer) (*exportWriter, error) {
	e := &exportWriter{out: out, sum: sha256.New()}
	e.cw = &countWriter{w: io.MultiWriter(out, e.sum)}
	_, err := io.WriteString(e.cw, exportMagic)
	return e, err
}

func (e *exportWriter) frame(klen, vlen int) error {
	binary.LittleEndian.PutUint32(e.buf[:4], uint32(klen))
	binary.LittleEndian.PutUint32(e.buf[4:], uint32(vlen))
	_, err := e.cw.Write(e.buf[:])
	return err
}

// record writes one record; one that Import would refuse fails the export
// instead of being written.
func (e *exportWriter) record(key Key, val []byte) error {
	if len(key) == 0 || len(key) > maxExportKey {
		return &RecordError{Key: key, Err: ErrTooLarge, Msg: fmt.Sprintf("a key of %d bytes cannot be exported (1 to %d)", len(key), maxExportKey)}
	}
	if len(val) > MaxRecord {
		return &RecordError{Key: key, Err: ErrTooLarge, Msg: fmt.Sprintf("%d bytes, limit %d", len(val), MaxRecord)}
	}
	if err := e.frame(len(key), len(val)); err != nil {
		return err
	}
	if _, err := e.cw.Write(key); err != nil {
		return err
	}
	if _, err := e.cw.Write(val); err != nil {
		return err
	}
	e.info.Records++
	e.info.Data += int64(len(key) + len(val))
	return nil
}

// finish writes the end and the trailer.
func (e *exportWriter) finish() (ExportInfo, error) {
	if err := e.frame(0, 0); err != nil {
		return ExportInfo{}, err
	}
	e.sum.Sum(e.info.Sum[:0])
	t := append([]byte(exportMagic), binary.LittleEndian.AppendUint64(nil, uint64(e.info.Records))...)
	t = binary.LittleEndian.AppendUint64(t, uint64(e.cw.n))
	t = append(t, e.info.Sum[:]...)
	if _, err := e.out.Write(t); err != nil {
		return ExportInfo{}, err
	}
	e.info.Bytes = e.cw.n + int64(len(t))
	return e.info, nil
}

// writeExport writes every record but the store's own, as of one View, to
// the writer reset returns. A backend may run a View's function again (a
// commit changed what it read), so reset starts the output over each time.
func (s *Store) writeExport(reset func() (io.Writer, error)) (ExportInfo, error) {
	var info ExportInfo
	err := s.View(func(tx *Tx) error {
		out, err := reset()
		if err != nil {
			return err
		}
		e, err := newExportWriter(out)
		if err != nil {
			return err
		}
		err = tx.b.Scan(Key{}, Key{}, func(key Key, val func() ([]byte, error)) (bool, error) {
			if ownKey(key) {
				return true, nil
			}
			v, err := val()
			if err != nil {
				return false, err
			}
			return true, e.record(key, v)
		})
		if err != nil {
			return err
		}
		info, err = e.finish()
		return err
	})
	return info, err
}

// fileOutput is a buffered writer over f, and reset, which empties f and
// the buffer and returns the writer: each run of a View's function starts
// the file over.
func fileOutput(f *os.File) (reset func() (io.Writer, error), flush func() error) {
	bw := bufio.NewWriterSize(f, 1<<20)
	reset = func() (io.Writer, error) {
		bw.Reset(f) // what an earlier run buffered is dropped
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return bw, f.Truncate(0)
	}
	return reset, bw.Flush
}

// exportTo exports into f from its start, and flushes.
func (s *Store) exportTo(f *os.File) (ExportInfo, error) {
	reset, flush := fileOutput(f)
	info, err := s.writeExport(reset)
	if err == nil {
		err = flush()
	}
	return info, err
}

// Export writes every record of the store, as of one moment, to w, framed
// with a header and a trailer carrying the count, length and SHA-256
// (exportMagic, frameSize, exportTrailerSize). It goes through a temporary file, so that w sees one
// whole export even if the read is run again, with bounded memory.
func (s *Store) Export(w io.Writer) (ExportInfo, error) {
	f, err := os.CreateTemp("", "runehost-export-*")
	if err != nil {
		return ExportInfo{}, fmt.Errorf("export: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	info, err := s.exportTo(f)
	if err != nil {
		return ExportInfo{}, fmt.Errorf("export: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ExportInfo{}, fmt.Errorf("export: %w", err)
	}
	if _, err := io.Copy(w, f); err != nil {
		return ExportInfo{}, fmt.Errorf("export: %w", err)
	}
	return info, nil
}

// ExportFile is Export to the file path: written aside, synced and renamed
// into place, so that the file is whole or absent.
func (s *Store) ExportFile(path string) (ExportInfo, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return ExportInfo{}, fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp) // after the rename, nothing
	defer f.Close()
	info, err := s.exportTo(f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return ExportInfo{}, fmt.Errorf("export: %w", err)
	}
	return info, nil
}

// exportReader reads an export's records in order, hashing all before the
// trailer, and refuses what an export never holds.
type exportReader struct {
	r    *bufio.Reader
	sum  hash.Hash
	n    int64 // bytes read before the trailer
	info ExportInfo
	last Key
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadExport}, args...)...)
}

// newExportReader reads the header.
func newExportReader(r io.Reader) (*exportReader, error) {
	e := &exportReader{r: bufio.NewReaderSize(r, 1<<20), sum: sha256.New()}
	head := make([]byte, len(exportMagic))
	if n, err := io.ReadFull(e.r, head); err != nil || string(head) != exportMagic {
		if n == 0 {
			return nil, bad("empty")
		}
		return nil, bad("no export header (%q)", head[:n])
	}
	e.hashed(head)
	return e, nil
}

func (e *exportReader) hashed(b []byte) {
	e.sum.Write(b)
	e.n += int64(len(b))
}

// read reads n bytes before the trailer; what is missing is a truncation.
func (e *exportReader) read(n int, what string) ([]byte, error) {
	// Grown as it is read: a length that lies costs no more than the file.
	b := make([]byte, 0, min(n, 1<<20))
	for len(b) < n {
		chunk := min(n-len(b), 1<<20)
		b = append(b, make([]byte, chunk)...)
		if _, err := io.ReadFull(e.r, b[len(b)-chunk:]); err != nil {
			return nil, bad("truncated in %s at byte %d", what, e.n+int64(len(b)-chunk))
		}
	}
	e.hashed(b)
	return b, nil
}

// next returns the next record; done at the end of the records, once the
// trailer and the end of the file are checked.
func (e *exportReader) next() (key Key, val []byte, done bool, err error) {
	at := e.n
	f, err := e.read(frameSize, fmt.Sprintf("the frame of record %d", e.info.Records+1))
	if err != nil {
		return nil, nil, false, err
	}
	klen, vlen := binary.LittleEndian.Uint32(f[:4]), binary.LittleEndian.Uint32(f[4:])
	switch {
	case klen == 0 && vlen == 0:
		return nil, nil, true, e.trailer()
	case klen == 0:
		return nil, nil, false, bad("record %d (byte %d) has an empty key", e.info.Records+1, at)
	case klen > maxExportKey:
		return nil, nil, false, bad("record %d (byte %d) has a key of %d bytes, over %d", e.info.Records+1, at, klen, maxExportKey)
	case vlen > MaxRecord:
		return nil, nil, false, bad("record %d (byte %d) has a value of %d bytes, over %d", e.info.Records+1, at, vlen, MaxRecord)
	}
	k, err := e.read(int(klen), fmt.Sprintf("the key of record %d", e.info.Records+1))
	if err != nil {
		return nil, nil, false, err
	}
	key = Key(k)
	if ownKey(key) {
		return nil, nil, false, bad("record %s (byte %d) is the store's own", key, at)
	}
	if e.last != nil && bytes.Compare(key, e.last) <= 0 {
		return nil, nil, false, bad("record %s (byte %d) is repeated or out of order (after %s)", key, at, e.last)
	}
	if val, err = e.read(int(vlen), "the value of record "+key.String()); err != nil {
		return nil, nil, false, err
	}
	e.last = key
	e.info.Records++
	e.info.Data += int64(klen) + int64(vlen)
	return key, val, false, nil
}

// trailer checks the trailer against what was read, and that nothing follows.
func (e *exportReader) trailer() error {
	t := make([]byte, exportTrailerSize)
	if _, err := io.ReadFull(e.r, t); err != nil {
		return bad("truncated: no trailer after its %d records", e.info.Records)
	}
	m := len(exportMagic)
	count, length := binary.LittleEndian.Uint64(t[m:]), binary.LittleEndian.Uint64(t[m+8:])
	e.sum.Sum(e.info.Sum[:0])
	switch {
	case string(t[:m]) != exportMagic:
		return bad("no trailer after its %d records", e.info.Records)
	case count != uint64(e.info.Records):
		return bad("its trailer says %d records, and it holds %d", count, e.info.Records)
	case length != uint64(e.n):
		return bad("its trailer says %d bytes before it, and there are %d", length, e.n)
	case !bytes.Equal(t[m+16:], e.info.Sum[:]):
		return bad("its checksum does not match its contents")
	}
	if n, _ := io.Copy(io.Discard, e.r); n > 0 {
		return bad("%d bytes after its trailer", n)
	}
	e.info.Bytes = e.n + int64(exportTrailerSize)
	return nil
}

// checkExport reads an export whole and checks it.
func checkExport(r io.Reader) (ExportInfo, error) {
	e, err := newExportReader(r)
	if err != nil {
		return ExportInfo{}, err
	}
	for {
		_, _, done, err := e.next()
		if err != nil || done {
			return e.info, err
		}
	}
}

// ImportFile is Import from the file path.
func (s *Store) ImportFile(path string, opts ImportOptions) (ImportInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportInfo{}, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	return s.importFrom(f, opts, path+": ")
}

// Import writes the records of an export into the store, which must hold
// none (ErrNotEmpty). The export is checked whole first (ErrBadExport, and
// nothing written); then its records are written in Synced transactions
// of at most importBatchRecords records and importBatchBytes bytes, read
// back, and compared with the export's count and checksum.
func (s *Store) Import(r io.Reader, opts ImportOptions) (ImportInfo, error) {
	return s.importFrom(r, opts, "")
}

// importFrom is Import, with the file's name (and ": ") in its errors.
func (s *Store) importFrom(r io.Reader, opts ImportOptions, name string) (ImportInfo, error) {
	if err := s.checkEmpty(); err != nil {
		return ImportInfo{}, fmt.Errorf("import: %w", err)
	}
	rs, cleanup, err := seekable(r, opts.TempDir)
	if err != nil {
		return ImportInfo{}, fmt.Errorf("import: %w", err)
	}
	defer cleanup()
	start, _ := rs.Seek(0, io.SeekCurrent)
	want, err := checkExport(rs)
	if err != nil {
		return ImportInfo{}, fmt.Errorf("import: %s%w", name, err)
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return ImportInfo{}, fmt.Errorf("import: %w", err)
	}
	info, err := s.load(rs)
	if err != nil {
		return info, fmt.Errorf("import: %safter %d records written (the store holds a partial import: import into a new, empty store again): %w", name, info.Records, err)
	}
	got, err := s.writeExport(func() (io.Writer, error) { return io.Discard, nil })
	if err != nil {
		return info, fmt.Errorf("import: reading the records back: %w", err)
	}
	if got.Records != want.Records || got.Sum != want.Sum {
		return info, fmt.Errorf("import: the store read back holds %d records (checksum %x), and the export %d (checksum %x)", got.Records, got.Sum[:8], want.Records, want.Sum[:8])
	}
	return info, nil
}

// checkEmpty refuses a store that holds a record other than its own.
func (s *Store) checkEmpty() error {
	var first Key
	err := s.View(func(tx *Tx) error {
		first = nil
		return tx.b.Scan(Key{}, Key{}, func(key Key, _ func() ([]byte, error)) (bool, error) {
			if ownKey(key) {
				return true, nil
			}
			first = key
			return false, nil
		})
	})
	if err != nil {
		return err
	}
	if first != nil {
		name := s.Dir()
		if name == "" {
			name = "(in memory)"
		}
		return fmt.Errorf("%s: %w: it holds records (%s, maybe more): import only into a new, empty store", name, ErrNotEmpty, first)
	}
	return nil
}

// seekable is r if it can seek, else r copied to a temporary file in dir.
func seekable(r io.Reader, dir string) (io.ReadSeeker, func(), error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if _, err := rs.Seek(0, io.SeekCurrent); err == nil { // a pipe is a *os.File that cannot
			return rs, func() {}, nil
		}
	}
	f, err := os.CreateTemp(dir, "runehost-import-*")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, r); err != nil {
		cleanup()
		return nil, nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, err
	}
	return f, cleanup, nil
}

type importRecord struct {
	key Key
	val []byte
}

// load writes the records of a checked export, batch by batch. The export
// is read again as it is written: one that changed since it was checked
// fails here.
func (s *Store) load(r io.Reader) (ImportInfo, error) {
	var info ImportInfo
	e, err := newExportReader(r)
	if err != nil {
		return info, err
	}
	var batch []importRecord
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.commitBatch(batch, &info)
		batch, size = batch[:0], 0
		return err
	}
	for {
		key, val, done, err := e.next()
		if err != nil {
			return info, err
		}
		if done {
			return info, flush()
		}
		n := len(key) + len(val)
		if len(batch) == importBatchRecords || len(batch) > 0 && size+n > importBatchBytes {
			if err := flush(); err != nil {
				return info, err
			}
		}
		batch = append(batch, importRecord{key, val})
		size += n
	}
}

// commitBatch writes records in one Synced transaction, or in halves if the
// backend finds them too large together.
func (s *Store) commitBatch(batch []importRecord, info *ImportInfo) error {
	err := s.Retry(Synced, func(tx *Tx) error {
		for _, r := range batch {
			if err := tx.PutRaw(r.key, r.val); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrTooLarge) && len(batch) > 1 {
		half := len(batch) / 2
		if err := s.commitBatch(batch[:half], info); err != nil {
			return err
		}
		return s.commitBatch(batch[half:], info)
	}
	if err != nil {
		if len(batch) == 1 {
			return fmt.Errorf("record %s: %w", batch[0].key, err)
		}
		return err
	}
	info.Transactions++
	for _, r := range batch {
		info.Records++
		info.Data += int64(len(r.key) + len(r.val))
	}
	return nil
}
