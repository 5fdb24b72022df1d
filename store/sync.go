// sync.go holds what a Synced commit flushes: Badger's logs, including the
// ones that rotated since the last sync, which Badger's own Sync misses;
// and the group of commits that share one sync.

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// syncGroup lets concurrent Synced commits share a sync. Each commit takes
// a ticket once Badger has it; one sync that starts after a ticket was taken
// covers it. While one commit syncs, the others queue on mu; the first of
// them to get it syncs for all that queued, and the rest find themselves
// covered. One invocation pays one sync per commit, as before; many pay one
// between them per sync's time.
type syncGroup struct {
	tickets atomic.Uint64 // commits that finished and want a sync
	version atomic.Uint64 // the highest mark version among them
	mu      sync.Mutex
	synced  uint64 // tickets covered by the last good sync
}

// wait returns once a sync that began after this commit finished succeeds
// (or with the error of the one this commit ran). sync gets the highest
// mark version the sync covers.
func (g *syncGroup) wait(version uint64, sync func(version uint64) error) error {
	for old := g.version.Load(); version > old && !g.version.CompareAndSwap(old, version); old = g.version.Load() {
	}
	ticket := g.tickets.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.synced >= ticket {
		return nil // a sync that started after this commit covered it
	}
	// Read before syncing: every commit counted here finished before it.
	upTo, v := g.tickets.Load(), g.version.Load()
	if err := sync(v); err != nil {
		return err
	}
	g.synced = upTo
	return nil
}

// Badger's DB.Sync flushes the newest value-log file and the active
// memtable's write-ahead log only, and with SyncWrites off Badger never
// syncs a log file when it rotates. A Synced commit whose value filled a
// value-log file (the write that fills a file is the last one in it) would
// then return with its value in the page cache only; a machine crash would
// leave its key naming a value that is not on disk. syncLogs also flushes
// every log file that was the newest one at the last sync and is not now.

// logExts are the extensions of Badger's append-only logs.
var logExts = []string{".vlog", ".mem"}

// logState is what the last sync left: per log extension, the newest file.
type logState struct {
	mu     sync.Mutex
	listed bool // newest was read from a listing
	newest map[string]int
}

// syncLogs syncs Badger's logs and returns the names of the log files it
// flushed, for the crash harness (synchook_crashtest.go).
func (s *badgerStore) syncLogs() ([]string, error) {
	if err := s.db.Sync(); err != nil {
		return nil, err
	}
	if s.dir == "" {
		return nil, nil
	}
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	if names, ok := s.logs.unrotated(s.dir); ok {
		return names, nil // DB.Sync flushed the newest of each: nothing rotated
	}
	files, err := logFiles(s.dir)
	if err != nil {
		return nil, err
	}
	if s.logs.newest == nil {
		s.logs.newest = map[string]int{} // every file but the newest is flushed once
	}
	var synced []string
	for _, ext := range logExts {
		fids := files[ext]
		if len(fids) == 0 {
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
		synced = append(synced, top.name) // DB.Sync flushed it
	}
	s.logs.listed = true
	return synced, nil
}

// logNames are how Badger names its logs (memtable.go's mtFilePath,
// value.go's vlogFilePath).
var logNames = map[string]string{".vlog": "%06d.vlog", ".mem": "%05d.mem"}

// unrotated reports, without listing the directory (a listing was a tenth
// of an act's CPU), that no log rotated since the last sync, with the
// names of the newest. Badger numbers a new log one past the newest (the
// value log's maxFid+1, the memtables' nextMemFid), so a rotation leaves
// the file one past the newest the last sync saw; a memtable's log is
// deleted only after its table was written and synced, and only after
// every older one's. Any doubt falls back to the listing.
func (l *logState) unrotated(dir string) ([]string, bool) {
	if !l.listed {
		return nil, false
	}
	var names []string
	for _, ext := range logExts {
		fid, ok := l.newest[ext]
		if !ok {
			return nil, false // none yet: a first one may have appeared
		}
		if _, err := os.Lstat(filepath.Join(dir, fmt.Sprintf(logNames[ext], fid+1))); !os.IsNotExist(err) {
			return nil, false
		}
		names = append(names, fmt.Sprintf(logNames[ext], fid))
	}
	return names, true
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
