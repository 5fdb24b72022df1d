// repair.go holds what Open clears before Badger opens a store: traces a
// killed process can leave that Badger cannot open, though they hold nothing.

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// removeEmptyLogs deletes log files of length zero. Badger creates a log
// file and then sizes it, and deletes one by truncating it to nothing and
// then unlinking it; a process killed in between leaves an empty file, on
// which Badger's open fails ("Create a new file"). A log starts with a
// header written right after it is sized, so an empty one never held a
// record. It holds Badger's directory lock meanwhile: a live process's
// fresh log is empty for an instant too.
func removeEmptyLogs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	defer d.Close() // releases the lock
	if syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil // in use: Badger's open says by whom
	}
	files, err := logFiles(dir)
	if err != nil {
		return err
	}
	for _, fs := range files {
		for _, f := range fs {
			path := filepath.Join(dir, f.name)
			if fi, err := os.Lstat(path); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
				continue
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("store %s: empty log %s: %w", dir, f.name, err)
			}
		}
	}
	return nil
}
