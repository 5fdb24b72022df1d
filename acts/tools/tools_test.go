// tools_test.go runs tool.run through the engine: a granted tool runs with
// the prog's fs grants as mounts and its tool.env grants as environment; an
// ungranted one is denied; the hostile ones are contained.

package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/testtools"
)

func engine(t *testing.T, names ...string) *host.Engine { return engineWith(t, nil, names...) }

// engineWith is engine with the adapter changed by set first.
func engineWith(t *testing.T, set func(*tools.Adapter), names ...string) *host.Engine {
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n+".wasm"), testtools.Build(t, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	adapters := fs.New()
	e := acttest.Engine(t, adapters)
	a := &tools.Adapter{Dir: dir, CacheDir: filepath.Join(os.TempDir(), "runehost-test-wazero-cache"), MemoryPages: 256, Grants: e.GrantsFor}
	if set != nil {
		set(a)
	}
	t.Cleanup(func() { a.Close(t.Context()) })
	e.Adapters[tools.Tag] = a
	return e
}

func TestToolRun(t *testing.T) {
	e := engine(t, "wc", "cat", "escape", "envsnoop", "spin", "flood")
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f.txt"), []byte("from the data dir"), 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(data), "outside.txt"), []byte("SECRET"), 0o644)
	t.Setenv("TOOLTEST_GRANTED", "yes")
	t.Setenv("TOOLTEST_HIDDEN", "no")
	acttest.Grant(t, e, "tool.run:wc", "tool.run:cat", "tool.run:escape", "tool.run:envsnoop", "tool.run:spin", "tool.run:flood", "tool.run:gone",
		"fs.read:"+data+"=/data", "tool.env:TOOLTEST_GRANTED")
	run := func(expr string) string {
		got, _ := acttest.Run(t, e, acttest.Catch(expr), nil)
		return got
	}
	if got := run(`act "tool.run" {tool: "wc", stdin: "a b\nc\n"}`); !strings.Contains(got, `"ok":true`) || !strings.Contains(got, `"stdout":"2 3 6\n"`) {
		t.Errorf("wc: %s", got)
	}
	if got := run(`act "tool.run" {tool: "cat", args: ["/data/f.txt"]}`); !strings.Contains(got, `"stdout":"from the data dir"`) {
		t.Errorf("cat of a granted dir: %s", got)
	}
	got := run(`act "tool.run" {tool: "escape", args: ["/data/../outside.txt", "/outside.txt", "` + filepath.Join(filepath.Dir(data), "outside.txt") + `"]}`)
	if strings.Contains(got, "SECRET") || strings.Count(got, "denied ") != 3 {
		t.Errorf("escape: %s", got)
	}
	got = run(`act "tool.run" {tool: "envsnoop", args: ["TOOLTEST_GRANTED", "TOOLTEST_HIDDEN", "HOME"]}`)
	if !strings.Contains(got, "found TOOLTEST_GRANTED=yes") || !strings.Contains(got, "missing TOOLTEST_HIDDEN") || !strings.Contains(got, "missing HOME") {
		t.Errorf("envsnoop: %s", got)
	}
	if got := run(`act "tool.run" {tool: "spin", fuel: 1000000}`); !strings.Contains(got, `"stop":"fuel"`) || !strings.Contains(got, `"ok":false`) {
		t.Errorf("spin: %s", got)
	}
	if got := run(`act "tool.run" {tool: "flood", fuel: 3000000}`); !strings.Contains(got, `"stdout_dropped":`) || strings.Contains(got, `"stdout_dropped":0,`) {
		t.Errorf("flood: %.300s", got)
	}
	if got := run(`act "tool.run" {tool: "grep"}`); got != `["denied","tool grep is not granted (runehost grant --prog p tool.run:grep)"]` {
		t.Errorf("ungranted: %s", got)
	}
	// Granted but not there: the grant is not what is missing, and no grant is suggested.
	if got := run(`act "tool.run" {tool: "gone"}`); !strings.Contains(got, "tool gone is granted but not installed") || strings.Contains(got, "runehost grant") {
		t.Errorf("not installed: %s", got)
	}
	if got := run(`act "tool.run" {tool: "../wc"}`); !strings.HasPrefix(got, `["value",`) {
		t.Errorf("path as a name: %s", got)
	}
	// The same input and fuel: the same fuel used.
	a := run(`(act "tool.run" {tool: "wc", stdin: "x y z"}).fuel_used`)
	b := run(`(act "tool.run" {tool: "wc", stdin: "x y z"}).fuel_used`)
	if a != b || a == "0" {
		t.Errorf("fuel %s then %s", a, b)
	}
}
