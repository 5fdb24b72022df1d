// Package confine decides whether a host path stays inside a root once every
// symlink on the way is resolved: the check behind fs grants (tool mounts
// are served through os.Root instead).
package confine

import (
	"errors"
	"fmt"
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
	if len(p) > MaxPath {
		return "", fmt.Errorf("path of %d bytes: at most %d", len(p), MaxPath)
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	// Walk up to the deepest ancestor that exists, then resolve it once.
	var rest []string
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", err // a symlink to nowhere
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...), nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// MaxPath bounds a path to resolve.
const MaxPath = 4096

// Within reports whether resolved path p is root or under it; both must be
// resolved already.
func Within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}
