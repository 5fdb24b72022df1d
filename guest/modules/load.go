// load.go holds Load: the host reads a prog and the modules it imports.

package modules

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/runehost/runehost/guest/syntax"
)

// Env names the environment variable holding the library path: directories
// searched, in order, for an import not found next to the importing file.
const Env = "RUNEHOST_PATH"

//go:embed std/*.rune
var stdFS embed.FS

// Std returns the source of the standard library module name ("std/...").
func Std(name string) ([]byte, bool) {
	b, err := stdFS.ReadFile(name)
	return b, err == nil
}

// LibPath is the library path of the environment (RUNEHOST_PATH, split
// like PATH); empty entries are dropped.
func LibPath() []string {
	var out []string
	for _, d := range filepath.SplitList(os.Getenv(Env)) {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// loader is the state of one Load.
type loader struct {
	lib   []string
	set   *Set
	where map[string]string // name -> the file read for it ("std:" + name for the standard library)
	root  map[string]string // name -> the directory its relative imports start from ("" for the standard library)
	chose map[[2]string]string
}

// Load reads the prog in file and, transitively, every module it imports,
// resolved relative to the importing file, then along lib, and "std/..."
// from the embedded standard library. It returns the prog's source: the
// file as it is when it imports nothing, else the encoded source set.
// Errors are *syntax.Error at the import (file:line:col, the file unnamed
// when it is the main one): a module not found, an import cycle.
func Load(file string, lib []string) ([]byte, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	main := filepath.Base(file)
	if checkName(main) != nil || strings.HasPrefix(main, ".") {
		main = "main.rune"
	}
	l := &loader{lib: lib, set: &Set{Main: main, Files: map[string][]byte{main: src}},
		where: map[string]string{main: filepath.Join(filepath.Dir(file), filepath.Base(file))}, root: map[string]string{main: filepath.Dir(file)},
		chose: make(map[[2]string]string)}
	queue := []string{main}
	imports := false
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		f, err := syntax.Parse(l.set.Files[name])
		if err != nil {
			if name == main && len(l.set.Files) == 1 {
				return src, nil // the compiler reports it, as for any prog
			}
			var se *syntax.Error
			if errors.As(err, &se) {
				se.File = fileName(l.set, name)
			}
			return nil, err
		}
		for _, im := range Imports(f) {
			imports = true
			at := func(format string, args ...any) error {
				return &syntax.Error{File: fileName(l.set, name), Pos: im.Pos, Msg: fmt.Sprintf(format, args...)}
			}
			if err := CheckPath(im.Path); err != nil {
				return nil, at("%v", err)
			}
			to, fresh, err := l.find(name, im.Path)
			if err != nil {
				return nil, at("%v", err)
			}
			if len(l.set.Files) > MaxModules {
				return nil, at("more than %d files in the source set", MaxModules)
			}
			l.chose[[2]string{name, im.Path}] = to
			if fresh {
				queue = append(queue, to)
			}
		}
	}
	if !imports {
		return src, nil
	}
	// The compiler resolves by name alone: it must choose as this did.
	has := func(n string) bool { _, ok := l.set.Files[n]; return ok }
	for k, to := range l.chose {
		if got := Resolve(k[0], k[1], has); got != to {
			return nil, fmt.Errorf("%s: import %q is ambiguous: both %s and %s are in the source set", l.where[k[0]], k[1], l.where[got], l.where[to])
		}
	}
	if _, _, err := Order(l.set); err != nil {
		return nil, err
	}
	enc := Encode(l.set)
	if len(enc) > syntax.MaxSource {
		return nil, fmt.Errorf("%s: the prog and its imports are %d bytes, more than the limit of %d", file, len(enc), syntax.MaxSource)
	}
	return enc, nil
}

// find resolves an import of p from the file named from, reading the module
// if it is not yet in the set (fresh).
func (l *loader) find(from, p string) (name string, fresh bool, err error) {
	var tried []string
	fromStd := l.root[from] == ""
	for i, c := range Candidates(from, p) {
		var where, root string
		var src []byte
		switch {
		case strings.HasPrefix(c, StdPrefix) && (fromStd || i == 0 && strings.HasPrefix(path.Clean(p), StdPrefix)):
			// "std/...", or a relative import made by a standard module.
			tried = append(tried, "the standard library's "+c)
			if src, _ = Std(c); src == nil {
				continue
			}
			where = "std:" + c
		case strings.HasPrefix(c, StdPrefix):
			return "", false, fmt.Errorf("import path %q names a file under std/, which is the standard library's", p)
		case i == 0:
			root = l.root[from]
			where = filepath.Join(root, filepath.FromSlash(c))
			tried = append(tried, where)
			if src, err = readModule(where); err != nil || src == nil {
				if err != nil {
					return "", false, err
				}
				continue
			}
		default:
			for _, d := range l.lib {
				w := filepath.Join(d, filepath.FromSlash(c))
				tried = append(tried, w)
				if src, err = readModule(w); err != nil {
					return "", false, err
				}
				if src != nil {
					where, root = w, d
					break
				}
			}
			if src == nil {
				continue
			}
		}
		if prev, ok := l.where[c]; ok {
			if prev != where {
				return "", false, fmt.Errorf("module %s is both %s and %s", c, prev, where)
			}
			return c, false, nil
		}
		l.set.Files[c], l.where[c], l.root[c] = src, where, root
		return c, true, nil
	}
	hint := ""
	if len(l.lib) == 0 && !strings.HasPrefix(path.Clean(p), StdPrefix) {
		hint = " (no library path: set " + Env + ")"
	}
	return "", false, fmt.Errorf("module %q not found: tried %s%s", p, strings.Join(tried, ", "), hint)
}

// readModule reads a module file; a missing one is (nil, nil).
func readModule(file string) ([]byte, error) {
	st, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	if st.Size() > syntax.MaxSource {
		return nil, fmt.Errorf("%s is %d bytes, more than the limit of %d", file, st.Size(), syntax.MaxSource)
	}
	b, err := os.ReadFile(file)
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}
