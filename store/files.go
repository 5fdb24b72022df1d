// files.go holds what the store knows of Badger's files: the MANIFEST as
// Badger would replay it, the tables and logs in the directory, and the
// checks of them made before Badger is let open the directory (Badger opens
// tables in goroutines of its own, where a damaged one is a panic nobody can
// recover, and it deletes every table its MANIFEST does not list).

package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
	"google.golang.org/protobuf/proto"
)

// fileStamp identifies a file's contents as the file system keeps them.
type fileStamp struct {
	Size      int64  `json:"size"`
	Ctime     int64  `json:"ctime"` // ns
	Inode     uint64 `json:"inode"`
	Allocated int64  `json:"-"` // bytes of disk the file holds (less than Size when sparse)
}

// sameContents reports whether two stamps are of the same, unchanged file.
func (a fileStamp) sameContents(b fileStamp) bool {
	return a.Size == b.Size && a.Ctime == b.Ctime && a.Inode == b.Inode
}

// manifest is Badger's MANIFEST as Badger would replay it.
type manifest struct {
	present   bool
	size      int64  // bytes of whole change sets; a torn tail (a crash while appending) is not counted
	crc       uint32 // of those bytes
	prefixCRC uint32 // of the first bytes, as many as the seal recorded (or fewer, all there are)
	tables    map[uint64]badger.TableManifest
	deletions int
}

// dirFiles is what a store directory holds of Badger's.
type dirFiles struct {
	dir      string
	manifest manifest
	tables   map[uint64]fileStamp // .sst by id
	logs     int                  // .vlog and .mem files
}

// tableName is a table's file name, as Badger writes it.
func tableName(id uint64) string { return filepath.Base(table.NewFilename(id, "")) }

// readFiles lists a store directory and replays its MANIFEST, checksumming
// its first prefix bytes too. An error is one of the file system's or a
// *RecordError naming the MANIFEST.
func readFiles(dir string, prefix int64) (*dirFiles, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	f := &dirFiles{dir: dir, tables: map[uint64]fileStamp{}}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".sst"):
			id, ok := table.ParseFileID(name)
			fi, err := e.Info()
			if ok && err == nil { // an error: gone since the listing, deleted by Badger
				f.tables[id] = stampOf(fi)
			}
		case strings.HasSuffix(name, ".vlog") || strings.HasSuffix(name, ".mem"):
			f.logs++
		}
	}
	f.manifest, err = replayManifest(dir, prefix)
	return f, err
}

// replayManifest replays dir's MANIFEST with Badger's own code, and
// checksums what it read and its first prefix bytes, from the same file
// (Badger may rename a rewritten one into place meanwhile).
func replayManifest(dir string, prefix int64) (manifest, error) {
	path := filepath.Join(dir, badger.ManifestFilename)
	fp, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return manifest{}, nil
	}
	if err != nil {
		return manifest{}, fmt.Errorf("store: %w", err)
	}
	defer fp.Close()
	m, size, err := badger.ReplayManifestFile(fp, 0, badger.DefaultOptions("").WithLogger(nil))
	if err != nil {
		return manifest{}, damaged(path, "Badger cannot replay it: %v", firstLine(err))
	}
	out := manifest{present: true, size: size, tables: m.Tables, deletions: m.Deletions}
	if out.crc, err = crcOf(fp, size); err != nil {
		return manifest{}, fmt.Errorf("store: %w", err)
	}
	if out.prefixCRC, err = crcOf(fp, min(prefix, size)); err != nil {
		return manifest{}, fmt.Errorf("store: %w", err)
	}
	return out, nil
}

// crcOf is the checksum of a file's first n bytes.
func crcOf(f *os.File, n int64) (uint32, error) {
	sum := crc32.NewIEEE()
	_, err := io.Copy(sum, io.NewSectionReader(f, 0, n))
	return sum.Sum32(), err
}

// damaged is the error of a damaged store file.
func damaged(path, format string, args ...any) *RecordError {
	return &RecordError{File: path, Err: ErrDamaged, Msg: fmt.Sprintf(format, args...)}
}

// rewriteNear is how close Badger's deletion count must have come to the
// count at which it rewrites its MANIFEST shorter (10,000) for a MANIFEST
// that lost its sealed beginning to be possibly a rewrite, not a loss.
const rewriteNear = 9000

