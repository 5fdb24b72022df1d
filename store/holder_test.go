// holder_test.go: the holder file names the command without its flags,
// whose values may be secrets, and a second opener is told no more.

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHolderKeepsNoFlags(t *testing.T) {
	old := os.Args
	defer func() { os.Args = old }()
	os.Args = []string{"runehost", "slack", "--bot-token", "xoxb-holder-secret-42", "--progs=./p"}
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := os.ReadFile(filepath.Join(dir, holderFile))
	if err != nil || strings.Contains(string(b), "xoxb") || !strings.Contains(string(b), `"command":"runehost slack"`) {
		t.Fatalf("holder %s %v", b, err)
	}
	_, err = Open(Options{Dir: dir})
	var le *LockedError
	if !errors.As(err, &le) || strings.Contains(err.Error(), "xoxb") || !strings.Contains(err.Error(), "runehost slack") {
		t.Fatalf("second open: %v", err)
	}
}
