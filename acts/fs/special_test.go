//go:build unix

// special_test.go: the file acts open only regular files (and directories,
// to list): a named pipe, a socket or a device in a granted directory is
// refused at once, never waited on, in an act and when a resume attempts
// the act again; a file on the kernel's file systems is refused even when
// reached by a path no place names.

package fs_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// within fails the test, instead of hanging it, when f does not return in
// time: a hang guard, not a speed check.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked: the act waited on a special file")
	}
}

// specials makes a directory with a pipe, a socket, a file and a subdir.
func specials(t *testing.T) string {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	data := filepath.Join(base, "data")
	os.MkdirAll(filepath.Join(data, "sub"), 0o755)
	os.WriteFile(filepath.Join(data, "f.txt"), []byte("plain"), 0o644)
	if err := unix.Mkfifo(filepath.Join(data, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(data, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	os.Symlink("pipe", filepath.Join(data, "to-pipe"))
	return base
}

func TestSpecialFilesRefused(t *testing.T) {
	base := specials(t)
	e := engine(t, base)
	acttest.Grant(t, e, "fs.read:"+base+"/data", "fs.write:"+base+"/data", "fs.list:"+base+"/data")
	for _, c := range []struct{ name, expr, want string }{
		{"read a pipe", `act "fs.read" {path: "data/pipe"}`, "a named pipe"},
		{"read a pipe through a link", `act "fs.read" {path: "data/to-pipe"}`, "a named pipe"},
		{"read a socket", `act "fs.read" {path: "data/sock"}`, "a socket"},
		{"read a directory", `act "fs.read" {path: "data/sub"}`, "a directory"},
		{"write a pipe", `act "fs.write" {path: "data/pipe", content: "x"}`, "a named pipe"},
		{"append to a pipe", `act "fs.write" {path: "data/pipe", content: "x", append: true}`, "a named pipe"},
		{"write a socket", `act "fs.write" {path: "data/sock", content: "x"}`, "a socket"},
		{"list a pipe", `act "fs.list" {path: "data/pipe"}`, "a named pipe"},
		{"list a file", `act "fs.list" {path: "data/f.txt"}`, "a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got string
			within(t, func() { got, _ = acttest.Run(t, e, acttest.Catch(c.expr), nil) })
			if !strings.HasPrefix(got, `["denied",`) || !strings.Contains(got, c.want) {
				t.Fatalf("got %s, want denied: …%s", got, c.want)
			}
		})
	}
	// With a reader on the pipe, a write still does not go into it.
	r, err := os.OpenFile(filepath.Join(base, "data", "pipe"), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got string
	within(t, func() {
		got, _ = acttest.Run(t, e, acttest.Catch(`act "fs.write" {path: "data/pipe", content: "into the pipe"}`), nil)
	})
	if !strings.Contains(got, "a named pipe") {
		t.Fatalf("write to a pipe with a reader: %s", got)
	}
	buf := make([]byte, 64)
	if n, _ := r.Read(buf); n > 0 {
		t.Fatalf("the write reached the pipe: %q", buf[:n])
	}
	// Ordinary files and directories still work.
	got, _ = acttest.Run(t, e, `return [act "fs.read" {path: "data/f.txt"}, len(act "fs.list" {path: "data"}), act "fs.write" {path: "data/f.txt", content: "new"}]`, nil)
	if got != `["plain",5,{"bytes":3}]` {
		t.Fatalf("ordinary files: %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "data", "f.txt")); string(b) != "new" {
		t.Fatalf("a whole write truncates: %q", b)
	}
}

// dying dies (as if the host were killed) the first time it is called,
// after the attempt was recorded.
type dying struct {
	*fs.Adapter
	died *bool
}

func (d dying) Do(ctx context.Context, op *host.Operation) (any, error) {
	if !*d.died {
		*d.died = true
		runtime.Goexit()
	}
	return d.Adapter.Do(ctx, op)
}

// The act cut short by a crash is attempted again on resume (a read is
// repeatable): against a pipe, it is refused at once, and the prog goes on.
func TestPipeOnResume(t *testing.T) {
	base := specials(t)
	dir := t.TempDir()
	open := func() (*host.Engine, func()) {
		s, err := store.Open(store.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
		if err != nil {
			t.Fatal(err)
		}
		for tag, a := range fs.New() {
			a.(*fs.Adapter).Base = base
			e.Adapters[tag] = a
		}
		return e, func() { s.Close() }
	}
	e, done := open()
	acttest.Grant(t, e, "fs.read:"+base+"/data")
	died := false
	e.Adapters[fs.Read] = dying{e.Adapters[fs.Read].(*fs.Adapter), &died}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		e.Start(context.Background(), "r1", "p", []byte(acttest.Catch(`act "fs.read" {path: "data/pipe"}`)), nil, 100_000, 1)
	}()
	<-finished
	done()
	if !died {
		t.Fatal("the adapter was not called")
	}
	e, done = open()
	defer done()
	var out *host.RunState
	var err error
	within(t, func() { out, err = e.Resume(context.Background(), "r1") })
	if err != nil || out.Status != host.Completed || !strings.Contains(acttest.JSON(t, out.Result), "a named pipe") {
		t.Fatalf("resume: %+v %v", out, err)
	}
}

func TestOpenRegular(t *testing.T) {
	for _, p := range []string{"/dev/null", "/dev/zero", "/proc/self/environ", "/proc/self/cmdline", "/sys/kernel/mm/transparent_hugepage/enabled"} {
		if _, err := os.Lstat(p); err != nil {
			continue // not on this kernel
		}
		f, err := fs.OpenRegular(p)
		if err == nil {
			f.Close()
			t.Errorf("%s opened", p)
			continue
		}
		if !errors.Is(err, fs.ErrNotRegular) && !errors.Is(err, fs.ErrPlace) {
			t.Errorf("%s: %v", p, err)
		}
	}
	f, err := fs.OpenRegular("special_test.go")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
