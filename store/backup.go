// backup.go holds backups: a consistent snapshot of every record, taken
// while the store is open with Badger's own backup stream, framed with a
// header and a trailer that carries its length and checksum, and restored
// only into an empty directory.

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

// backupMagic opens a backup file; the trailer repeats it.
const backupMagic = "runehost-store-backup 1\n"

// trailerSize is the trailer's: the magic, the stream's length (8 bytes,
// little endian) and its SHA-256.
const trailerSize = len(backupMagic) + 8 + sha256.Size

// ErrBadBackup is a backup file that is not one, or not whole.
var ErrBadBackup = errors.New("not a whole runehost store backup")

// BackupInfo describes a backup.
type BackupInfo struct {
	Version uint64 // the newest version (commit) in it
	Bytes   int64  // of the file
}

// Backup writes a consistent snapshot of every record to the file path:
// written aside, synced and renamed into place, so that the file is whole
// or absent. Writes may go on meanwhile; they are not in the snapshot. A
// value Badger cannot read fails the backup rather than being left out.
func (s *Store) Backup(path string) (BackupInfo, error) {
	if s.other != nil {
		return BackupInfo{}, errors.New("store: backup takes Badger's snapshot; a store on another backend (JetStream) is exported (runehost store export)")
	}
	if s.dir == "" {
		return BackupInfo{}, errors.New("store: an in-memory store has no backup")
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp) // after the rename, nothing
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	sum := sha256.New()
	cw := &countWriter{w: io.MultiWriter(bw, sum)}
	if _, err := bw.WriteString(backupMagic); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	before, _ := s.log.count()
	version, err := s.db.Backup(cw, 0)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if after, last := s.log.count(); after != before {
		return BackupInfo{}, fmt.Errorf("backup: %w: Badger could not read %d values (%s); runehost store verify finds the records", ErrCorrupt, after-before, last)
	}
	trailer := append([]byte(backupMagic), binary.LittleEndian.AppendUint64(nil, uint64(cw.n))...)
	trailer = sum.Sum(trailer)
	if _, err := bw.Write(trailer); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if err := f.Sync(); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	return BackupInfo{Version: version, Bytes: int64(len(backupMagic)) + cw.n + int64(trailerSize)}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Restore makes a new store, opened with opts, from the backup file path.
// Its directory (opts.Dir) must not exist or be empty: a live store is
// never overwritten. The backup is
// checked whole (its trailer's length and checksum) before anything is
// written; if loading it fails, what was made of dir is removed.
func Restore(opts Options, path string) (err error) {
	dir := opts.Dir
	if dir == "" || opts.InMemory {
		return errors.New("restore: give the new store's directory")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	streamLen, err := checkBackup(f)
	if err != nil {
		return fmt.Errorf("restore: %s: %w", path, err)
	}
	ents, err := os.ReadDir(dir)
	existed := err == nil
	if existed && len(ents) > 0 {
		return fmt.Errorf("restore: %s is not empty: restore into a new or empty directory (a live store is never overwritten)", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	s, err := Open(opts)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("restore: %w", cerr)
		}
		if err != nil { // undo: dir back as it was
			os.RemoveAll(dir)
			if existed {
				os.Mkdir(dir, 0o700)
			}
		}
	}()
	// Badger's loader writes past Update: room for it is asked first.
	if err := s.space.admit(int(min(streamLen, 1<<40)), false); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	r := io.NewSectionReader(f, int64(len(backupMagic)), streamLen)
	if err := s.db.Load(r, 16); err != nil {
		return fmt.Errorf("restore: loading %s: %w", path, err)
	}
	return s.db.Sync()
}

// checkBackup checks a backup's header and trailer, and the checksum of
// the stream between them, whose length it returns.
func checkBackup(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size < int64(len(backupMagic)+trailerSize) {
		return 0, fmt.Errorf("%w: %d bytes", ErrBadBackup, size)
	}
	head := make([]byte, len(backupMagic))
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != backupMagic {
		return 0, fmt.Errorf("%w: no backup header", ErrBadBackup)
	}
	trailer := make([]byte, trailerSize)
	if _, err := f.ReadAt(trailer, size-int64(trailerSize)); err != nil {
		return 0, err
	}
	n := int64(binary.LittleEndian.Uint64(trailer[len(backupMagic):]))
	if string(trailer[:len(backupMagic)]) != backupMagic || n != size-int64(len(backupMagic)+trailerSize) {
		return 0, fmt.Errorf("%w: truncated (no trailer, or one of another length)", ErrBadBackup)
	}
	var sum hash.Hash = sha256.New()
	if _, err := io.Copy(sum, io.NewSectionReader(f, int64(len(backupMagic)), n)); err != nil {
		return 0, err
	}
	if !bytes.Equal(sum.Sum(nil), trailer[len(backupMagic)+8:]) {
		return 0, fmt.Errorf("%w: its checksum does not match its contents", ErrBadBackup)
	}
	return n, nil
}
