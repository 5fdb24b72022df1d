// mount_test.go holds mounts to the kernel's file semantics and to their
// walls: the same file operations natively and in a tool give the same
// results and errnos; symlinks and hard links that lead out, special files,
// and a host racing renames under a running tool never reach outside.

package tool

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/internal/testtools"
	"github.com/runehost/runehost/internal/testtools/fsops"
)

var swaps = flag.Int("swaps", 2000, "renames the swap race test makes while the tool runs (make mount-race: 10000)")

// script is file operations that stay inside a mount: each must end, result
// and errno included, as it does on Linux itself.
var script = []string{
	"read:f", "read:missing", "read:f/x", "read:f/", "read:d",
	"mkdir:d", "mkdir:f/x", "mkdir:no/x", "mkdir:m1", "mkdir:m3/", "rmdir:m3/",
	"symlink:l1:f", "read:l1", "readlink:l1", "readlink:f", "readlink:missing", "lstat:l1", "stat:l1",
	"symlink:l1:f", "symlink:loop1:loop2", "symlink:loop2:loop1", "read:loop1", "stat:loop1", "lstat:loop1", "write:loop1",
	"symlink:d/up:../f", "read:d/up", "symlink:dl:d", "read:dl/g", "readdir:dl", "write:dl/new", "read:d/new",
	"symlink:dang:target", "write:dang", "read:target", "create:dang",
	"rename:d:d2", "read:d2/g", "read:dl/g", "read:d2/up",
	"rename:d2:d2/sub", "rename:f:e", "rename:e:f", "rename:m1:e", "mkdir:m2", "write:m2/x", "rename:e:m2",
	"rename:missing:x", "rename:f:no/x", "rename:f:f2", "rename:f2:f",
	"symlink:l2:f", "rename:l2:d2/l2", "read:d2/l2", "readlink:d2/l2",
	"unlink:d2", "rmdir:f", "rmdir:d2", "rmdir:missing", "unlink:missing", "unlink:l1", "read:f",
	"remove:m2/x", "remove:m2", "write:n", "append:n", "read:n", "trunc:n", "read:n", "create:n", "create:n2",
	"chtimes:f", "chtimes:missing", "stat:f", "stat:d2", "stat:missing", "lstat:d2/up",
	"readdir:.", "readdir:d2", "readdir:f", "readdir:missing", "relist:d2",
}

// setup makes the tree the script starts from.
func setup(t *testing.T, dir string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "d", "g"), []byte("in d"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "e"), 0o755))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tree describes a directory: each name, its kind, and a file's content or
// a link's target.
func tree(t *testing.T, dir string) string {
	var lines []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			lines = append(lines, rel+" -> "+target)
		case fi.IsDir():
			lines = append(lines, rel+"/")
		default:
			b, _ := os.ReadFile(p)
			lines = append(lines, fmt.Sprintf("%s %q", rel, b))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// The script's lines (errnos included) and the tree it leaves are the same
// natively and in a writable mount.
func TestFileSemanticsMatchLinux(t *testing.T) {
	native, mounted := t.TempDir(), t.TempDir()
	setup(t, native)
	setup(t, mounted)
	var want bytes.Buffer
	fsops.Run(&want, native, script)
	r := runner(t, 0)
	res := run(t, r, "scribble", Config{Args: prefixed("/rw/", script), Mounts: []Mount{{Host: mounted, Guest: "/rw", Write: true}}})
	got := strings.ReplaceAll(string(res.Stdout), "/rw/", "")
	wantLines, gotLines := strings.Split(strings.ReplaceAll(want.String(), native+"/", ""), "\n"), strings.Split(got, "\n")
	for i := range max(len(wantLines), len(gotLines)) {
		w, g := line(wantLines, i), line(gotLines, i)
		if opOf(w) != opOf(g) {
			t.Errorf("line %d: Linux %q, the tool %q", i, w, g)
		}
	}
	if a, b := tree(t, native), tree(t, mounted); a != b {
		t.Errorf("the trees differ:\nLinux:\n%s\nthe tool:\n%s", a, b)
	}
}

func prefixed(prefix string, ops []string) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		parts := strings.SplitN(op, ":", 3)
		parts[1] = prefix + parts[1]
		if len(parts) == 3 && (parts[0] == "rename" || parts[0] == "link") {
			parts[2] = prefix + parts[2]
		}
		out[i] = strings.Join(parts, ":")
	}
	return out
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// opOf is a result line without the error's text, which differs between
// Go's ports: "denied read f: ENOENT".
func opOf(l string) string {
	if i := strings.Index(l, " ("); i > 0 && strings.HasPrefix(l, "denied ") {
		return l[:i]
	}
	return l
}

