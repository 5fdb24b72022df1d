//go:build crashtest

// synchook_crashtest.go, in crash-test builds only (go build -tags
// crashtest), reports every completed sync to the crash harness
// (cmd/crashtest) and waits for its answer, so that the harness can copy
// what is durable at that instant and cut the power at the next one.

package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
)

// crashBreak, set with -ldflags -X, builds a store that is broken on
// purpose, for the harness to prove that it notices: "nosync" syncs nothing
// (and so reports nothing); "rotation" syncs only what Badger's DB.Sync
// reaches, as the store did before syncLogs; "vlog" never syncs the newest
// value log, as if no commit had written to it.
var crashBreak string

// syncEnv names the two file descriptors, "W,R", the harness gives the
// process: it writes a line to W after each sync and reads one byte from R
// before going on. Unset, syncs are not reported.
const syncEnv = "RUNEHOST_CRASH_SYNC"

var harness struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File
	r    *bufio.Reader
}

func (s *badgerStore) sync() error {
	var names []string
	var err error
	switch crashBreak {
	case "nosync":
		return nil
	case "rotation":
		if err = s.db.Sync(); err == nil && s.dir != "" {
			names, err = newestLogs(s.dir)
		}
	case "vlog":
		s.logs.mu.Lock()
		s.logs.vlog = s.valueWrites.Load() // nothing written since the last sync, it believes
		s.logs.mu.Unlock()
		names, err = s.syncLogs()
	default:
		names, err = s.syncLogs()
	}
	if err != nil {
		return err
	}
	report(names)
	return nil
}

// newestLogs names the log files DB.Sync flushes: the newest of each kind.
func newestLogs(dir string) ([]string, error) {
	files, err := logFiles(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ext := range logExts {
		if fs := files[ext]; len(fs) > 0 {
			names = append(names, fs[len(fs)-1].name)
		}
	}
	return names, nil
}

// report tells the harness that a sync completed and which log files it
// flushed, and waits for the harness to let the process go on.
func report(names []string) {
	harness.once.Do(func() {
		w, r, ok := strings.Cut(os.Getenv(syncEnv), ",")
		wfd, err1 := strconv.Atoi(w)
		rfd, err2 := strconv.Atoi(r)
		if ok && err1 == nil && err2 == nil {
			harness.w = os.NewFile(uintptr(wfd), "crash-sync-report")
			harness.r = bufio.NewReader(os.NewFile(uintptr(rfd), "crash-sync-answer"))
		}
	})
	if harness.w == nil {
		return
	}
	harness.mu.Lock()
	defer harness.mu.Unlock()
	if _, err := harness.w.WriteString("sync " + strings.Join(names, " ") + "\n"); err != nil {
		return // the harness is gone: nothing to wait for
	}
	harness.r.ReadByte()
}

// testOptions makes value-log files small, so that they rotate every few
// large records and the harness cuts the power around rotations too.
var testOptions = func(o badger.Options) badger.Options {
	return o.WithValueLogFileSize(1 << 20)
}
