// sync.go holds what a Synced commit flushes: Badger's logs, including the
// ones that rotated since the last sync, which Badger's own Sync misses;
// and the group of commits that share one sync.

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// syncGroup lets concurrent Synced commits share a sync. Each commit takes
// a ticket once Badger has it; one sync that starts after a ticket was taken
// covers it. While one commit syncs, the others queue on mu; the first of
// them to get it syncs for all that queued, and the rest find themselves
// covered. One invocation pays one sync per commit, as before; many pay one
// between them per sync's time.
type syncGroup struct {
	tickets  atomic.Uint64 // commits that finished and want a sync
	version  atomic.Uint64 // the highest mark version among them
	inflight atomic.Int64  // Synced commits between their start (begin) and their ticket
	mu       sync.Mutex
	synced   uint64 // tickets covered by the last good sync
}

// gather is the most a sync waits for Synced commits already under way to
// finish and share it: a sync costs more than this wait, and one commit
// alone (nothing in flight) never waits.
const gather = 200 * time.Microsecond

// begin counts a Synced commit under way; its wait (or end) uncounts it.
func (g *syncGroup) begin() { g.inflight.Add(1) }

// end uncounts a Synced commit that ended without waiting (it failed).
func (g *syncGroup) end() { g.inflight.Add(-1) }

// wait returns once a sync that began after this commit finished succeeds
// (or with the error of the one this commit ran). sync gets the highest
// mark version the sync covers.
func (g *syncGroup) wait(version uint64, sync func(version uint64) error) error {
	for old := g.version.Load(); version > old && !g.version.CompareAndSwap(old, version); old = g.version.Load() {
	}
	ticket := g.tickets.Add(1)
	g.inflight.Add(-1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.synced >= ticket {
		return nil // a sync that started after this commit covered it
	}
	// Commits under way are about to want a sync too: one sync for them
	// all (group commit), for at most gather.
	for t0 := time.Now(); g.inflight.Load() > 0 && time.Since(t0) < gather; {
		runtime.Gosched()
	}
	// Read before syncing: every commit counted here finished before it.
	upTo, v := g.tickets.Load(), g.version.Load()
	if err := sync(v); err != nil {
		return err
	}
	g.synced = upTo
	return nil
}

// Syncs is how many syncs Synced commits have made since the store opened
// (on Badger; 0 on JetStream, which syncs every write): commits that shared
// one counted once.
func (s *Store) Syncs() uint64 { return s.syncs.Load() }

// Badger's DB.Sync flushes the newest value-log file and the active
// memtable's write-ahead log only, and with SyncWrites off Badger never
// syncs a log file when it rotates. A Synced commit whose value filled a
// value-log file (the write that fills a file is the last one in it) would
// then return with its value in the page cache only; a machine crash would
// leave its key naming a value that is not on disk. syncLogs also flushes
// every log file that was the newest one at the last sync and is not now.
//
// syncLogs does not call DB.Sync. DB.Sync holds Badger's lock while the
// write-ahead log syncs, which stops every writer and reader behind it for
// the sync's time, and it syncs the value log even when nothing was written
// to it (a sync costs a flush of the disk's cache either way). syncLogs
// syncs the same files through descriptors of its own (a file's dirty
// pages are the same whoever mapped them), the value log first (the
// write-ahead log names its values), and the value log only when a
// transaction or a collection may have written it since its last sync.

// logExts are the extensions of Badger's append-only logs, in the order
// they are synced.
var logExts = []string{".vlog", ".mem"}

// logState is what the last sync left: per log extension, the newest file.
type logState struct {
	mu     sync.Mutex
	listed bool // newest was read from a listing
	newest map[string]int
	open   map[string]*os.File // the newest of each, kept open to sync
	vlog   uint64              // valueWrites as of the value log's last sync
	vlogs  int                 // syncs of the newest value log (for tests)
}

// syncLogs syncs Badger's logs and returns the names of the log files it
// flushed, for the crash harness (synchook_crashtest.go).
func (s *badgerStore) syncLogs() ([]string, error) {
	if s.dir == "" {
		return nil, nil // in memory: nothing to flush
	}
	// Read before syncing: every value-log write counted is in the file.
	writes, collecting := s.valueWrites.Load(), s.collecting.Load() > 0
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	var synced []string
	if !s.logs.unrotatedNow(s.dir) {
		files, err := logFiles(s.dir)
		if err != nil {
			return nil, err
		}
		if s.logs.newest == nil {
			s.logs.newest = map[string]int{} // every file but the newest is flushed once
		}
		for _, ext := range logExts {
			fids := files[ext]
			if len(fids) == 0 {
				delete(s.logs.newest, ext)
				continue
			}
			top := fids[len(fids)-1]
			for _, f := range fids[:len(fids)-1] {
				if f.fid < s.logs.newest[ext] {
					continue // flushed when it stopped being the newest
				}
				if err := fsyncFile(filepath.Join(s.dir, f.name)); err != nil {
					return nil, err
				}
				synced = append(synced, f.name)
			}
			s.logs.newest[ext] = top.fid
		}
		s.logs.listed = true
		collecting = true // the newest value log may be new: synced below
	}
	if !ownLogSync {
		// Where a file's sync does not reach what its mapping wrote (Windows
		// wants FlushViewOfFile), Badger's own sync flushes the newest.
		if err := s.db.Sync(); err != nil {
			return nil, err
		}
		for _, ext := range logExts {
			if fid, ok := s.logs.newest[ext]; ok {
				synced = append(synced, fmt.Sprintf(logNames[ext], fid))
			}
		}
		return synced, nil
	}
	for _, ext := range logExts {
		fid, ok := s.logs.newest[ext]
		if !ok {
			continue
		}
		name := fmt.Sprintf(logNames[ext], fid)
		if ext == ".vlog" && !collecting && writes == s.logs.vlog {
			continue // nothing written to it since it was synced
		}
		if err := s.logs.syncNewest(s.dir, ext, fid); err != nil {
			return nil, err
		}
		if ext == ".vlog" {
			s.logs.vlogs++
		}
		synced = append(synced, name)
	}
	s.logs.vlog = writes
	return synced, nil
}

// syncNewest syncs the newest log of ext, fid, through a descriptor kept
// open while it is the newest.
func (l *logState) syncNewest(dir, ext string, fid int) error {
	if l.open == nil {
		l.open = map[string]*os.File{}
	}
	f := l.open[ext]
	if f != nil && f.Name() != filepath.Join(dir, fmt.Sprintf(logNames[ext], fid)) {
		f.Close() // rotated: it was flushed when it stopped being the newest
		f = nil
	}
	if f == nil {
		var err error
		f, err = os.Open(filepath.Join(dir, fmt.Sprintf(logNames[ext], fid)))
		if os.IsNotExist(err) {
			delete(l.open, ext)
			return nil // gone (a memtable's log written to its table): nothing to flush
		}
		if err != nil {
			return fmt.Errorf("store: sync: %w", err)
		}
		l.open[ext] = f
	}
	if err := datasync(f); err != nil {
		return fmt.Errorf("store: sync %s: %w", filepath.Base(f.Name()), err)
	}
	return nil
}

// closeLogs closes the descriptors syncLogs keeps.
func (l *logState) closeLogs() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ext, f := range l.open {
		f.Close()
		delete(l.open, ext)
	}
}

