// known_test.go: a host secret is taken out raw and in each common
// encoding, at every base64 alignment, padded or not, in any ASCII case;
// short secrets and ordinary text (base64 blobs included) are left alone;
// Find finds a secret in exactly those texts.

package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const hostKey = "sk-Host/Key+Qx81=zz~ab"

// encodings of a byte string, as a reply might carry it.
var encodings = map[string]func([]byte) string{
	"raw":             func(b []byte) string { return string(b) },
	"upper":           func(b []byte) string { return asciiCase(b, 'a', 'z', 'A'-'a') },
	"lower":           func(b []byte) string { return asciiCase(b, 'A', 'Z', 'a'-'A') },
	"hex":             hex.EncodeToString,
	"HEX":             func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) },
	"base64":          base64.StdEncoding.EncodeToString,
	"base64 raw":      base64.RawStdEncoding.EncodeToString,
	"base64url":       base64.URLEncoding.EncodeToString,
	"base64url raw":   base64.RawURLEncoding.EncodeToString,
	"base64 in a URL": func(b []byte) string { return url.QueryEscape(base64.StdEncoding.EncodeToString(b)) },
	"query":           func(b []byte) string { return url.QueryEscape(string(b)) },
	"query lower":     func(b []byte) string { return strings.ToLower(url.QueryEscape(string(b))) },
	"path":            func(b []byte) string { return url.PathEscape(string(b)) },
	"json":            func(b []byte) string { j, _ := json.Marshal(string(b)); return string(j[1 : len(j)-1]) },
	"json, slash": func(b []byte) string {
		j, _ := json.Marshal(string(b))
		return strings.ReplaceAll(string(j[1:len(j)-1]), "/", `\/`)
	},
}

// asciiCase shifts the ASCII letters from lo to hi by d: other bytes stay.
func asciiCase(b []byte, lo, hi byte, d int) string {
	out := []byte(string(b))
	for i, c := range out {
		if lo <= c && c <= hi {
			out[i] = byte(int(c) + d)
		}
	}
	return string(out)
}

// leftOf reports a piece of enc(secret) of 6 characters or more that
// survived in got: at most a character or two at each edge of an encoded
// secret may stay (they hold bits of its neighbours too).
func leftOf(got, encoded string) string {
	g := strings.ToLower(got)
	e := strings.ToLower(encoded)
	for i := 0; i+6 <= len(e); i++ {
		if strings.Contains(g, e[i:i+6]) {
			return e[i : i+6]
		}
	}
	return ""
}

func TestHostSecretEveryEncoding(t *testing.T) {
	r := New(hostKey)
	for name, enc := range encodings {
		for before := range 3 {
			for after := range 3 {
				plain := []byte(strings.Repeat("<", before) + hostKey + strings.Repeat(">", after))
				text := "the reply: " + enc(plain) + " (end)"
				for _, got := range []string{r.Known(text), r.String(text)} {
					if piece := leftOf(got, decided(name, hostKey, before)); piece != "" || !strings.Contains(got, Mark) {
						t.Errorf("%s, %d bytes before, %d after: %q left in %q", name, before, after, piece, got)
					}
					if !strings.HasPrefix(got, "the reply: ") || !strings.HasSuffix(got, " (end)") {
						t.Errorf("%s: the text around was changed: %q", name, got)
					}
				}
			}
		}
	}
}

// decided is the part of an encoding of a text holding secret after before
// other bytes that only the secret decides: all of it, but for base64, its
// inner part at that alignment.
func decided(name, secret string, before int) string {
	if !strings.HasPrefix(name, "base64") {
		return encodings[name]([]byte(secret))
	}
	e := base64.RawStdEncoding
	if strings.HasPrefix(name, "base64url") {
		e = base64.RawURLEncoding
	}
	in := innerBase64(e, secret, before%3)
	if name == "base64 in a URL" {
		in = url.QueryEscape(in)
	}
	return in
}

