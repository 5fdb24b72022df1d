// fs_test.go checks the file acts against the ward: granted succeeds;
// ungranted, a sibling directory, `..`, a symlink out, an absolute path
// outside are all denied before any effect; a revoke denies the next act.

package fs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/host"
)

// world is a directory with a granted data/, a sibling data2/, a secret
// outside and symlinks pointing in and out.
func world(t *testing.T) (base string) {
	base, _ = filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"data/sub", "data2", "out"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	os.WriteFile(filepath.Join(base, "data", "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(base, "data2", "b.txt"), []byte("sibling"), 0o644)
	os.WriteFile(filepath.Join(base, "secret"), []byte("SECRET"), 0o644)
	os.Symlink(filepath.Join(base, "secret"), filepath.Join(base, "data", "abs-link"))
	os.Symlink("../secret", filepath.Join(base, "data", "rel-link"))
	os.Symlink("a.txt", filepath.Join(base, "data", "in-link"))
	os.Symlink(filepath.Join(base, "data2"), filepath.Join(base, "data", "sub", "dir-link"))
	os.Symlink(filepath.Join(base, "secret"), filepath.Join(base, "out", "trap"))
	return base
}

func engine(t *testing.T, base string) *host.Engine {
	e := acttest.Engine(t, fs.New())
	for _, a := range e.Adapters {
		if fa, ok := a.(*fs.Adapter); ok {
			fa.Base = base
		}
	}
	return e
}

func TestFileActs(t *testing.T) {
	base := world(t)
	e := engine(t, base)
	wd, _ := os.Getwd()
	os.Chdir(base) // grants are made absolute against the granting process's directory
	acttest.Grant(t, e, "fs.read:./data", "fs.list:./data", "fs.write:./out")
	os.Chdir(wd)
	for _, c := range []struct{ name, expr, want string }{
		{"read", `act "fs.read" {path: "data/a.txt"}`, `"alpha"`},
		{"read absolute inside", `act "fs.read" {path: "` + base + `/data/a.txt"}`, `"alpha"`},
		{"read through a link inside", `act "fs.read" {path: "data/in-link"}`, `"alpha"`},
		{"list", `len(act "fs.list" {path: "data"})`, `5`},
		{"write", `act "fs.write" {path: "out/new.txt", content: "hi"}`, `{"bytes":2}`},
		{"missing", `act "fs.read" {path: "data/nope"}`, `["not_found",`},
		{"ungranted tag", `act "fs.write" {path: "data/x", content: "x"}`, `["denied",`},
		{"sibling", `act "fs.read" {path: "data2/b.txt"}`, `["denied",`},
		{"dotdot", `act "fs.read" {path: "data/../secret"}`, `["denied",`},
		{"dotdot to sibling", `act "fs.read" {path: "data/sub/../../data2/b.txt"}`, `["denied",`},
		{"symlink out, absolute", `act "fs.read" {path: "data/abs-link"}`, `["denied",`},
		{"symlink out, relative", `act "fs.read" {path: "data/rel-link"}`, `["denied",`},
		{"dir symlink out", `act "fs.read" {path: "data/sub/dir-link/b.txt"}`, `["denied",`},
		{"absolute outside", `act "fs.read" {path: "/etc/passwd"}`, `["denied",`},
		{"write through a symlink out", `act "fs.write" {path: "out/trap", content: "pwned"}`, `["denied",`},
		{"bad args", `act "fs.read" {}`, `["value",`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := acttest.Run(t, e, acttest.Catch(c.expr), nil)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %s, want %s…", got, c.want)
			}
			if strings.Contains(got, "SECRET") || strings.Contains(got, "sibling") {
				t.Fatalf("leaked: %s", got)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(base, "secret")); string(b) != "SECRET" {
		t.Fatalf("the secret was written: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "out", "new.txt")); string(b) != "hi" {
		t.Fatalf("the write did not land: %q", b)
	}
}

// The exact grant statement used is on the attempt.
func TestStatementRecorded(t *testing.T) {
	base := world(t)
	e := engine(t, base)
	acttest.Grant(t, e, "fs.read:"+base+"/data2", "fs.read:"+base+"/data")
	_, out := acttest.Run(t, e, `return act "fs.read" {path: "data/a.txt"}`, nil)
	if out.Status != host.Completed {
		t.Fatalf("got %+v", out)
	}
	in, err := e.Inspect("t" + strings.TrimPrefix(lastID(t, e), "t"))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Operations[0].Attempt.Grant; got != "fs.read:"+base+"/data" {
		t.Fatalf("attempt grant %q", got)
	}
}

func lastID(t *testing.T, e *host.Engine) string {
	invs, err := e.List()
	if err != nil || len(invs) == 0 {
		t.Fatal(err)
	}
	return invs[len(invs)-1].ID
}

func TestRevokeBetweenActs(t *testing.T) {
	base := world(t)
	e := engine(t, base)
	acttest.Grant(t, e, "fs.read:"+base+"/data")
	src := `let a = act "fs.read" {path: "data/a.txt"}
await {key: "go"}
try { return [a, act "fs.read" {path: "data/a.txt"}] } catch err { return [a, err.kind] }`
	_, out := acttest.Run(t, e, src, nil)
	if out.Status != host.Waiting {
		t.Fatalf("got %+v", out)
	}
	inv := lastID(t, e)
	if ok, err := e.Ward().Revoke(host.AnyProg, "fs.read:"+base+"/data"); !ok || err != nil {
		t.Fatalf("revoke %v %v", ok, err)
	}
	out, err := e.Send(context.Background(), inv, "go", nil)
	if err != nil || acttest.JSON(t, out.Result) != `["alpha","denied"]` {
		t.Fatalf("got %+v %v", out, err)
	}
}

func TestGrantChecked(t *testing.T) {
	e := engine(t, t.TempDir())
	for _, bad := range []string{"fs.read:", "fs.read:/no/such/dir", "fs.read:/tmp=relative", "fs.read:/tmp=/a/../b"} {
		if _, err := e.Grant(host.AnyProg, bad); err == nil {
			t.Errorf("%s granted", bad)
		}
	}
}

// A granted directory later replaced by a symlink to elsewhere is refused.
func TestGrantedDirRepointed(t *testing.T) {
	base := world(t)
	e := engine(t, base)
	acttest.Grant(t, e, "fs.read:"+base+"/data")
	os.Rename(filepath.Join(base, "data"), filepath.Join(base, "data.old"))
	os.Symlink(filepath.Join(base, "data2"), filepath.Join(base, "data"))
	got, _ := acttest.Run(t, e, acttest.Catch(`act "fs.read" {path: "data/b.txt"}`), nil)
	if !strings.HasPrefix(got, `["denied",`) || strings.Contains(got, "sibling") {
		t.Fatalf("got %s", got)
	}
}

func TestGrantPathWithEquals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj=x")
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	e := engine(t, dir)
	if _, err := e.Grant(host.AnyProg, "fs.read:"+dir+"/data"); err == nil {
		t.Fatal("granted a directory whose path has =")
	}
}
