// Package fs holds the file acts: fs.read, fs.write and fs.list. A grant
// names a directory (fs.read:./data, made absolute when granted); an act's
// path, relative to the host's working directory or absolute, is resolved
// with every symlink before it is checked against the grants, and the file is
// then opened through os.Root at the granted directory, so that no path, `..`
// or symlink, checked or swapped in later, leads out of it. Only regular
// files (and directories, to list) on ordinary file systems are opened
// (internal/fsallow: one fstatfs per open), never blocking on a pipe; no
// grant may cover /proc, /sys, /dev or the host's own directories (Place),
// nor a directory holding a mount of another file system (CheckMounts).
package fs

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runehost/runehost/acts/args"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/confine"
)

// The tags.
const (
	Read  = "fs.read"
	Write = "fs.write"
	List  = "fs.list"
)

// Limits of the file acts.
const (
	MaxFile    = 8 << 20 // bytes read or written by one act
	MaxEntries = 10_000  // entries one fs.list returns
)

// Adapter is one file act.
type Adapter struct {
	Tag  string
	Base string // what a relative path is relative to; the working directory when ""
	// Places are the host's own directories no grant may cover (the store,
	// the compilation cache), besides SystemPlaces.
	Places []Place
}

// New returns the adapters of the three tags, refusing grants over places.
func New(places ...Place) map[string]host.Adapter {
	return map[string]host.Adapter{Read: &Adapter{Tag: Read, Places: places}, Write: &Adapter{Tag: Write, Places: places}, List: &Adapter{Tag: List, Places: places}}
}

// Limits declares the file acts' limits.
func (a *Adapter) Limits() host.Limits {
	return host.Limits{Args: MaxFile + 4096, Reply: MaxFile + 4096, Time: 30 * time.Second}
}

// SplitTarget splits a grant target HOST[=GUEST]: the host directory and
// the path a tool sees it at ("" when not given).
func SplitTarget(target string) (hostDir, guest string) {
	hostDir, guest, _ = strings.Cut(target, "=")
	return hostDir, guest
}

// CheckGrant makes a granted directory absolute and clean, and checks the
// guest path a tool would see it at.
func (a *Adapter) CheckGrant(tag, target string) (string, error) {
	dir, guest := SplitTarget(target)
	if dir == "" {
		return "", fmt.Errorf("want a directory: %s:DIR or %s:DIR=/GUEST", tag, tag)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	// The grant names the directory as it is now, symlinks resolved: if it
	// is later pointed elsewhere, acts under it are refused.
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", err
	}
	if strings.ContainsAny(abs, "=\x00\n") {
		return "", fmt.Errorf("%q: a granted directory cannot have = in its path", abs)
	}
	if err := CheckPlace(abs, a.Places); err != nil {
		return "", err
	}
	if err := CheckMounts(abs); err != nil {
		return "", err
	}
	if guest != "" {
		if !strings.HasPrefix(guest, "/") || filepath.Clean(guest) != guest {
			return "", fmt.Errorf("guest path %q: want a clean absolute path", guest)
		}
		return abs + "=" + guest, nil
	}
	return abs, nil
}

type fsArgs struct {
	path    string
	content []byte
	append  bool
	base64  bool // content is, or is wanted, in base64
}

func (a *Adapter) args(op *host.Operation) (*fsArgs, error) {
	m, err := args.Map(op.Args, a.Tag, "{path}")
	if err != nil {
		return nil, err
	}
	p, _ := m.Get("path")
	out := &fsArgs{}
	var ok bool
	if out.path, ok = p.(string); !ok || out.path == "" {
		return nil, args.Errorf("%s: path must be a non-empty string", a.Tag)
	}
	b64, _ := m.Get("base64")
	out.base64 = b64 == true
	if a.Tag == Write {
		c, _ := m.Get("content")
		s, ok := c.(string)
		if !ok {
			return nil, args.Errorf("fs.write: content must be a string (base64 with base64: true)")
		}
		out.content = []byte(s)
		if out.base64 {
			if out.content, err = base64.StdEncoding.DecodeString(s); err != nil {
				return nil, args.Errorf("fs.write: content is not base64: %v", err)
			}
		}
		ap, _ := m.Get("append")
		out.append = ap == true
	}
	return out, nil
}

// grantRoot is a granted directory, which must still be what it was when
// granted: resolving it again must give itself.
func grantRoot(dir string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if root != filepath.Clean(dir) {
		return "", fmt.Errorf("the granted directory now resolves elsewhere")
	}
	return root, nil
}

// MaxPath bounds an act's path.
const MaxPath = 4096

// resolved returns the act's path, absolute with symlinks resolved.
func (a *Adapter) resolved(p string) (string, error) {
	if len(p) > MaxPath {
		return "", fmt.Errorf("a path of %d bytes (at most %d)", len(p), MaxPath)
	}
	if !filepath.IsAbs(p) {
		base := a.Base
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return "", err
			}
			base = wd
		}
		p = filepath.Join(base, p)
	}
	return confine.Resolve(p)
}

