// places_test.go: no grant covers /proc, /sys, /dev, the store directory,
// the compilation cache, a directory inside one or a parent of one. Each is
// refused when granted, with the reason, and again at each attempt: a grant
// recorded before the rule, or a directory that has become such a place,
// allows nothing.

package fs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/host"
)

// placed is an engine whose file acts know its store and a cache directory.
func placed(t *testing.T, base, cache string) *host.Engine {
	e := acttest.Engine(t, nil)
	for tag, a := range fs.New(fs.Place{Dir: e.Store.Dir(), What: "the store directory"}, fs.Place{Dir: cache, What: "the compilation cache"}) {
		a.(*fs.Adapter).Base = base
		e.Adapters[tag] = a
	}
	return e
}

func TestPlacesRefusedAtGrant(t *testing.T) {
	base := world(t)
	cache := filepath.Join(base, "cachehome", "runehost", "wazero") // not made yet: still refused
	os.MkdirAll(filepath.Join(base, "cachehome"), 0o755)
	e := placed(t, base, cache)
	storeDir := e.Store.Dir()
	os.Symlink("/proc", filepath.Join(base, "to-proc"))
	os.Symlink(storeDir, filepath.Join(base, "to-store"))
	os.MkdirAll(filepath.Join(storeDir, "inner"), 0o755)
	for _, c := range []struct{ dir, why string }{
		{"/proc", "/proc is the kernel's view of processes"},
		{"/proc/self", "is inside /proc"},
		{"/sys", "/sys is the kernel's devices"},
		{"/dev", "/dev is the devices"},
		{"/dev/shm", "is inside /dev"},
		{"/", "/ holds /proc"},
		{base + "/to-proc", "/proc is the kernel's"},
		{storeDir, "the store directory"},
		{storeDir + "/inner", "is inside " + storeDir},
		{filepath.Dir(storeDir), "holds " + storeDir},
		{base + "/to-store", "the store directory"},
		{filepath.Join(base, "cachehome"), "holds " + cache + ", the compilation cache"},
	} {
		for _, tag := range []string{fs.Read, fs.Write, fs.List} {
			if _, err := os.Stat(c.dir); err != nil {
				t.Fatalf("%s: %v", c.dir, err)
			}
			_, err := e.Grant(host.AnyProg, tag+":"+c.dir)
			if err == nil || !errors.Is(err, fs.ErrPlace) || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s:%s: %v, want a refusal that says %q", tag, c.dir, err, c.why)
			}
		}
	}
	if gs, _ := e.Ward().List(""); len(gs) != 0 {
		t.Fatalf("recorded: %v", gs)
	}
	// Beside them, not over them: granted.
	acttest.Grant(t, e, "fs.read:"+base+"/data", "fs.write:"+base+"/out")
}

func TestPlacesRefusedAtAttempt(t *testing.T) {
	base := world(t)
	e := placed(t, base, filepath.Join(base, "cache"))
	storeDir := e.Store.Dir()
	t.Setenv("PLACES_TEST_TOKEN", "xoxb-environ-secret-8871")
	// Grants recorded before the rule: the ward stores them as given.
	for _, st := range []string{"fs.read:/proc", "fs.read:/", "fs.write:" + storeDir, "fs.list:" + filepath.Dir(storeDir)} {
		if _, err := e.Ward().Grant(host.AnyProg, st); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadDir(storeDir)
	for _, c := range []struct{ name, expr, want string }{
		{"environ", `act "fs.read" {path: "/proc/self/environ", base64: true}`, "the grant fs.read:/proc is refused: /proc is the kernel's view"},
		{"cmdline through /", `act "fs.read" {path: "/proc/self/cmdline", base64: true}`, "/proc"},
		{"a file under /", `act "fs.read" {path: "/etc/hostname"}`, "the grant fs.read:/ is refused: / holds"},
		{"the store", `act "fs.write" {path: "` + storeDir + `/MANIFEST", content: "x"}`, "the store directory"},
		{"beside the store", `act "fs.list" {path: "` + filepath.Dir(storeDir) + `"}`, "holds " + storeDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := acttest.Run(t, e, acttest.Catch(c.expr), nil)
			if !strings.HasPrefix(got, `["denied",`) || !strings.Contains(got, c.want) {
				t.Fatalf("got %s, want denied: …%s", got, c.want)
			}
			if strings.Contains(got, "PLACES_TEST") || strings.Contains(got, "xoxb") {
				t.Fatalf("leaked: %s", got)
			}
		})
	}
	after, _ := os.ReadDir(storeDir)
	if len(after) != len(before) {
		t.Fatalf("the store directory changed: %v -> %v", before, after)
	}
	// A granted directory that has come to hold a place: the host now
	// keeps its cache inside it (RUNEHOST_CACHE_DIR changed).
	acttest.Grant(t, e, "fs.read:"+base+"/data")
	if got, _ := acttest.Run(t, e, acttest.Catch(`act "fs.read" {path: "data/a.txt"}`), nil); got != `"alpha"` {
		t.Fatalf("before the cache: %s", got)
	}
	e.Adapters[fs.Read].(*fs.Adapter).Places = []fs.Place{{Dir: filepath.Join(base, "data", "cache"), What: "the compilation cache"}}
	got, _ := acttest.Run(t, e, acttest.Catch(`act "fs.read" {path: "data/a.txt"}`), nil)
	if !strings.HasPrefix(got, `["denied",`) || !strings.Contains(got, "the compilation cache") {
		t.Fatalf("after the cache: %s", got)
	}
}

func TestCheckPlace(t *testing.T) {
	dir := t.TempDir()
	if err := fs.CheckPlace(dir, nil); err != nil {
		t.Fatalf("an ordinary directory: %v", err)
	}
	err := fs.CheckPlace(filepath.Dir(dir), []fs.Place{{Dir: filepath.Join(dir, "x", "store"), What: "the store directory"}})
	var pe *fs.PlaceError
	if !errors.As(err, &pe) || pe.How != "holds" || pe.What != "the store directory" {
		t.Fatalf("got %v", err)
	}
}
