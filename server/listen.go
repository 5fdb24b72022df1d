// listen.go holds where a server is found: its Unix socket in the store
// directory, the discovery file naming it, and the TCP bearer token.

package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/runehost/runehost/api"
)

// Files a server keeps in its store directory.
const (
	SocketFile    = "serve.sock"  // the API, mode 0600
	DiscoveryFile = "serve.json"  // names the socket, for the CLI
	TokenFile     = "serve.token" // the TCP bearer token, mode 0600
)

// maxSocketPath is what a Unix socket's path may hold (sun_path, with its
// terminating zero, on Linux).
const maxSocketPath = 107

// SocketPath is where a server of the store dir listens: in dir, or, when
// that path is too long for a socket, in a 0700 directory of the system's
// temporary directory named after dir's hash.
func SocketPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(abs, SocketFile)
	if len(p) <= maxSocketPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(abs))
	d := filepath.Join(os.TempDir(), fmt.Sprintf("runehost-%x", sum[:8]))
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	// The temporary directory is everyone's: a directory someone else made
	// there (or a link) could let them swap the socket for their own.
	if err := ownDir(d); err != nil {
		return "", err
	}
	return filepath.Join(d, SocketFile), nil
}

// ListenUnix listens on the store's socket, mode 0600. A socket file left
// by a server that died is replaced; one a live server answers on is not.
func ListenUnix(dir string) (net.Listener, string, error) {
	p, err := SocketPath(dir)
	if err != nil {
		return nil, "", err
	}
	if c, err := net.Dial("unix", p); err == nil {
		c.Close()
		return nil, "", fmt.Errorf("%s: a server already answers there", p)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	// The socket is made 0600 from the start: a umask, not a chmod after
	// it, so there is no moment another user could connect.
	old := umask(0o177)
	l, err := net.Listen("unix", p)
	umask(old)
	if err != nil {
		return nil, "", err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return l, p, nil
}

// WriteDiscovery writes the discovery file atomically (mode 0600).
func WriteDiscovery(dir string, d api.Discovery) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, DiscoveryFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, DiscoveryFile))
}

// RemoveDiscovery removes the discovery file if it still names pid.
func RemoveDiscovery(dir string, pid int) {
	d, err := ReadDiscovery(dir)
	if err == nil && d.PID == pid {
		os.Remove(filepath.Join(dir, DiscoveryFile))
	}
}

// ReadDiscovery reads the discovery file; a missing one is os.ErrNotExist.
// Its content is untrusted: a malformed file is an error naming it.
func ReadDiscovery(dir string) (api.Discovery, error) {
	var d api.Discovery
	p := filepath.Join(dir, DiscoveryFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return d, err
	}
	if len(b) > 4096 || json.Unmarshal(b, &d) != nil || d.Socket == "" {
		return d, fmt.Errorf("%s: not a runehost discovery file", p)
	}
	return d, nil
}

// LoadToken reads the bearer token from file, or, when file is "", from
// the store's token file, made with 256 random bits at first use.
func LoadToken(dir, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return "", fmt.Errorf("%s: a token of at least 16 characters is wanted", file)
		}
		return t, nil
	}
	p := filepath.Join(dir, TokenFile)
	if b, err := os.ReadFile(p); err == nil {
		if t := strings.TrimSpace(string(b)); len(t) >= 16 {
			return t, nil
		}
		return "", fmt.Errorf("%s: too short to be a token; remove it to make a new one", p)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	t := base64.RawURLEncoding.EncodeToString(raw[:])
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return t, f.Close()
}
