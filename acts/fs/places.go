// places.go holds the places no grant may cover: the kernel's views of
// processes, devices and drivers, and the host's own directories (the store,
// the compilation cache), nor any directory that holds one of them; nor a
// directory that holds a mount of a file system that is not an ordinary one
// (a bind mount of /proc), wherever it is.

package fs

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/runehost/runehost/internal/confine"
	"github.com/runehost/runehost/internal/fsallow"
)

// Place is a directory no grant may cover: neither it, nor a directory
// inside it, nor one that holds it.
type Place struct {
	Dir  string // as configured; resolved at each check
	What string // what it is, for the refusal
}

// SystemPlaces are the kernel's: every host has them.
var SystemPlaces = []Place{
	{"/proc", "the kernel's view of processes (their environment and command lines hold the host's secrets)"},
	{"/sys", "the kernel's devices and drivers"},
	{"/dev", "the devices"},
}

// Errors of the file acts.
var (
	// ErrPlace is a grant over a place no grant may cover.
	ErrPlace = errors.New("a grant may not cover this place")
	// ErrNotRegular is a path that names something other than a regular
	// file (or, for fs.list, a directory): a pipe, a socket, a device.
	ErrNotRegular = errors.New("not a regular file or directory")
)

// PlaceError is a directory refused because of a place.
type PlaceError struct {
	Dir   string // the refused directory, resolved
	Place string // the place, resolved
	What  string // what the place is
	// How the directory covers it: "is", "is inside" or "holds".
	How string
}

func (e *PlaceError) Error() string {
	if e.How == "is" {
		return fmt.Sprintf("%s is %s: no grant may cover it", e.Dir, e.What)
	}
	return fmt.Sprintf("%s %s %s, %s: no grant may cover it", e.Dir, e.How, e.Place, e.What)
}

// Unwrap makes a PlaceError an ErrPlace.
func (e *PlaceError) Unwrap() error { return ErrPlace }

// CheckPlace refuses a directory that is, is inside or holds one of the
// places (SystemPlaces always among them). Both sides are resolved first,
// symlinks followed: a link to /proc is /proc.
func CheckPlace(dir string, places []Place) error {
	real, err := confine.Resolve(dir)
	if err != nil {
		return err
	}
	for _, ps := range [][]Place{SystemPlaces, places} {
		for _, p := range ps {
			if p.Dir == "" {
				continue
			}
			abs, err := filepath.Abs(p.Dir)
			if err != nil {
				continue
			}
			pr, err := confine.Resolve(abs)
			if err != nil {
				pr = filepath.Clean(abs) // a place that cannot be resolved is still itself
			}
			switch {
			case real == pr:
				return &PlaceError{Dir: real, Place: pr, What: p.What, How: "is"}
			case confine.Within(pr, real):
				return &PlaceError{Dir: real, Place: pr, What: p.What, How: "is inside"}
			case confine.Within(real, pr):
				return &PlaceError{Dir: real, Place: pr, What: p.What, How: "holds"}
			}
		}
	}
	return nil
}

// CheckMounts refuses a directory that is on, is, or holds anywhere below
// it a mount of a file system that is not an ordinary one (fsallow): a
// bind mount of /proc inside a directory makes it /proc's holder as surely
// as / is. The refusal names the mount point and its file system.
func CheckMounts(dir string) error {
	if err := fsallow.CheckTree(dir); err != nil {
		return fmt.Errorf("%w: %w", ErrPlace, err)
	}
	return nil
}
