// fsallow_linux_test.go: issue 30's reproduction, with real bind mounts
// (run as root): a directory holding a mount of /proc, /sys or /dev is
// refused by `runehost grant` and by `tool run --grant`, naming the mount,
// and the token in the host's environment is never printed.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/internal/testtools"
)

func TestForeignMountRefused(t *testing.T) {
	testtools.RequireRoot(t)
	const token = "xoxb-issue30-cli-7741"
	t.Setenv("SLACK_BOT_TOKEN", token)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	cat := filepath.Join(base, "cat.wasm")
	os.WriteFile(cat, testtools.Build(t, "cat"), 0o644)
	for _, m := range []struct{ src, dir, fstype string }{{"/proc", "wp", "proc"}, {"/sys", "ws", "sysfs"}, {"/dev", "wd", "devtmpfs"}} {
		w := filepath.Join(base, m.dir)
		testtools.Bind(t, m.src, filepath.Join(w, "p"))
		want := w + " holds " + w + "/p, a mount of " + m.fstype
		for _, st := range []string{"fs.write:" + w, "fs.read:" + w + "=/w", "fs.list:" + w} {
			if code, _, errs := invoke(t, "grant", "--prog", "p", st); code != exitUsage || !strings.Contains(errs, want) {
				t.Errorf("grant %s: exit %d, %q; want %d and %q", st, code, errs, exitUsage, want)
			}
		}
		code, out, errs := invoke(t, "tool", "run", cat, "--grant", "fs.read:"+w+"=/w", "--", "/w/p/self/environ")
		if code != exitUsage || !strings.Contains(errs, want) || strings.Contains(out+errs, token) {
			t.Errorf("tool run: exit %d, %q; want %d and %q", code, errs, exitUsage, want)
		}
	}
	if code, out, errs := invoke(t, "grants"); code != exitOK || out != "" {
		t.Errorf("grants: %d %q %q", code, out, errs)
	}
}