// preflight checks a directory's files against its seal (nil when the store
// has none yet) before Badger may open them; each problem names a file.
// Tables that do not match a verified entry of the seal are read in full,
// every block checksummed; verified holds the tables found sound.
func preflight(f *dirFiles, s *seal) (problems []*RecordError, verified map[uint64]fileStamp) {
	verified = map[uint64]fileStamp{}
	m := &f.manifest
	mpath := filepath.Join(f.dir, badger.ManifestFilename)
	if !m.present {
		if len(f.tables) > 0 || f.logs > 0 || s != nil {
			problems = append(problems, damaged(mpath, "missing, while the store holds tables or logs: Badger would start afresh and delete every table"))
		}
		return problems, verified
	}
	// Badger only appends to its MANIFEST (or rewrites it shorter, past
	// 10,000 deletions): one that no longer begins with the sealed bytes
	// has lost changes, and Badger would delete the tables it forgot.
	rewritten := s != nil && s.Manifest.Deletions >= rewriteNear && m.deletions < s.Manifest.Deletions
	if s != nil && !rewritten {
		if m.size < s.Manifest.Size {
			problems = append(problems, damaged(mpath, "%d bytes of whole changes, where the seal recorded %d: it was truncated, and Badger would drop (and delete) the tables it no longer lists%s",
				m.size, s.Manifest.Size, lostTables(f, s)))
		} else if m.prefixCRC != s.Manifest.CRC {
			problems = append(problems, damaged(mpath, "its first %d bytes are not the ones sealed: it was overwritten or replaced%s", s.Manifest.Size, lostTables(f, s)))
		}
	}
	ids := make([]uint64, 0, len(m.tables))
	var top uint64
	for id := range m.tables {
		ids = append(ids, id)
		top = max(top, id)
	}
	slices.Sort(ids)
	if s == nil && m.deletions == 0 {
		// Unsealed, and never compacted: a table older than a listed one
		// that the MANIFEST does not list was lost from it.
		for id := range f.tables {
			if _, ok := m.tables[id]; !ok && id < top {
				problems = append(problems, damaged(filepath.Join(f.dir, tableName(id)), "not listed by the MANIFEST, which never deleted a table: the MANIFEST lost it"))
			}
		}
	}
	for _, id := range ids {
		path := filepath.Join(f.dir, tableName(id))
		st, ok := f.tables[id]
		if !ok {
			problems = append(problems, damaged(path, "listed by the MANIFEST, missing from the directory"))
			continue
		}
		if was, ok := s.table(id); ok && was.Verified && was.stamp().sameContents(st) {
			verified[id] = st
			continue
		} else if ok && was.Size != st.Size {
			problems = append(problems, damaged(path, "%d bytes, where the seal recorded %d: truncated or overwritten", st.Size, was.Size))
			continue
		}
		if err := checkTable(path, m.tables[id].Compression); err != nil {
			problems = append(problems, err)
			continue
		}
		verified[id] = st
	}
	return problems, verified
}

// lostTables names the sealed tables a MANIFEST no longer lists.
func lostTables(f *dirFiles, s *seal) string {
	var lost []string
	for _, t := range s.Tables {
		if _, ok := f.manifest.tables[t.ID]; !ok {
			lost = append(lost, tableName(t.ID))
		}
	}
	if len(lost) == 0 {
		return ""
	}
	if len(lost) > 8 {
		lost = append(lost[:8], fmt.Sprintf("and %d more", len(lost)-8))
	}
	return " (" + strings.Join(lost, ", ") + ")"
}

// checkTable opens a table with Badger's code and checksums every block of
// it, in this goroutine, where Badger's panics over a damaged file (and
// faults on a file shorter than its mapping) are recovered.
func checkTable(path string, compression options.CompressionType) (err *RecordError) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = damaged(path, "Badger cannot read it: %s", firstLine(fmt.Errorf("%v", r)))
		}
	}()
	mf, merr := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if merr != nil {
		return damaged(path, "cannot map it: %v", firstLine(merr))
	}
	// On an error the mapping is left to the process: OpenTable closes it
	// on some errors and not on others, and a second unmap could unmap
	// what has been mapped there since.
	t, terr := table.OpenTable(mf, table.Options{ReadOnly: true, BlockSize: 4 << 10, Compression: compression})
	if terr != nil {
		return damaged(path, "%v", firstLine(terr))
	}
	if terr := t.VerifyChecksum(); terr != nil {
		return damaged(path, "%v", firstLine(terr))
	}
	// Close, not DecrRef: a table's last reference deletes its file.
	t.MmapFile.Close(-1)
	return nil
}

// sparseDebt is how much disk Badger's preallocated logs may still claim:
// it maps them at their full size and writes into the holes, and a write
// into a hole on a full disk is a SIGBUS, not an error.
func sparseDebt(dir string) (uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var debt uint64
	for _, e := range ents {
		if n := e.Name(); !strings.HasSuffix(n, ".vlog") && !strings.HasSuffix(n, ".mem") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		st := stampOf(fi)
		if st.Size > st.Allocated {
			debt += uint64(st.Size - st.Allocated)
		}
	}
	return debt, nil
}

// setAside takes tables out of a store that Badger cannot open with them:
// each file is renamed NAME.damaged (kept, for whoever wants to look) and a
// change deleting it is appended to the MANIFEST, in Badger's format, and
// synced. Used only to accept damage (Options.AcceptDamage).
func setAside(dir string, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	cs := &pb.ManifestChangeSet{}
	for _, id := range ids {
		cs.Changes = append(cs.Changes, &pb.ManifestChange{Id: id, Op: pb.ManifestChange_DELETE})
		p := filepath.Join(dir, tableName(id))
		if err := os.Rename(p, p+".damaged"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store: %w", err)
		}
	}
	body, err := proto.Marshal(cs)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// Badger's framing of a change set: length and CRC-32C, big endian.
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = binary.BigEndian.AppendUint32(frame, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	f, err := os.OpenFile(filepath.Join(dir, badger.ManifestFilename), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	m, err := replayManifest(dir, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(append(frame, body...), m.size); err != nil { // over a torn tail, if any
		return fmt.Errorf("store: %w", err)
	}
	if err := f.Truncate(m.size + int64(len(frame)+len(body))); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return syncDir(dir)
}