func TestShortSecrets(t *testing.T) {
	r := New("dummy", "none", "123456", "ab12", "k3y-abc", "x1")
	for _, c := range []struct{ in, want string }{
		{"a dummy value, none at all, 123456 rows", "a dummy value, none at all, 123456 rows"}, // words and numbers are ordinary text
		{"key ab12.", "key " + Mark + "."},
		{"xab12y and ab123", "xab12y and ab123"}, // only as a whole word
		{"token=k3y-abc;", "token=" + Mark + ";"},
		{"K3Y-ABC", "K3Y-ABC"}, // short ones only exactly
		{"x1 y2", "x1 y2"},     // under MinShortSecret: ignored
	} {
		if got := r.Known(c.in); got != c.want {
			t.Errorf("Known(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestHostSecretNoFalsePositives(t *testing.T) {
	r := New(hostKey, "another-host-secret-77")
	texts := append([]string{
		base64.StdEncoding.EncodeToString([]byte(strings.Repeat("ordinary bytes, nothing secret. ", 40))),
		hex.EncodeToString([]byte("sk-Host/Key+Qx81=z")), // a prefix of a secret is not the secret
		"sk-Host/Key+Qx81=zz~a",
		"SK-HOST",
	}, lookAlikes...)
	for _, s := range texts {
		if got := r.Known(s); got != s {
			t.Errorf("changed:\n%s\n->\n%s", s, got)
		}
	}
}

func TestFormsStable(t *testing.T) {
	// The inner part does not depend on the neighbours, at every alignment.
	for align := range 3 {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			in := innerBase64(enc, hostKey, align)
			for _, n := range []string{"\x00\x00", "\xff\xfe", "ab"} {
				if got := enc.EncodeToString([]byte(n[:align] + hostKey + "!?")); !strings.Contains(got, in) {
					t.Fatalf("align %d: %q not in %q", align, in, got)
				}
			}
			if len(in) < 10 {
				t.Fatalf("align %d: inner part %q is short", align, in)
			}
		}
	}
}

func FuzzHostSecretForms(f *testing.F) {
	f.Add([]byte("ab"), []byte("c"), "sk-fuzz-secret-01", uint8(0))
	f.Add([]byte{}, []byte{0xff}, "AAAAAAAAAAAA", uint8(5))
	f.Add([]byte("x"), []byte("yz"), "p@ss w/rd+=?&", uint8(9))
	names := slices.Sorted(maps.Keys(encodings))
	f.Fuzz(func(t *testing.T, before, after []byte, secret string, which uint8) {
		if len(secret) < MinSecret || len(before) > 64 || len(after) > 64 {
			return
		}
		name := names[int(which)%len(names)]
		text := append(append(append([]byte{}, before...), secret...), after...)
		if strings.HasPrefix(name, "json") && !utf8.Valid(text) {
			return // JSON replaces invalid bytes: what is left is not the secret
		}
		got := New(secret).Known("[" + encodings[name](text) + "]")
		// In ASCII case, as the redactor matches: strings.ToLower would make
		// every invalid byte U+FFFD, and different bytes the same.
		if d := decided(name, secret, len(before)); strings.Contains(asciiLower(got), asciiLower(d)) {
			t.Fatalf("%s: %q survived in %q", name, d, got)
		}
	})
}

// asciiLower lowers ASCII letters only, leaving every other byte as it is.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Find sees a secret where Known strips one, and names the encoding.
func TestFind(t *testing.T) {
	for name, enc := range encodings {
		for before := range 3 {
			text := "the reply: " + enc([]byte(strings.Repeat("<", before)+hostKey+">")) + " (end)"
			if Find(text, hostKey) == "" {
				t.Errorf("%s, %d bytes before: not found in %q", name, before, text)
			}
		}
	}
	for text, want := range map[string]string{
		"k=" + hostKey:                                              "raw",
		"k=" + strings.ToUpper(hostKey):                             "raw, in another letter case",
		hex.EncodeToString([]byte(hostKey)):                         "hex",
		url.PathEscape(hostKey):                                     "URL path escape",
		url.QueryEscape(hostKey):                                    "URL query escape",
		base64.RawURLEncoding.EncodeToString([]byte("a" + hostKey)): "base64url", // its "-"
	} {
		if got := Find(text, hostKey); got != want {
			t.Errorf("Find(%q) = %q, want %q", text, got, want)
		}
	}
	for _, s := range append([]string{hex.EncodeToString([]byte("sk-Host/Key+Qx81=z")), "sk-Host/Key+Qx81=zz~a"}, lookAlikes...) {
		if got := Find(s, hostKey); got != "" {
			t.Errorf("Find(%q) = %q", s, got)
		}
	}
	if got := Find("k3y-abc", "k3y-abc"); got != "" {
		t.Errorf("a short secret: %q", got)
	}
	// Forms is Encodings' texts, each once.
	var texts []string
	for _, f := range Encodings(hostKey) {
		texts = append(texts, f.Text)
	}
	slices.Sort(texts)
	if !slices.Equal(texts, Forms(hostKey)) || len(slices.Compact(slices.Clone(texts))) != len(texts) {
		t.Errorf("Encodings %q, Forms %q", texts, Forms(hostKey))
	}
}
