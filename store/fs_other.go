//go:build !linux

// fs_other.go holds the file system calls the store needs where Linux's are
// missing: no free-space reserve, and a file's contents known by size and
// modification time only.

package store

import (
	"errors"
	"os"
)

func lockFile(*os.File) error { return nil } // Badger's own lock still holds

func freeSpace(string) (uint64, error) { return 0, errors.ErrUnsupported }

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{Size: fi.Size(), Ctime: fi.ModTime().UnixNano(), Allocated: fi.Size()}
}

// ownLogSync is false: elsewhere a file's sync may not reach what a
// mapping of it wrote, and Badger's DB.Sync flushes its logs (sync.go).
const ownLogSync = false

func datasync(f *os.File) error { return f.Sync() }
