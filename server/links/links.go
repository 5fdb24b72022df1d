// Package links holds the capability links of run pages: unguessable
// tokens, kept only as their SHA-256, each read-only, scoped to one run
// (and its children), expiring and revocable. docs/page.md describes them.
package links

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// DefaultTTL is how long a link lives unless told otherwise.
const DefaultTTL = 7 * 24 * time.Hour

// tokenBytes is the token's randomness: 256 bits, twice what is needed.
const tokenBytes = 32

// idLen is the length of a link's id: the first hex digits of its hash.
const idLen = 12

// kind is the store's record kind of links: link/HASHHEX.
const kind = "link"

// ErrNotFound is a token that names no live link: unknown, malformed,
// expired or revoked. Callers must not tell these apart to the holder.
var ErrNotFound = errors.New("links: no such link")

// Link is a link as stored: never its token.
type Link struct {
	ID      string `cbor:"1,keyasint"` // the first 12 hex digits of the token's hash
	Run     string `cbor:"2,keyasint"`
	Created int64  `cbor:"3,keyasint"` // unix ms
	Expires int64  `cbor:"4,keyasint"` // unix ms
	Revoked bool   `cbor:"5,keyasint,omitempty"`
}

// Live reports whether a link still opens its page at time now (unix ms).
func (l Link) Live(now int64) bool { return !l.Revoked && now < l.Expires }

// Links keeps links in a store.
type Links struct {
	s     *store.Store
	clock func() int64 // unix ms
}

// New keeps links in s; clock gives the time in unix ms (nil: the wall clock).
func New(s *store.Store, clock func() int64) *Links {
	if clock == nil {
		clock = func() int64 { return time.Now().UnixMilli() }
	}
	return &Links{s: s, clock: clock}
}

// hashOf is the hex SHA-256 of a token: the only form of it that is stored.
func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Create makes a link to run that lives for ttl (0: DefaultTTL) and returns
// its token, which is shown once and never kept.
func (l *Links) Create(run string, ttl time.Duration) (string, Link, error) {
	if run == "" {
		return "", Link{}, errors.New("links: no run")
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Link{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(b[:])
	h := hashOf(token)
	now := l.clock()
	link := Link{ID: h[:idLen], Run: run, Created: now, Expires: now + ttl.Milliseconds()}
	err := l.s.Retry(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K(kind, h), link) })
	if err != nil {
		return "", Link{}, err
	}
	return token, link, nil
}

// Resolve returns the run a token opens, or ErrNotFound.
func (l *Links) Resolve(token string) (string, error) {
	// A well-formed token is exactly 43 base64url characters; anything else
	// is not looked up at all.
	if b, err := base64.RawURLEncoding.DecodeString(token); err != nil || len(b) != tokenBytes {
		return "", ErrNotFound
	}
	k := store.K(kind, hashOf(token))
	var link Link
	var found bool
	err := l.s.View(func(tx *store.Tx) error {
		var err error
		found, err = tx.Get(k, &link)
		return err
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", ErrNotFound
	}
	if err := check(k, link); err != nil {
		return "", err
	}
	if !link.Live(l.clock()) {
		return "", ErrNotFound
	}
	return link.Run, nil
}

// check says what is wrong with a link read back from the store under k.
func check(k store.Key, link Link) error {
	parts := k.Parts()
	if len(parts) != 2 || len(parts[1]) != 2*sha256.Size || link.ID != parts[1][:idLen] || link.Run == "" {
		return &store.RecordError{Key: k, Err: store.ErrCorrupt, Msg: fmt.Sprintf("a link %q of run %q", link.ID, link.Run)}
	}
	return nil
}

// List returns a run's links, live or not, oldest first. Links expired for
// longer than a day are deleted on the way.
func (l *Links) List(run string) ([]Link, error) {
	var out []Link
	var stale []store.Key
	now := l.clock()
	err := l.s.View(func(tx *store.Tx) error {
		out, stale = nil, nil // a View may run again
		return tx.Scan(store.K(kind), func(k store.Key, decode func(v any) error) (bool, error) {
			var link Link
			if err := decode(&link); err != nil {
				return false, err
			}
			if err := check(k, link); err != nil {
				return false, err
			}
			if now-link.Expires > int64(24*time.Hour/time.Millisecond) {
				stale = append(stale, append(store.Key(nil), k...))
			} else if link.Run == run {
				out = append(out, link)
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, err
	}
	if len(stale) > 0 {
		// Deleting is housekeeping: a failure leaves them for next time.
		_ = l.s.RetryInReserve(store.Buffered, func(tx *store.Tx) error {
			for _, k := range stale {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
	return out, nil
}

// Revoke revokes the run's link with id, or all of its links when id is "",
// and returns how many it revoked (links already revoked are not counted).
func (l *Links) Revoke(run, id string) (int, error) {
	n := 0
	err := l.s.RetryInReserve(store.Synced, func(tx *store.Tx) error {
		n = 0
		type hit struct {
			k    store.Key
			link Link
		}
		var hits []hit
		err := tx.Scan(store.K(kind), func(k store.Key, decode func(v any) error) (bool, error) {
			var link Link
			if err := decode(&link); err != nil {
				return false, err
			}
			if err := check(k, link); err != nil {
				return false, err
			}
			if link.Run == run && !link.Revoked && (id == "" || link.ID == id) {
				hits = append(hits, hit{append(store.Key(nil), k...), link})
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, h := range hits {
			h.link.Revoked = true
			if err := tx.Put(h.k, h.link); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// store verify knows the links' records.
func init() { host.RegisterRecordKind(kind, 1, Verify) }

// Verify checks a stored link record as Resolve reads it, for `runehost
// store verify`: it decodes strictly and sits under its own hash.
func Verify(k store.Key, b []byte) error {
	var link Link
	if err := store.Decode(k, b, &link); err != nil {
		return err
	}
	return check(k, link)
}