// Authorize returns the grant whose directory holds the act's path.
func (a *Adapter) Authorize(_ context.Context, op *host.Operation, grants []host.Grant) (string, error) {
	ar, err := a.args(op)
	if err != nil {
		return "", err
	}
	real, err := a.resolved(ar.path)
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", a.Tag, ar.path, err)
	}
	// A grant over a place (made before the rule, or a directory that has
	// become one) allows nothing, and the refusal says why.
	var refused error
	for _, g := range grants {
		dir, _ := SplitTarget(g.Target())
		root, err := grantRoot(dir)
		if err != nil || !confine.Within(root, real) {
			continue
		}
		if err := CheckPlace(root, a.Places); err != nil {
			refused = fmt.Errorf("%s %s: the grant %s is refused: %w", a.Tag, ar.path, g.Statement, err)
			continue
		}
		if err := CheckPlace(real, a.Places); err != nil {
			return "", fmt.Errorf("%s %s: %w", a.Tag, ar.path, err)
		}
		return g.Statement, nil
	}
	if refused != nil {
		return "", refused
	}
	return "", fmt.Errorf("%s %s: the path is outside every granted directory", a.Tag, ar.path)
}

// Do performs the act through os.Root at the granted directory.
func (a *Adapter) Do(_ context.Context, op *host.Operation) (any, error) {
	ar, err := a.args(op)
	if err != nil {
		return nil, err
	}
	if op.Attempt == nil {
		return nil, errors.New("no attempt: the engine did not authorize this act")
	}
	dir, _ := SplitTarget(strings.TrimPrefix(op.Attempt.Grant, a.Tag+":"))
	root, err := grantRoot(dir)
	if err == nil {
		err = CheckPlace(root, a.Places) // again: the grant may predate the rule
	}
	if err != nil {
		return nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("%s %s: %v", a.Tag, ar.path, err)}
	}
	real, err := a.resolved(ar.path)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || !confine.Within(root, real) {
		return nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("%s %s: outside the granted directory", a.Tag, ar.path)}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	switch a.Tag {
	case Read:
		f, err := openChecked(r, rel, os.O_RDONLY, 0, false)
		if err != nil {
			return nil, clean(err, root)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
		if err != nil {
			return nil, clean(err, root)
		}
		if len(b) > MaxFile {
			return nil, &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("fs.read %s: over %d bytes", ar.path, MaxFile)}
		}
		if ar.base64 {
			return base64.StdEncoding.EncodeToString(b), nil
		}
		if !utf8.Valid(b) {
			return nil, args.Errorf("fs.read %s: not UTF-8 text (read it with base64: true)", ar.path)
		}
		return string(b), nil
	case List:
		f, err := openChecked(r, rel, os.O_RDONLY, 0, true)
		if err != nil {
			return nil, clean(err, root)
		}
		defer f.Close()
		entries, err := f.ReadDir(MaxEntries + 1)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, clean(err, root)
		}
		if len(entries) > MaxEntries {
			return nil, &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("fs.list %s: over %d entries", ar.path, MaxEntries)}
		}
		out := make([]any, 0, len(entries))
		for _, e := range entries {
			m := &checkpoint.Map{}
			m.Set("name", e.Name())
			m.Set("dir", e.IsDir())
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
				m.Set("size", info.Size())
			}
			out = append(out, m)
		}
		return out, nil
	default:
		if len(ar.content) > MaxFile {
			return nil, &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("fs.write %s: over %d bytes", ar.path, MaxFile)}
		}
		// Truncated only once known to be a regular file.
		flag := os.O_WRONLY | os.O_CREATE
		if ar.append {
			flag |= os.O_APPEND
		}
		f, err := openChecked(r, rel, flag, 0o644, false)
		if err != nil {
			return nil, clean(err, root)
		}
		if !ar.append {
			if err := f.Truncate(0); err != nil {
				f.Close()
				return nil, clean(err, root)
			}
		}
		n, err := f.Write(ar.content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, clean(err, root)
		}
		m := &checkpoint.Map{}
		m.Set("bytes", int64(n))
		return m, nil
	}
}

// clean turns an error into one the prog may see: no host paths outside
// the granted directory.
func clean(err error, root string) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		kind := "failed"
		if errors.Is(err, iofs.ErrNotExist) {
			kind = "not_found"
		}
		if strings.Contains(pe.Err.Error(), "escapes") || errors.Is(err, ErrNotRegular) || errors.Is(err, ErrPlace) {
			kind = "denied"
		}
		return &checkpoint.Error{Kind: kind, Msg: fmt.Sprintf("%s %s: %v", pe.Op, strings.TrimPrefix(pe.Path, root), pe.Err)}
	}
	return err
}

// Lookup reconciles an attempt cut short by a crash: reading, listing and
// writing a whole file can be done again with the same effect, so the
// attempt is reopened; an append cannot, and stays unknown.
func (a *Adapter) Lookup(_ context.Context, op *host.Operation) (any, bool, error) {
	ar, err := a.args(op)
	if err != nil {
		return nil, false, err
	}
	if ar.append {
		return nil, false, errors.New("an append cannot be repeated safely")
	}
	return nil, false, nil
}

// Suggest names the directory to grant for op: the one it lists, or the
// one that holds the file it reads or writes, as the prog named it (the
// denial reaches the prog, which learns nothing of the host from it: a
// relative path stays relative, to where runehost runs).
func (a *Adapter) Suggest(op *host.Operation) string {
	ar, err := a.args(op)
	if err != nil {
		return ""
	}
	p, err := a.resolved(ar.path)
	if err != nil {
		return ""
	}
	named := filepath.Clean(ar.path)
	if a.Tag != List {
		p, named = filepath.Dir(p), filepath.Dir(named)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return "" // a grant of it would be refused
	}
	return a.Tag + ":" + named
}

var (
	_ host.Reconciler   = (*Adapter)(nil)
	_ host.Authorizer   = (*Adapter)(nil)
	_ host.GrantChecker = (*Adapter)(nil)
	_ host.Limited      = (*Adapter)(nil)
	_ host.Suggester    = (*Adapter)(nil)
)
