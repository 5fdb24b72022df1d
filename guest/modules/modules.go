// Package modules holds a prog's source set: the main file and the modules
// it imports, transitively. The host gathers the set (Load), encodes it as
// one byte string (Encode), and that string is the prog's source: its
// SHA-256 is the program hash, so every imported source is bound into the
// hash, and the store keeps exactly the set a run started with. The
// compiler decodes it (Decode) and orders the modules (Order) by the same
// resolution rule (Resolve) the host used, so nothing depends on a
// filesystem inside the sandbox.
//
// A prog with no imports is its plain source, as before modules: its hash,
// and every checkpoint in flight, stay the same.
package modules

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/runehost/runehost/guest/syntax"
)

// Magic opens an encoded source set. A Rune source cannot begin with it:
// '#' is not a character of the language outside comments and strings.
const Magic = "#rune modules 1\n"

// MaxModules bounds the files of one source set, the main file included.
const MaxModules = 256

// StdPrefix starts the name of a module of the embedded standard library.
const StdPrefix = "std/"

// Set is a source set: file name to source. Main names the main file; the
// other names are those the imports resolve to (Resolve).
type Set struct {
	Main  string
	Files map[string][]byte
}

// IsSet reports whether src is an encoded source set rather than a plain source.
func IsSet(src []byte) bool { return bytes.HasPrefix(src, []byte(Magic)) }

