// subject_test.go checks that every key becomes a subject and back.

package jetstream

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runehost/runehost/store"
)

func TestKeySubjectRoundTrip(t *testing.T) {
	for _, k := range []store.Key{store.K("inv", "r3.2.1"), store.K("grant", "*", "fs.read /a b/**"), store.K("ev", "r1", uint64(7)), store.K("x", ""), store.K("seal"), store.K("ü", "~7e", ">")} {
		tok, partial := keyTokens(k)
		if len(partial) > 0 {
			t.Fatalf("%s: partial %q", k, partial)
		}
		if strings.ContainsAny(tok, " *>\t") {
			t.Fatalf("%s: token %q has subject characters", k, tok)
		}
		back, err := subjectKey(tok)
		if err != nil || !bytes.Equal(back, k) {
			t.Fatalf("%s → %q → %q, %v", k, tok, back, err)
		}
	}
}

func FuzzKeySubject(f *testing.F) {
	f.Add("inv", "r3.2.1")
	f.Add("", "~")
	f.Fuzz(func(t *testing.T, kind, part string) {
		if strings.IndexByte(kind, 0) >= 0 || strings.IndexByte(part, 0) >= 0 {
			return
		}
		k := store.K(kind, part)
		tok, _ := keyTokens(k)
		back, err := subjectKey(tok)
		if err != nil || !bytes.Equal(back, k) {
			t.Fatalf("%q → %q → %q, %v", k, tok, back, err)
		}
	})
}
