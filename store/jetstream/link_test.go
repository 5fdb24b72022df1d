// link_test.go checks that only what uses this backend links NATS (the
// engine, the server, the acts and store itself do not), and that the
// store finds the backend's optional methods.

package jetstream

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/runehost/runehost/store"
)

func TestEngineDoesNotLinkNATS(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages' imports")
	}
	pkgs := []string{"store", "host/...", "server/...", "acts/...", "slack/...", "guest/...", "wasmvm/...", "checkpoint/...", "events/..."}
	args := []string{"list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}
	for _, p := range pkgs {
		args = append(args, "github.com/runehost/runehost/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		n++
		if strings.HasSuffix(pkg, "/acttest") { // a helper of tests, which run on this backend too
			continue
		}
		for _, d := range strings.Fields(deps) {
			if strings.HasPrefix(d, "github.com/nats-io/") || d == "github.com/runehost/runehost/store/jetstream" {
				t.Errorf("%s links %s", pkg, d)
				break
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list named %d packages:\n%s", n, out)
	}
}

// The store's optional methods reach the backend: a Store on JetStream
// carries messages between hosts, counts its trips and says it is shared.
func TestBackendHasItsExtras(t *testing.T) {
	var s any = &jsStore{}
	if _, ok := s.(interface {
		Serve(string, func([]byte) []byte) (func(), error)
		Ask(context.Context, string, []byte) ([]byte, error)
		Tell(string, []byte)
		Hear(string, func([]byte)) (func(), error)
	}); !ok {
		t.Error("no Serve, Ask, Tell and Hear: the hosts cannot reach each other")
	}
	if _, ok := s.(interface{ Trips() store.Trips }); !ok {
		t.Error("no Trips")
	}
	if _, ok := s.(interface{ Shared() bool }); !ok {
		t.Error("no Shared: the engine would not claim its trees")
	}
	var tx any = &jsTx{}
	for name, ok := range map[string]bool{
		"Unchanged": func() bool { _, ok := tx.(interface{ Unchanged() (bool, error) }); return ok }(),
		"Settle":    func() bool { _, ok := tx.(interface{ Settle() error }); return ok }(),
		"Peek": func() bool {
			_, ok := tx.(interface {
				Peek(store.Key) ([]byte, bool, error)
			})
			return ok
		}(),
	} {
		if !ok {
			t.Errorf("no %s on the transaction", name)
		}
	}
}
