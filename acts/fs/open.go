// open.go holds how the file acts open a host file: never blocking (a pipe
// opened for reading waits for a writer), and only a regular file or a
// directory as the opened file itself says (fstat), never as its name said
// a moment before, and only on an ordinary file system (fsallow: a disk's or
// memory's, never the kernel's views such as /proc, whatever path or mount
// led there).

package fs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/runehost/runehost/internal/fsallow"
)

// openChecked opens rel in r without blocking, and returns it only if it is
// a regular file (a directory when dir) on an ordinary file system.
func openChecked(r *os.Root, rel string, flag int, perm os.FileMode, dir bool) (*os.File, error) {
	flag |= openFlags
	if dir {
		flag |= dirFlag
	}
	if flag&os.O_CREATE != 0 {
		// A file made is made in its directory: checked before anything is.
		d, err := r.OpenFile(filepath.Dir(rel), os.O_RDONLY|openFlags|dirFlag, 0)
		if err != nil {
			return nil, err
		}
		err = ordinary(d)
		d.Close()
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: rel, Err: err}
		}
	}
	f, err := r.OpenFile(rel, flag, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.ENOTDIR) && dir {
			// A socket, a pipe without a reader (for writing) or, for a
			// listing, not a directory: say what it is (for the message
			// only; nothing was opened).
			what := "not a directory"
			if fi, lerr := r.Stat(rel); lerr == nil {
				what = kindOf(fi.Mode())
			}
			return nil, &os.PathError{Op: "open", Path: rel, Err: fmt.Errorf("%w: %s", ErrNotRegular, what)}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		switch {
		case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
			err = fmt.Errorf("%w: %s", ErrNotRegular, kindOf(fi.Mode()))
		default:
			err = ordinary(f)
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return f, nil
}

// CheckOpened refuses an opened file that is not a regular file or is not
// on an ordinary file system (/proc, /sys...): for the other acts that open
// host files (a tool's module).
func CheckOpened(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s", ErrNotRegular, kindOf(fi.Mode()))
	}
	return ordinary(f)
}

// ordinary refuses an opened file on a file system outside fsallow's
// allow-list (one fstatfs).
func ordinary(f *os.File) error {
	if err := fsallow.Check(f); err != nil {
		return fmt.Errorf("%w: %w", ErrPlace, err)
	}
	return nil
}

// OpenRegular opens a host file for reading without blocking, and returns
// it only if it is a regular file on an ordinary file system.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	if err := CheckOpened(f); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}

// kindOf names a file's type for an error.
func kindOf(m iofs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&iofs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&iofs.ModeSocket != 0:
		return "a socket"
	case m&iofs.ModeCharDevice != 0:
		return "a character device"
	case m&iofs.ModeDevice != 0:
		return "a block device"
	case m&iofs.ModeSymlink != 0:
		return "a symlink"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}
