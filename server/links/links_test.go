// links_test.go checks that only a live link's exact token opens its run,
// and that the store never holds a token.

package links

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
	_ "github.com/runehost/runehost/store/jetstream" // the backend RUNEHOST_STORE_BACKEND=jetstream asks for (make test-jetstream)
)

// fixture is links on an in-memory store with a clock the test moves.
func fixture(t *testing.T) (*Links, *store.Store, *int64) {
	t.Helper()
	s, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := int64(1_800_000_000_000)
	return New(s, func() int64 { return now }), s, &now
}

func TestLinkResolve(t *testing.T) {
	l, _, _ := fixture(t)
	tok, link, err := l.Create("r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(b) < 16 {
		t.Fatalf("token %q: %d bytes, %v", tok, len(b), err)
	}
	if link.Expires-link.Created != DefaultTTL.Milliseconds() || link.Run != "r1" || len(link.ID) != 12 {
		t.Fatalf("link %+v", link)
	}
	if run, err := l.Resolve(tok); err != nil || run != "r1" {
		t.Fatalf("resolve: %q, %v", run, err)
	}
	tok2, _, _ := l.Create("r1", 0)
	if tok2 == tok {
		t.Fatal("two links, one token")
	}
	// One character off, truncated, padded, empty, other alphabets: none opens.
	off := []byte(tok)
	off[5] ^= 1
	for _, bad := range []string{string(off), tok[:len(tok)-1], tok + "=", "", "r1", strings.ToUpper(tok), tok + "A"} {
		if run, err := l.Resolve(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("resolve %q: %q, %v", bad, run, err)
		}
	}
}

func TestLinkExpires(t *testing.T) {
	l, _, now := fixture(t)
	tok, _, _ := l.Create("r1", time.Hour)
	*now += time.Hour.Milliseconds() - 1
	if _, err := l.Resolve(tok); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	*now++
	if _, err := l.Resolve(tok); !errors.Is(err, ErrNotFound) {
		t.Fatalf("at expiry: %v", err)
	}
	if ls, _ := l.List("r1"); len(ls) != 1 || ls[0].Live(*now) {
		t.Fatalf("listed %+v", ls)
	}
	// A day after expiry, listing deletes it.
	*now += 25 * time.Hour.Milliseconds()
	if ls, _ := l.List("r1"); len(ls) != 0 {
		t.Fatalf("a long-expired link listed: %+v", ls)
	}
}

func TestLinkRevoke(t *testing.T) {
	l, _, _ := fixture(t)
	a, la, _ := l.Create("r1", 0)
	b, _, _ := l.Create("r1", 0)
	c, _, _ := l.Create("r2", 0)
	if n, err := l.Revoke("r2", la.ID); err != nil || n != 0 {
		t.Fatalf("revoking r1's link as r2's: %d, %v", n, err)
	}
	if n, err := l.Revoke("r1", la.ID); err != nil || n != 1 {
		t.Fatalf("revoke one: %d, %v", n, err)
	}
	if _, err := l.Resolve(a); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoked link resolves: %v", err)
	}
	if _, err := l.Resolve(b); err != nil {
		t.Fatalf("the other link: %v", err)
	}
	if n, err := l.Revoke("r1", ""); err != nil || n != 1 {
		t.Fatalf("revoke all: %d, %v", n, err)
	}
	if _, err := l.Resolve(b); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoked link resolves: %v", err)
	}
	if _, err := l.Resolve(c); err != nil {
		t.Fatalf("r2's link: %v", err)
	}
	ls, _ := l.List("r1")
	if len(ls) != 2 || !ls[0].Revoked || !ls[1].Revoked {
		t.Fatalf("listed %+v", ls)
	}
}

// TestLinkStoresHashOnly scans every record: the token is in none, in any
// common encoding.
func TestLinkStoresHashOnly(t *testing.T) {
	l, s, _ := fixture(t)
	tok, _, _ := l.Create("r1", 0)
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	forms := [][]byte{[]byte(tok), raw, []byte(base64.StdEncoding.EncodeToString(raw))}
	n := 0
	err := s.View(func(tx *store.Tx) error {
		return tx.Scan(store.Key(""), func(k store.Key, _ func(any) error) (bool, error) {
			v, _, err := tx.GetRaw(k)
			for _, f := range forms {
				if bytes.Contains(k, f) || bytes.Contains(v, f) {
					t.Errorf("record %s holds the token", k)
				}
			}
			n++
			return true, err
		})
	})
	if err != nil || n == 0 {
		t.Fatalf("scanned %d records: %v", n, err)
	}
}

// TestLinkMalformedRecord: a record that does not decode is an error naming
// its key, never a panic.
func TestLinkMalformedRecord(t *testing.T) {
	l, s, _ := fixture(t)
	tok, _, _ := l.Create("r1", 0)
	k := store.K(kind, hashOf(tok))
	var good []byte
	s.View(func(tx *store.Tx) error { good, _, _ = tx.GetRaw(k); return nil })
	if err := Verify(k, good); err != nil {
		t.Fatalf("verify a sound link: %v", err)
	}
	if err := Verify(store.K(kind, hashOf("other")), good); err == nil {
		t.Fatal("verify a link under another hash: no error")
	}
	for _, b := range [][]byte{{0xff}, {0xa1, 0x01, 0x63, 'a', 'b', 'c'}, {0xa0}} {
		s.Update(store.Synced, func(tx *store.Tx) error { return tx.PutRaw(k, b) })
		if _, err := l.Resolve(tok); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), k.String()) {
			t.Errorf("resolve over %x: %v", b, err)
		}
		if _, err := l.List("r1"); err == nil || !strings.Contains(err.Error(), k.String()) {
			t.Errorf("list over %x: %v", b, err)
		}
		if _, err := l.Revoke("r1", ""); err == nil {
			t.Errorf("revoke over %x: no error", b)
		}
		if err := Verify(k, b); err == nil || !strings.Contains(err.Error(), k.String()) {
			t.Errorf("verify %x: %v", b, err)
		}
	}
}

// store verify knows a link's record: it is no "record of no kind".
func TestLinkRecordsVerify(t *testing.T) {
	l, s, _ := fixture(t)
	if _, _, err := l.Create("r1", 0); err != nil {
		t.Fatal(err)
	}
	problems, n, err := host.VerifyRecords(s)
	if err != nil || len(problems) != 0 || n == 0 {
		t.Fatalf("verify: %d records, %v, %v", n, problems, err)
	}
}