// Encode returns the canonical encoding of s: the magic line, then for each
// file "NAMELEN SRCLEN\n" NAME SRC "\n", the main file first and the others
// in name order. Equal sets encode to equal bytes, so to equal hashes.
func Encode(s *Set) []byte {
	names := make([]string, 0, len(s.Files))
	for n := range s.Files {
		if n != s.Main {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	names = append([]string{s.Main}, names...)
	var b bytes.Buffer
	b.WriteString(Magic)
	for _, n := range names {
		fmt.Fprintf(&b, "%d %d\n%s", len(n), len(s.Files[n]), n)
		b.Write(s.Files[n])
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Decode parses an encoded source set. Only the canonical encoding is
// accepted, so one set has one hash.
func Decode(src []byte) (*Set, error) {
	if len(src) > syntax.MaxSource {
		return nil, fmt.Errorf("source set is %d bytes, more than the limit of %d", len(src), syntax.MaxSource)
	}
	if !IsSet(src) {
		return nil, fmt.Errorf("not a source set")
	}
	rest := src[len(Magic):]
	s := &Set{Files: make(map[string][]byte)}
	var prev string
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("source set: truncated entry header")
		}
		var nlen, slen int
		head := string(rest[:nl])
		a, b, ok := strings.Cut(head, " ")
		var err1, err2 error
		nlen, err1 = strconv.Atoi(a)
		slen, err2 = strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || nlen <= 0 || slen < 0 || head != strconv.Itoa(nlen)+" "+strconv.Itoa(slen) {
			return nil, fmt.Errorf("source set: malformed entry header %q", head)
		}
		rest = rest[nl+1:]
		if nlen+slen+1 > len(rest) || rest[nlen+slen] != '\n' {
			return nil, fmt.Errorf("source set: truncated entry")
		}
		name := string(rest[:nlen])
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("source set: %v", err)
		}
		if s.Main == "" {
			s.Main = name
		} else if name <= prev && prev != s.Main || name == s.Main {
			return nil, fmt.Errorf("source set: %q out of order", name)
		}
		if len(s.Files) >= MaxModules {
			return nil, fmt.Errorf("source set: more than %d files", MaxModules)
		}
		if _, dup := s.Files[name]; dup {
			return nil, fmt.Errorf("source set: %q twice", name)
		}
		s.Files[name] = rest[nlen : nlen+slen]
		prev = name
		rest = rest[nlen+slen+1:]
	}
	if s.Main == "" {
		return nil, fmt.Errorf("source set: no main file")
	}
	return s, nil
}

// checkName accepts a clean relative slash path, as Resolve makes.
func checkName(n string) error {
	if n == "" || strings.ContainsAny(n, "\n\\\x00") || path.IsAbs(n) || path.Clean(n) != n {
		return fmt.Errorf("bad file name %q", n)
	}
	return nil
}

// CheckPath says what is wrong with an import path, or nil: it must be a
// relative slash path ending in ".rune".
func CheckPath(p string) error {
	switch {
	case strings.ContainsAny(p, "\\\x00\n"):
		return fmt.Errorf("import path %q: use / and no control characters", p)
	case path.IsAbs(p):
		return fmt.Errorf("import path %q is absolute; paths are relative to the importing file or the library path", p)
	case !strings.HasSuffix(p, ".rune"):
		return fmt.Errorf("import path %q does not end in .rune", p)
	}
	return nil
}

// Candidates are the names an import of p from the file named from may
// resolve to, in the order tried: "std/..." is the standard library only;
// any other path is first relative to the importing file, then p itself
// (the standard library or a directory of the library path). The two may
// be the same name: the host looks for the first next to the importing
// file, for the second along the library path.
func Candidates(from, p string) []string {
	if c := path.Clean(p); strings.HasPrefix(c, StdPrefix) {
		return []string{c}
	}
	return []string{path.Join(path.Dir(from), p), path.Clean(p)}
}

// Resolve returns the name an import of p from the file named from resolves
// to in a set holding the names has reports, or "" if none.
func Resolve(from, p string, has func(string) bool) string {
	for _, c := range Candidates(from, p) {
		if has(c) {
			return c
		}
	}
	return ""
}

// Imports returns the top-level import statements of f.
func Imports(f *syntax.File) []*syntax.ImportStmt {
	var out []*syntax.ImportStmt
	for _, s := range f.Body.Stmts {
		if im, ok := s.(*syntax.ImportStmt); ok {
			out = append(out, im)
		}
	}
	return out
}

// fileName is how errors name a file: "" for the main file.
func fileName(s *Set, name string) string {
	if name == s.Main {
		return ""
	}
	return name
}

// Order parses every file of s, checks that each import resolves in s and
// that imports form no cycle, and returns the files in initialisation order:
// every module after the modules it imports, the main file last. Errors are
// *syntax.Error naming the file (none for the main file) and the import.
// Files no import reaches are ignored.
func Order(s *Set) (names []string, files map[string]*syntax.File, err error) {
	files = make(map[string]*syntax.File)
	has := func(n string) bool { _, ok := s.Files[n]; return ok }
	const (
		visiting = 1
		done     = 2
	)
	mark := make(map[string]int)
	var stack []string
	var visit func(name string) error
	visit = func(name string) error {
		mark[name] = visiting
		stack = append(stack, name)
		f, err := syntax.Parse(s.Files[name])
		if err != nil {
			if se, ok := err.(*syntax.Error); ok {
				se.File = fileName(s, name)
			}
			return err
		}
		files[name] = f
		for _, im := range Imports(f) {
			at := func(format string, args ...any) error {
				return &syntax.Error{File: fileName(s, name), Pos: im.Pos, Msg: fmt.Sprintf(format, args...)}
			}
			if err := CheckPath(im.Path); err != nil {
				return at("%v", err)
			}
			to := Resolve(name, im.Path, has)
			if to == "" {
				return at("module %q is not in the source set", im.Path)
			}
			switch mark[to] {
			case visiting:
				i := slices.Index(stack, to)
				return at("import cycle: %s", strings.Join(append(slices.Clone(stack[i:]), to), " -> "))
			case 0:
				if err := visit(to); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		mark[name] = done
		names = append(names, name)
		return nil
	}
	if !has(s.Main) {
		return nil, nil, fmt.Errorf("source set: no main file")
	}
	if err := visit(s.Main); err != nil {
		return nil, nil, err
	}
	return names, files, nil
}
