// shape.go holds what a value's own shape says: nothing set (a
// placeholder), a reference to where the secret is kept, or a string that
// looks like a credential (long enough, mixed, not a word, an id or a path).

package redact

import (
	"math"
	"strings"
	"unicode/utf8"
)

// placeholder reports whether v (unquoted) stands for no secret: empty,
// a literal, a mask, a template or a variable to be filled in.
func placeholder(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, Mark) {
		return true // nothing, or a host secret already taken out
	}
	if len(v) <= len("[redacted]") {
		var b [16]byte
		if literals[lowerInto(b[:0], v)] {
			return true
		}
	}
	if r, n := utf8.DecodeRuneInString(v); strings.ContainsRune("*xX.•●-_#", r) && strings.Count(v, string(r)) == len(v)/n {
		return true // ********, ••••••••, xxxxxxxx, ...
	}
	switch v[0] {
	case '$', '%', '{', '<', '#', '[':
	default:
		return false
	}
	for _, p := range []string{"${", "$(", "{{", "%(", "<%", "#{", "$env:", "[["} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	switch {
	case v[0] == '$' && ident(v[1:]): // $DB_PASSWORD
		return true
	case len(v) > 2 && v[0] == '%' && v[len(v)-1] == '%' && ident(v[1:len(v)-1]): // %PASSWORD%
		return true
	case v[0] == '<' && v[len(v)-1] == '>': // <token>, <your-api-key>
		return true
	}
	return false
}

// literals stand for no secret: nothing set, a flag, a mask, a type.
var literals = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{"null", "nil", "none", "true", "false", "undefined", "yes", "no", "on", "off",
		"changeme", "redacted", "[redacted]", "<redacted>", "(redacted)", "[filtered]", "filtered",
		"hidden", "masked", "optional", "required", "string", "str", "bool", "int"} {
		m[w] = true
	}
	return m
}()

// ident reports whether v is an identifier: [A-Za-z_][A-Za-z0-9_]*.
func ident(v string) bool {
	if v == "" || digit(v[0]) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !alnum(c) && c != '_' {
			return false
		}
	}
	return true
}

// reference reports whether a bare value names where a secret is kept
// rather than being one: cfg.APIKey, process.env.TOKEN, settings.SECRET.
func reference(v string) bool {
	dots := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '.':
			if i == 0 || v[i-1] == '.' || i+1 == len(v) || digit(v[i+1]) {
				return false
			}
			dots++
		case digit(c):
			return false // a token's parts mix digits in: eyJraWQiOiIx.abc
		case !alnum(c) && c != '_' && c != '$':
			return false
		}
	}
	return dots > 0 && !digit(v[0])
}

// secretShaped reports whether v looks like a credential by itself: a
// vendor's prefix, or long enough, of mixed characters and not a word, a
// name, a number, an id, a version, a path or an address.
func secretShaped(v string) bool {
	if vendorPrefixed(v) {
		return true
	}
	if len(v) < 8 || len(v) > 8192 || uuid(v) {
		return false
	}
	var lo, up, dg, other int
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case lower(c):
			lo++
		case upper(c):
			up++
		case digit(c):
			dg++
		case c == ':' || c == '@' || c == ' ' || c == '\t' || c == '\\' || c == ',' || c >= 0x80:
			return false // user:42, a@b, prose, escapes: structured, not random
		default:
			other++
		}
	}
	if v[0] == '/' || v[0] == '.' || v[0] == '~' || dg == 0 && other == 0 && len(v) < 20 {
		return false // a path, or a word or camelCase name
	}
	if lo+up == 0 || wordy(v) || words(v) {
		return false // a number, a version, a date; created_at, prod-db-2; node-cache-Linux-x64-…
	}
	return entropy(v) >= 2.5
}

// digest reports whether v is a SHA-1 or SHA-256 digest in hex: a commit,
// a content address. After key= it is a cache's key; after sig= an HMAC.
func digest(v string) bool {
	return (len(v) == 40 || len(v) == 64) && hexOnly(v)
}

func hexOnly(v string) bool {
	for i := 0; i < len(v); i++ {
		if !hexDigit(v[i]) {
			return false
		}
	}
	return true
}

// words reports whether v is mostly words joined by - _ . or /: three
// parts or more, and two fifths of v in parts of three letters or more, each all
// lower case, all upper case or capitalized (node-cache-Linux-x64-npm-8c8a3c).
func words(v string) bool {
	parts, wordish := 0, 0
	for rest := v; rest != ""; {
		part := rest
		if i := strings.IndexAny(rest, "-_./"); i >= 0 {
			part, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		parts++
		if len(part) >= 3 && word(part) {
			wordish += len(part)
		}
	}
	return parts >= 3 && 5*wordish >= 2*len(v)
}

// word reports whether p is letters only: all lower case, all upper case,
// or capitalized.
func word(p string) bool {
	up := 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case upper(c):
			up++
		case !lower(c):
			return false
		}
	}
	return up == 0 || up == len(p) || up == 1 && upper(p[0])
}

// wordy reports whether v is words and numbers joined by - _ . or /, each
// part all lower case, all upper case or all digits: us-east-1, created_at.
func wordy(v string) bool {
	kind := 0 // 1 lower, 2 upper, 3 digit
	for i := 0; i < len(v); i++ {
		c := v[i]
		k := 0
		switch {
		case lower(c):
			k = 1
		case upper(c):
			k = 2
		case digit(c):
			k = 3
		default:
			kind = 0
			continue
		}
		if kind != 0 && k != kind {
			return false
		}
		kind = k
	}
	return true
}

// uuid reports whether v is 8-4-4-4-12 hex digits.
func uuid(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := v[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !hexDigit(c) {
			return false
		}
	}
	return true
}

func hexDigit(c byte) bool { return digit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// entropy is the Shannon entropy of v's bytes, in bits per byte.
func entropy(v string) float64 {
	var n [256]int
	for i := 0; i < len(v); i++ {
		n[v[i]]++
	}
	h := 0.0
	for _, k := range n {
		if k > 0 {
			p := float64(k) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// secretish reports whether a bare word after a strong name in running
// text could be the secret: long enough, and not only letters ("use the
// --password flag", "password: see below" are prose).
func secretish(v string) bool {
	if len(v) < 6 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !lower(v[i]) && !upper(v[i]) {
			return true
		}
	}
	return false
}
