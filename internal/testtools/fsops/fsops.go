// Package fsops runs a script of file operations and prints one line per
// operation, naming the errno of each failure: the same script runs natively
// on Linux and inside a tool (testdata/tools/scribble), so a test can hold
// the tool sandbox's file semantics, errnos included, to the kernel's.
package fsops

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// names are the errnos a script can tell apart, by their POSIX names.
var names = map[syscall.Errno]string{
	syscall.EACCES: "EACCES", syscall.EBADF: "EBADF", syscall.EEXIST: "EEXIST", syscall.EINVAL: "EINVAL",
	syscall.EIO: "EIO", syscall.EISDIR: "EISDIR", syscall.ELOOP: "ELOOP", syscall.ENAMETOOLONG: "ENAMETOOLONG",
	syscall.ENOENT: "ENOENT", syscall.ENOSYS: "ENOSYS", syscall.ENOTDIR: "ENOTDIR", syscall.ENOTEMPTY: "ENOTEMPTY",
	syscall.EPERM: "EPERM", syscall.EROFS: "EROFS", syscall.EXDEV: "EXDEV", syscall.EBUSY: "EBUSY",
	syscall.ENOTSUP: "ENOTSUP", syscall.ENXIO: "ENXIO", syscall.EMLINK: "EMLINK",
}

// Errno names err's errno, or says it has none.
func Errno(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return "no errno: " + err.Error()
	}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", uint(e))
}

// Run runs ops, each OP:PATH[:ARG], with every PATH taken under base, and
// writes "ok OP PATH[ RESULT]" or "denied OP PATH: ERRNO (error)" for each.
//
// OP is one of read, write (create or truncate), append, trunc (a read-only
// open with O_TRUNC), create (a read-only open with O_CREATE|O_EXCL), mkdir,
// rmdir, unlink, remove, rename (to ARG, under base), link (ARG is the new
// name), symlink (PATH is the link, ARG its target, kept as given), readlink,
// stat, lstat, readdir, relist (list, rewind, list again), chtimes, wait
// (until PATH exists).
func Run(w io.Writer, base string, ops []string) {
	for _, op := range ops {
		parts := strings.SplitN(op, ":", 3)
		if len(parts) < 2 {
			fmt.Fprintln(w, "bad", op)
			continue
		}
		name, p, arg := parts[0], parts[1], ""
		if len(parts) == 3 {
			arg = parts[2]
		}
		full := under(base, p)
		res, err := do(name, full, arg, base)
		switch {
		case err != nil:
			fmt.Fprintf(w, "denied %s %s: %s (%v)\n", name, p, Errno(err), err)
		case res != "":
			fmt.Fprintf(w, "ok %s %s %s\n", name, p, res)
		default:
			fmt.Fprintf(w, "ok %s %s\n", name, p)
		}
	}
}

// under joins p to base, keeping a trailing slash (it changes what an
// operation means) and an absolute p as it is.
func under(base, p string) string {
	if strings.HasPrefix(p, "/") || base == "" {
		return p
	}
	full := path.Join(base, p)
	if strings.HasSuffix(p, "/") {
		full += "/"
	}
	return full
}

func do(op, p, arg, base string) (string, error) {
	switch op {
	case "read":
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%q", b[:min(len(b), 64)]), nil
	case "write":
		return "", os.WriteFile(p, []byte("scribbled"), 0o644)
	case "append":
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		_, err = f.Write([]byte("+"))
		f.Close()
		return "", err
	case "trunc":
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_TRUNC, 0)
		if err == nil {
			f.Close()
		}
		return "", err
	case "create":
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
		}
		return "", err
	case "mkdir":
		return "", os.Mkdir(p, 0o755)
	case "rmdir":
		return "", syscall.Rmdir(p)
	case "unlink":
		return "", syscall.Unlink(p)
	case "remove":
		return "", os.Remove(p)
	case "rename":
		return "", syscall.Rename(p, under(base, arg))
	case "link":
		return "", os.Link(p, under(base, arg))
	case "symlink":
		return "", os.Symlink(arg, p)
	case "readlink":
		t, err := os.Readlink(p)
		return fmt.Sprintf("%q", t), err
	case "stat", "lstat":
		stat := os.Stat
		if op == "lstat" {
			stat = os.Lstat
		}
		fi, err := stat(p)
		if err != nil {
			return "", err
		}
		kind := "file"
		switch {
		case fi.IsDir():
			kind = "dir"
		case fi.Mode()&os.ModeSymlink != 0:
			kind = "symlink"
		case !fi.Mode().IsRegular():
			kind = "special"
		}
		if kind == "file" {
			return fmt.Sprintf("%s %d", kind, fi.Size()), nil
		}
		return kind, nil
	case "readdir":
		es, err := os.ReadDir(p)
		if err != nil {
			return "", err
		}
		var ns []string
		for _, e := range es {
			ns = append(ns, e.Name())
		}
		slices.Sort(ns)
		return strings.Join(ns, ","), nil
	case "relist": // list, rewind, list again through one descriptor
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		defer f.Close()
		a, err := f.Readdirnames(-1)
		if err != nil {
			return "", err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		b, err := f.Readdirnames(-1)
		slices.Sort(a)
		slices.Sort(b)
		return strings.Join(a, ",") + " then " + strings.Join(b, ","), err
	case "chtimes":
		return "", os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1.5e9, 0))
	case "wait": // until p exists: the host changes something meanwhile
		for {
			if _, err := os.Stat(p); err == nil {
				return "", nil
			}
			time.Sleep(time.Millisecond)
		}
	}
	return "", fmt.Errorf("unknown op %q", op)
}