// logNames are how Badger names its logs (memtable.go's mtFilePath,
// value.go's vlogFilePath).
var logNames = map[string]string{".vlog": "%06d.vlog", ".mem": "%05d.mem"}

// unrotatedNow reports, without listing the directory (a listing was a
// tenth of an act's CPU), that no log rotated since the last sync. Badger
// numbers a new log one past the newest (the value log's maxFid+1, the
// memtables' nextMemFid), so a rotation leaves the file one past the newest
// the last sync saw; a memtable's log is deleted only after its table was
// written and synced, and only after every older one's. Any doubt falls
// back to the listing.
func (l *logState) unrotatedNow(dir string) bool {
	if !l.listed {
		return false
	}
	for _, ext := range logExts {
		fid, ok := l.newest[ext]
		if !ok {
			return false // none yet: a first one may have appeared
		}
		if _, err := os.Lstat(filepath.Join(dir, fmt.Sprintf(logNames[ext], fid+1))); !os.IsNotExist(err) {
			return false
		}
	}
	return true
}

// logFile is one of Badger's log files.
type logFile struct {
	fid  int
	name string
}

// logFiles lists the log files in dir by extension, file ids ascending.
func logFiles(dir string) (map[string][]logFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	out := map[string][]logFile{}
	for _, e := range ents {
		for _, ext := range logExts {
			if id, ok := strings.CutSuffix(e.Name(), ext); ok {
				if fid, err := strconv.Atoi(id); err == nil {
					out[ext] = append(out[ext], logFile{fid, e.Name()})
				}
			}
		}
	}
	for _, fs := range out {
		slices.SortFunc(fs, func(a, b logFile) int { return a.fid - b.fid })
	}
	return out, nil
}

// fsyncFile flushes a file to disk. One that is gone (a memtable's log
// deleted once its table was written, a value log collected) needs nothing.
func fsyncFile(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", filepath.Base(path), err)
	}
	return nil
}
