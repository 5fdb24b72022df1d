// listen_test.go checks where a server listens: a 0600 socket, a long
// store path's socket in a directory of its own, and a discovery file that
// is untrusted input.

package server

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runehost/runehost/api"
)

func TestSocketIsPrivate(t *testing.T) {
	dir := t.TempDir()
	l, p, err := ListenUnix(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %s: %v %v", p, fi.Mode(), err)
	}
	// A second server on the same store is refused, and the live socket kept.
	if _, _, err := ListenUnix(dir); err == nil || !strings.Contains(err.Error(), "already answers") {
		t.Fatalf("second listen: %v", err)
	}
	if c, err := net.Dial("unix", p); err != nil {
		t.Fatalf("the first socket went: %v", err)
	} else {
		c.Close()
	}
}

func TestLongStorePathSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := SocketPath(dir)
	if err != nil || len(p) > maxSocketPath || strings.HasPrefix(p, dir) {
		t.Fatalf("socket path %q: %v", p, err)
	}
	l, got, err := ListenUnix(dir)
	if err != nil || got != p {
		t.Fatalf("listen: %q %v", got, err)
	}
	l.Close()
	// Someone else's (or a widened) directory there is refused.
	os.Chmod(filepath.Dir(p), 0o777)
	defer os.RemoveAll(filepath.Dir(p))
	if _, err := SocketPath(dir); err == nil {
		t.Fatal("a directory others may enter was taken for the socket")
	}
}

func TestDiscoveryIsUntrusted(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadDiscovery(dir); !os.IsNotExist(err) {
		t.Fatalf("missing: %v", err)
	}
	for _, bad := range []string{"", "{", `{"pid":1}`, strings.Repeat(" ", 5000) + `{"socket":"x"}`, `[1,2]`} {
		os.WriteFile(filepath.Join(dir, DiscoveryFile), []byte(bad), 0o600)
		if _, err := ReadDiscovery(dir); err == nil || !strings.Contains(err.Error(), DiscoveryFile) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := WriteDiscovery(dir, api.Discovery{PID: 7, Socket: "/s"}); err != nil {
		t.Fatal(err)
	}
	if d, err := ReadDiscovery(dir); err != nil || d.PID != 7 || d.Socket != "/s" {
		t.Fatalf("read back: %+v %v", d, err)
	}
	RemoveDiscovery(dir, 8) // another server's: kept
	if _, err := ReadDiscovery(dir); err != nil {
		t.Fatal("removed another server's file")
	}
	RemoveDiscovery(dir, 7)
	if _, err := ReadDiscovery(dir); !os.IsNotExist(err) {
		t.Fatalf("not removed: %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadToken(dir, "")
	if err != nil || len(a) < 40 {
		t.Fatalf("token %q: %v", a, err)
	}
	fi, _ := os.Stat(filepath.Join(dir, TokenFile))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode())
	}
	if b, _ := LoadToken(dir, ""); b != a {
		t.Fatal("a second start made another token")
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := LoadToken(dir, short); err == nil {
		t.Fatal("a 3-character token was taken")
	}
}