// Symlinks and hard links that lead out are refused, made by the host or by
// the tool, with EPERM; one made by the host is not followed, and a file
// with a second name (which may be outside) is neither read nor written.
func TestLinksThatLeadOut(t *testing.T) {
	base := t.TempDir()
	outside, rw := filepath.Join(base, "outside"), filepath.Join(base, "rw")
	must(t, os.Mkdir(outside, 0o755))
	must(t, os.Mkdir(rw, 0o755))
	secret := filepath.Join(outside, "secret")
	must(t, os.WriteFile(secret, []byte("SECRET outside"), 0o644))
	must(t, os.Link(secret, filepath.Join(rw, "hard")))
	must(t, os.Symlink(secret, filepath.Join(rw, "abs")))
	must(t, os.Symlink("../outside/secret", filepath.Join(rw, "rel")))
	must(t, os.Symlink(outside, filepath.Join(rw, "outdir")))
	must(t, os.Mkdir(filepath.Join(rw, "d"), 0o755))
	must(t, os.Symlink(".", filepath.Join(rw, "self")))
	r := runner(t, 0)
	res := run(t, r, "scribble", Config{Mounts: []Mount{{Host: rw, Guest: "/rw", Write: true}}, Args: []string{
		"read:/rw/hard", "write:/rw/hard", "append:/rw/hard", "trunc:/rw/hard", "chtimes:/rw/hard",
		"read:/rw/abs", "write:/rw/abs", "read:/rw/rel", "write:/rw/rel", "read:/rw/outdir/secret", "write:/rw/outdir/new", "mkdir:/rw/outdir/m",
		"rename:/rw/outdir/secret:/rw/stolen", "unlink:/rw/outdir/secret", "symlink:/rw/outdir/l:x",
		"symlink:/rw/mine:" + secret, "symlink:/rw/mine2:../outside/secret", "symlink:/rw/d/mine3:../../outside/secret",
		"symlink:/rw/self/mine4:../outside/secret", "symlink:/rw/mine5:d/../../outside/secret", "symlink:/rw/mine6:d/../f",
		"link:/rw/abs:/rw/hard2", "link:/rw/d:/rw/d2", "readlink:/rw/abs", "readlink:/rw/rel",
		"symlink:/rw/d/ok:../rel", "read:/rw/d/ok",
	}})
	out := string(res.Stdout)
	if strings.Contains(out, "SECRET") {
		t.Fatalf("read outside:\n%s", out)
	}
	for _, want := range []string{
		"denied read /rw/hard: EACCES", "denied write /rw/hard: EACCES", "denied append /rw/hard: EACCES", "denied trunc /rw/hard: EACCES",
		"denied chtimes /rw/hard: EACCES", "denied read /rw/abs: EPERM", "denied write /rw/abs: EPERM", "denied read /rw/rel: EPERM",
		"denied write /rw/rel: EPERM", "denied read /rw/outdir/secret: EPERM", "denied write /rw/outdir/new: EPERM", "denied mkdir /rw/outdir/m: EPERM",
		"denied rename /rw/outdir/secret: EPERM", "denied unlink /rw/outdir/secret: EPERM", "denied symlink /rw/outdir/l: EPERM",
		"denied symlink /rw/mine: EPERM", "denied symlink /rw/mine2: EPERM", "denied symlink /rw/d/mine3: EPERM",
		"denied symlink /rw/self/mine4: EPERM", "denied symlink /rw/mine5: EPERM", "denied symlink /rw/mine6: EPERM",
		"denied link /rw/abs: EPERM", "denied link /rw/d: EPERM", "denied readlink /rw/abs: EPERM", "denied readlink /rw/rel: EPERM",
		"ok symlink /rw/d/ok", "denied read /rw/d/ok: EPERM",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET outside" {
		t.Errorf("the outside file is now %q", b)
	}
	if es, _ := os.ReadDir(outside); len(es) != 1 {
		t.Errorf("the outside directory holds %d entries", len(es))
	}
	for _, name := range []string{"mine", "mine2", "d/mine3", "mine4", "mine5", "mine6", "hard2", "d2", "stolen"} {
		if _, err := os.Lstat(filepath.Join(rw, name)); err == nil {
			t.Errorf("%s was made", name)
		}
	}
}

