//go:build unix

// places_test.go: a tool's mounts obey the rule of the file acts: a grant
// over /proc, /sys, /dev, the store or a parent of one, recorded before the
// rule, denies the run with the reason; so does a tool.env grant of the
// host's own configuration. A module that is a pipe is refused at once.

package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

func TestMountsOverPlacesRefused(t *testing.T) {
	e := engine(t, "cat")
	a := e.Adapters[tools.Tag].(*tools.Adapter)
	a.Places = []fs.Place{{Dir: e.Store.Dir(), What: "the store directory"}}
	t.Setenv("RUNEHOST_MODEL_KEY", "sk-places-test-key-123")
	acttest.Grant(t, e, "tool.run:cat")
	for _, c := range []struct{ grant, want string }{
		{"fs.read:/proc=/p", "the mount fs.read:/proc=/p is refused: /proc is the kernel's view of processes"},
		{"fs.read:/=/", "the mount fs.read:/=/ is refused: / holds /proc"},
		{"fs.write:" + e.Store.Dir() + "=/s", "the store directory"},
		{"fs.read:" + filepath.Dir(e.Store.Dir()), "holds " + e.Store.Dir()},
		{"tool.env:RUNEHOST_MODEL_KEY", "the host's own configuration is never given to a tool"},
	} {
		t.Run(c.grant, func(t *testing.T) {
			// Recorded as given, as a grant made before the rule (the
			// ward's own check refuses tool.env of the host's variables).
			err := e.Store.Update(store.Synced, func(tx *store.Tx) error {
				return tx.Put(store.K("grant", host.AnyProg, c.grant), &host.Grant{Subject: host.AnyProg, Statement: c.grant, At: 1})
			})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Ward().Revoke(host.AnyProg, c.grant)
			got, _ := acttest.Run(t, e, acttest.Catch(`act "tool.run" {tool: "cat", args: ["/p/self/environ"]}`), nil)
			if !strings.HasPrefix(got, `["denied",`) || !strings.Contains(got, c.want) || strings.Contains(got, "sk-places") {
				t.Fatalf("got %s, want denied: …%s", got, c.want)
			}
		})
	}
	if got, _ := acttest.Run(t, e, acttest.Catch(`act "tool.run" {tool: "cat", stdin: "ok"}`), nil); !strings.Contains(got, `"stdout":"ok"`) {
		t.Fatalf("without them: %s", got)
	}
}

func TestModulePipeRefused(t *testing.T) {
	e := engine(t)
	a := e.Adapters[tools.Tag].(*tools.Adapter)
	if err := unix.Mkfifo(filepath.Join(a.Dir, "pipe.wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	acttest.Grant(t, e, "tool.run:pipe")
	done := make(chan string, 1)
	go func() {
		got, _ := acttest.Run(t, e, acttest.Catch(`act "tool.run" {tool: "pipe"}`), nil)
		done <- got
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, "a named pipe") {
			t.Fatalf("got %s", got)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a speed check
		t.Fatal("the module read waited on a pipe")
	}
	os.Remove(filepath.Join(a.Dir, "pipe.wasm"))
}
