// link_test.go runs `runehost link` as a user would: make a link, list it,
// resolve it from the store, revoke it.

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/server/links"
	"github.com/runehost/runehost/store"
)

// resolve opens the store the CLI left and resolves a link's token.
func resolve(t *testing.T, url string) (string, error) {
	t.Helper()
	s, err := store.Open(store.Options{Dir: os.Getenv("RUNEHOST_STORE")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return links.New(s, nil).Resolve(url[strings.LastIndex(url, "/")+1:])
}

func TestLink(t *testing.T) {
	t.Setenv("RUNEHOST_STORE", filepath.Join(t.TempDir(), "store"))
	t.Setenv("RUNEHOST_BASE_URL", "")
	if code, _, errs := invoke(t, "run", writeProg(t, "return 1")); code != exitOK {
		t.Fatalf("run: %d %s", code, errs)
	}
	code, out, errs := invoke(t, "link", "r1")
	if code != exitOK || !strings.HasPrefix(out, defaultBaseURL+"/r/") || len(strings.TrimSpace(out)) != len(defaultBaseURL)+3+43 {
		t.Fatalf("link: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	url := strings.TrimSpace(out)
	id := strings.Fields(errs)[1]
	if !strings.Contains(errs, "link "+id+" to r1 expires ") {
		t.Fatalf("link: stderr %q", errs)
	}
	if run, err := resolve(t, url); err != nil || run != "r1" {
		t.Fatalf("resolve: %q, %v", run, err)
	}

	code, out, _ = invoke(t, "link", "r1", "--ttl", "1h", "--base-url", "https://rh.example/")
	if code != exitOK || !strings.HasPrefix(out, "https://rh.example/r/") {
		t.Fatalf("link --base-url: exit %d, %q", code, out)
	}
	code, out, _ = invoke(t, "link", "--list", "r1")
	if code != exitOK || strings.Count(out, " live ") != 2 || !strings.HasPrefix(out, id+"  live") {
		t.Fatalf("link --list: exit %d, %q", code, out)
	}

	code, _, errs = invoke(t, "link", "--revoke", "r1", id)
	if code != exitOK || !strings.Contains(errs, "revoked 1 link(s) of r1") {
		t.Fatalf("revoke: exit %d, %q", code, errs)
	}
	if _, err := resolve(t, url); !errors.Is(err, links.ErrNotFound) {
		t.Fatalf("a revoked link resolves: %v", err)
	}
	if code, _, errs = invoke(t, "link", "--revoke", "r1", id); code != exitUsage || !strings.Contains(errs, "no live link") {
		t.Fatalf("revoke again: exit %d, %q", code, errs)
	}
	code, _, errs = invoke(t, "link", "--revoke", "r1")
	if code != exitOK || !strings.Contains(errs, "revoked 1 link(s)") {
		t.Fatalf("revoke all: exit %d, %q", code, errs)
	}
	if code, out, _ = invoke(t, "link", "--list", "r1"); strings.Count(out, " revoked ") != 2 {
		t.Fatalf("link --list after revoking: %q", out)
	}

	for _, args := range [][]string{{"link", "r9"}, {"link"}, {"link", "--ttl", "0s", "r1"}, {"link", "--list", "--revoke", "r1"}, {"link", "r1", "x"}} {
		if code, _, errs := invoke(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}
