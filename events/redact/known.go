// known.go holds the host's own secrets as the redactor matches them: each
// in its raw form and its common encodings (hex, base64 standard and
// URL-safe at every alignment, URL and JSON escaping), in any ASCII case.

package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// Lengths of host secrets, in bytes. A secret of MinSecret or more is
// matched in every form and case. A shorter one, down to MinShortSecret, is
// matched only raw, exactly and as a whole word, and only if it mixes
// letters with digits or symbols: a short word (a placeholder key such as
// "dummy") or number is ordinary text, and an encoding of a short secret
// would be a few characters common in any base64. Shorter ones are ignored.
const (
	MinSecret      = 8
	MinShortSecret = 4
)

// known is the compiled set of the host's secrets.
type known struct {
	forms [][]byte // ASCII lower-cased, longest first
	short []string // exact, matched as whole words
	least int      // the length of the shortest of either
	// pairs has bit a<<8|b set when a form or a short secret begins with
	// bytes a, b (ASCII lower-cased); first lists them by that pair (a
	// short secret i as ^i). A text is scanned once, whatever the count of
	// forms, and compared only where a pair begins.
	pairs *[1 << 16 / 64]uint64
	first map[uint16][]int
}

func compileKnown(secrets []string) known {
	var k known
	seen := map[string]bool{}
	for _, s := range secrets {
		switch {
		case len(s) >= MinSecret:
			for _, f := range Forms(s) {
				f = foldASCII(f)
				if !seen[f] {
					seen[f] = true
					k.forms = append(k.forms, []byte(f))
				}
			}
		case len(s) >= MinShortSecret && mixed(s) && !seen["\x00"+s]:
			seen["\x00"+s] = true
			k.short = append(k.short, s)
		}
	}
	slices.SortFunc(k.forms, func(a, b []byte) int { return len(b) - len(a) })
	slices.SortFunc(k.short, func(a, b string) int { return len(b) - len(a) })
	if len(k.forms) > 0 {
		k.least = len(k.forms[len(k.forms)-1])
	}
	if len(k.short) > 0 && (k.least == 0 || len(k.short[len(k.short)-1]) < k.least) {
		k.least = len(k.short[len(k.short)-1])
	}
	if k.least > 0 {
		k.pairs, k.first = new([1 << 16 / 64]uint64), map[uint16][]int{}
		add := func(a, b byte, id int) {
			p := uint16(fold[a])<<8 | uint16(fold[b])
			k.pairs[p/64] |= 1 << (p % 64)
			k.first[p] = append(k.first[p], id)
		}
		for i, f := range k.forms {
			add(f[0], f[1], i)
		}
		for i, w := range k.short {
			add(w[0], w[1], ^i)
		}
	}
	return k
}

// fold is ASCII lower-casing as a table.
var fold = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

// Forms returns the texts that stand for secret s in a longer text: s
// itself, its hex, its URL query and path escapes and JSON string escape,
// and for base64 (standard and URL-safe, padded or not, and URL-escaped)
// the part of its encoding that is the same wherever s starts in the
// encoded bytes: a secret at offset 0, 1 or 2 of a 3-byte group shares its
// first and last characters with its neighbours, the characters between
// depend on s alone.
func Forms(s string) []string {
	var out []string
	for _, f := range Encodings(s) {
		out = append(out, f.Text)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A Form is one text that stands for a secret, and the encoding that
// gives it.
type Form struct {
	Encoding string // "raw", "hex", "base64", "base64url", "URL query escape"...
	Text     string
}

// Encodings returns the forms of s that Forms lists, each text once, under
// the first encoding that gives it (a plain token's URL escape is itself,
// raw; its URL-safe base64 is its standard one).
func Encodings(s string) []Form {
	out := []Form{{"raw", s}, {"hex", hex.EncodeToString([]byte(s))}}
	var escaped []Form // after every base64, so that those are named first
	escaped = append(escaped, Form{"URL query escape", url.QueryEscape(s)}, Form{"URL path escape", url.PathEscape(s)})
	if j, err := json.Marshal(s); err == nil {
		js := string(j[1 : len(j)-1])
		escaped = append(escaped, Form{"JSON escape", js}, Form{"JSON escape", strings.ReplaceAll(js, "/", `\/`)}) // some encoders escape the slash
	}
	for _, enc := range []struct {
		name string
		enc  *base64.Encoding
	}{{"base64", base64.RawStdEncoding}, {"base64url", base64.RawURLEncoding}} {
		for align := range 3 {
			in := innerBase64(enc.enc, s, align)
			out = append(out, Form{enc.name, in})
			escaped = append(escaped, Form{enc.name + ", URL-escaped", url.QueryEscape(in)})
		}
	}
	out = append(out, escaped...)
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(f Form) bool {
		dup := seen[f.Text]
		seen[f.Text] = true
		return dup
	})
}

// Find names the encoding in which text holds secret, by the redactor's
// rule (any of its Encodings, in any ASCII case), or returns "" if it holds
// none; a secret under MinSecret bytes is never found (its encodings would
// be a few characters common in any text). A raw secret in another case
// than its own is named so.
func Find(text, secret string) string {
	if len(secret) < MinSecret || len(text) < len(secret) { // no form is shorter than the raw secret
		return ""
	}
	folded := foldASCII(text)
	for _, f := range Encodings(secret) {
		if strings.Contains(folded, foldASCII(f.Text)) {
			if f.Encoding == "raw" && !strings.Contains(text, secret) {
				return "raw, in another letter case"
			}
			return f.Encoding
		}
	}
	return ""
}

// innerBase64 is the part of the base64 of s, preceded by align other
// bytes, that only s decides: the characters whose six bits all fall in s.
func innerBase64(enc *base64.Encoding, s string, align int) string {
	b := make([]byte, align+len(s))
	copy(b[align:], s)
	e := enc.EncodeToString(b)
	from, to := (8*align+5)/6, 8*(align+len(s))/6
	return e[from:to]
}

// strip replaces every host secret in s, in any of its forms, with Mark.
func (k *known) strip(s string) string {
	if k.least == 0 || len(s) < k.least {
		return s // nothing to match, or too short to hold any form
	}
	var spans [][2]int
	for i := 0; i+1 < len(s); i++ {
		p := uint16(fold[s[i]])<<8 | uint16(fold[s[i+1]])
		if k.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, id := range k.first[p] {
			if id >= 0 {
				if f := k.forms[id]; foldedAt(s, i, f) {
					spans = append(spans, [2]int{i, i + len(f)})
				}
				continue
			}
			w := k.short[^id]
			end := i + len(w)
			if strings.HasPrefix(s[i:], w) && (i == 0 || !wordByte(s[i-1])) && (end == len(s) || !wordByte(s[end])) {
				spans = append(spans, [2]int{i, end})
			}
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	out.Grow(len(s))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		out.WriteString(s[last:start])
		out.WriteString(Mark)
		last = end
	}
	out.WriteString(s[last:])
	return out.String()
}

// foldedAt reports whether s, ASCII lower-cased, holds f at i.
func foldedAt(s string, i int, f []byte) bool {
	if len(s)-i < len(f) {
		return false
	}
	for j, c := range f {
		if fold[s[i+j]] != c {
			return false
		}
	}
	return true
}

// foldASCII lower-cases ASCII letters only, so that byte offsets stay.
func foldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// mixed reports whether s has a letter and something else: a word or a
// number alone is ordinary text.
func mixed(s string) bool {
	var letter, other bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			letter = true
		} else {
			other = true
		}
	}
	return letter && other
}
