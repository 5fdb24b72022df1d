// Package confine decides whether a host path stays inside a root once every
// symlink on the way is resolved: the check behind fs grants and tool mounts.
package confine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Resolve returns the host path p names, absolute, with every symlink
// resolved. A path that does not exist yet resolves through its deepest
// existing ancestor; a dangling symlink does not resolve (where a write
// through it would land is not knowable safely).
func Resolve(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return real, err
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", err
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	dir, err := Resolve(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(p)), nil
}

// Within reports whether resolved path p is root or under it; both must be
// resolved already.
func Within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}
