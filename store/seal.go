// seal.go holds the seal: a small file beside Badger's, synced on its own,
// that records what the store held when last seen whole (how long its
// MANIFEST was, its tables and whether each was read in full, the newest
// synced commit), so that an open can tell a store that lost tables or
// synced writes from one that is merely small.

package store

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// sealFile is the seal's name in the store directory.
const sealFile = "SEAL"

// sealFormat is the version of the seal's layout.
const sealFormat = 1

// seal is what the store held when last seen whole.
type seal struct {
	Format   int            `json:"format"`
	Manifest sealedManifest `json:"manifest"`
	Tables   []sealedTable  `json:"tables"`
	// Synced is the version of the mark (markKey) as of the newest synced
	// commit: every open must find the mark at least that new.
	Synced uint64 `json:"synced"`
}

// sealedManifest is the MANIFEST as sealed.
type sealedManifest struct {
	Size      int64  `json:"size"` // bytes of whole change sets
	CRC       uint32 `json:"crc"`  // of those bytes
	Deletions int    `json:"deletions"`
}

// sealedTable is a table as sealed.
type sealedTable struct {
	ID uint64 `json:"id"`
	fileStamp
	Verified bool `json:"verified"` // every block was checksummed, for these contents
}

func (t sealedTable) stamp() fileStamp { return t.fileStamp }

// table returns the sealed table id; a nil seal has none.
func (s *seal) table(id uint64) (sealedTable, bool) {
	if s == nil {
		return sealedTable{}, false
	}
	for _, t := range s.Tables {
		if t.ID == id {
			return t, true
		}
	}
	return sealedTable{}, false
}

// readSeal reads dir's seal: nil when there is none.
func readSeal(dir string) (*seal, error) {
	path := filepath.Join(dir, sealFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	body, sum, ok := bytes.Cut(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	want, perr := strconv.ParseUint(string(sum), 16, 32)
	if !ok || perr != nil || crc32.ChecksumIEEE(body) != uint32(want) {
		return nil, damaged(path, "its checksum does not match its contents")
	}
	var s seal
	if err := json.Unmarshal(body, &s); err != nil || s.Format != sealFormat {
		return nil, damaged(path, "not a seal of format %d", sealFormat)
	}
	return &s, nil
}

// writeSeal replaces dir's seal, durably: written aside, synced, renamed
// into place, and the directory synced.
func writeSeal(dir string, s *seal) error {
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	b := fmt.Appendf(body, "\n%08x\n", crc32.ChecksumIEEE(body))
	tmp := filepath.Join(dir, sealFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, sealFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("store: seal: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// buildSeal records dir's tables as they are now, keeping the verdicts of
// verified (tables read in full, by their contents) and reading in full,
// when check is set, the tables not yet verified; accept records them all
// as verified, the damaged ones as they are.
func buildSeal(dir string, synced uint64, verified map[uint64]fileStamp, check, accept bool) (*seal, error) {
	f, err := readFiles(dir, 0)
	if err != nil {
		return nil, err
	}
	m := f.manifest
	s := &seal{Format: sealFormat, Manifest: sealedManifest{Size: m.size, CRC: m.crc, Deletions: m.deletions}, Synced: synced}
	for id, tm := range m.tables {
		st, ok := f.tables[id]
		if !ok {
			continue // deleted by a compaction since the replay
		}
		t := sealedTable{ID: id, fileStamp: st}
		if v, ok := verified[id]; ok && v.sameContents(st) {
			t.Verified = true
		} else if check && (accept || checkTable(filepath.Join(dir, tableName(id)), tm.Compression) == nil) {
			t.Verified = true // read in full, or its damage accepted
			verified[id] = st
		}
		s.Tables = append(s.Tables, t)
	}
	slices.SortFunc(s.Tables, func(a, b sealedTable) int { return cmp.Compare(a.ID, b.ID) })
	return s, nil
}

// sealEvery is how often an open store renews its seal, if anything changed:
// the window in which a crash leaves a seal older than the store.
const sealEvery = time.Second

// sealLoop renews the seal while the store is open.
func (s *Store) sealLoop() {
	defer close(s.sealDone)
	t := time.NewTicker(sealEvery)
	defer t.Stop()
	for {
		select {
		case <-s.sealStop:
			return
		case <-t.C:
			s.renewSeal(false, false)
			s.collectDue()
		}
	}
}

// renewSeal writes the seal if the MANIFEST or the newest synced commit
// moved since the last one.
func (s *Store) renewSeal(check, accept bool) error {
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	synced := s.synced.Load()
	fi, err := os.Stat(filepath.Join(s.dir, badger.ManifestFilename))
	if err != nil {
		return err
	}
	mark := [2]int64{fi.Size(), fi.ModTime().UnixNano()}
	if s.sealed != nil && s.sealed.Synced == synced && mark == s.sealMark && !check {
		return nil
	}
	next, err := buildSeal(s.dir, synced, s.verified, check, accept)
	if err != nil {
		return err
	}
	if err := writeSeal(s.dir, next); err != nil {
		return err
	}
	s.sealed, s.sealMark = next, mark
	return nil
}