// A named pipe or a socket in any mount is refused at once, never opened:
// an open or a read would block the host, past the tool's clock.
func TestSpecialFilesNeverBlock(t *testing.T) {
	ro, rw := t.TempDir(), t.TempDir()
	for _, dir := range []string{ro, rw} {
		must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
		l, err := net.Listen("unix", filepath.Join(dir, "sock"))
		must(t, err)
		defer l.Close()
	}
	r := runner(t, 0)
	done := make(chan string, 1)
	go func() {
		res, err := r.Run(context.Background(), testtools.Build(t, "scribble"), Config{
			Timeout: 5 * time.Second, Mounts: []Mount{{Host: ro, Guest: "/ro"}, {Host: rw, Guest: "/rw", Write: true}},
			Args: []string{"read:/ro/pipe", "read:/rw/pipe", "write:/rw/pipe", "append:/rw/pipe", "read:/rw/sock", "write:/rw/sock", "stat:/rw/pipe"},
		})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(res.Stdout)
	}()
	select {
	case out := <-done:
		for _, want := range []string{"denied read /ro/pipe: EACCES", "denied read /rw/pipe: EACCES", "denied write /rw/pipe: EACCES",
			"denied append /rw/pipe: EACCES", "denied read /rw/sock: EACCES", "denied write /rw/sock: EACCES", "ok stat /rw/pipe"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in\n%s", want, out)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the host hung on a special file")
	}
}

// While a tool reads and writes through rw/d, the host swaps rw/d with a
// symlink to a directory outside, by RENAME_EXCHANGE and by plain renames:
// the tool never reads the outside file and never writes beside it.
func TestSwapRace(t *testing.T) {
	for _, mode := range []string{"exchange", "rename"} {
		t.Run(mode, func(t *testing.T) {
			base := t.TempDir()
			outside, rw := filepath.Join(base, "outside"), filepath.Join(base, "rw")
			must(t, os.Mkdir(outside, 0o755))
			must(t, os.Mkdir(rw, 0o755))
			must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET outside"), 0o644))
			d := filepath.Join(rw, "d")
			must(t, os.Mkdir(d, 0o755))
			must(t, os.WriteFile(filepath.Join(d, "f"), []byte("inside"), 0o644))
			must(t, os.Symlink(outside, filepath.Join(rw, "x")))
			stop := filepath.Join(base, "ctl", "stop")
			must(t, os.Mkdir(filepath.Dir(stop), 0o755))

			r := runner(t, 0)
			type result struct {
				res *Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := r.Run(context.Background(), testtools.Build(t, "racer"), Config{
					Timeout: 10 * time.Minute, Fuel: MaxFuel,
					Args:   []string{"/rw/d", "/ctl/stop"},
					Mounts: []Mount{{Host: rw, Guest: "/rw", Write: true}, {Host: filepath.Dir(stop), Guest: "/ctl", Write: true}},
				})
				done <- result{res, err}
			}()
			for {
				if _, err := os.Stat(stop + ".ready"); err == nil {
					break
				}
				select {
				case r := <-done:
					t.Fatalf("the tool ended before the race: %+v %v", r.res, r.err)
				case <-time.After(time.Millisecond):
				}
			}
			x, tmp := filepath.Join(rw, "x"), filepath.Join(rw, "tmp")
			for i := range *swaps {
				if mode == "exchange" {
					must(t, unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, x, unix.RENAME_EXCHANGE))
				} else {
					must(t, os.Rename(d, tmp))
					must(t, os.Rename(x, d))
					must(t, os.Rename(d, x))
					must(t, os.Rename(tmp, d))
				}
				if i%64 == 0 {
					time.Sleep(100 * time.Microsecond) // let the tool run a round now and then
				}
			}
			must(t, os.WriteFile(stop, nil, 0o644))
			res := <-done
			if res.err != nil || !res.res.OK() {
				t.Fatalf("racer: %+v %v %s", res.res, res.err, res.res.Stderr)
			}
			out := string(res.res.Stdout)
			t.Logf("%d swaps (%s) while the tool ran:\n%s", *swaps, mode, out)
			if strings.Contains(out, "SECRET") {
				t.Errorf("the tool read outside:\n%s", out)
			}
			if es, _ := os.ReadDir(outside); len(es) != 1 {
				var names []string
				for _, e := range es {
					names = append(names, e.Name())
				}
				t.Errorf("the tool wrote outside: %v", names)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "SECRET outside" {
				t.Errorf("the outside file is now %q", b)
			}
		})
	}
}
