// fuzz_test.go: any text, however hostile, is redacted without a panic,
// into valid UTF-8, in one pass whose readers stay inside the text; and a
// text whose every byte pair no trigger begins with comes out unchanged.

package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzRedact(f *testing.F) {
	for _, c := range classPositives {
		f.Add(c.text)
	}
	for _, c := range classNegatives {
		f.Add(c.text)
	}
	for _, s := range []string{"-----BEGIN RSA PRIVATE KEY-----", `\"password\":\"`, "xoxb-", "a://b:c@", " -u ':", "password: |\n", "key[", "eyJ.eyJ."} {
		f.Add(s)
		f.Add(strings.Repeat(s, 40))
	}
	// Past the bounded first reads (1 KiB): a review found a panic there.
	f.Add("password=" + strings.Repeat(`\`, 1100) + `"x`)
	f.Add(`"token": ` + strings.Repeat(`\`, 1100))
	f.Add("xoxb-" + strings.Repeat("a", 1100) + " xoxb-1234567890-abcdef")
	f.Add("X-Key: " + strings.Repeat("a ", 700))
	r := New("Hq7-sentinel-9Zx", "k3y!")
	f.Fuzz(func(t *testing.T, s string) {
		got := r.String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 out of %q: %q", s, got)
		}
		if utf8.ValidString(s) && !strings.Contains(got, Mark) && got != s {
			t.Fatalf("changed without a mark: %q -> %q", s, got)
		}
		if !anyPair(s) && utf8.ValidString(s) && got != s {
			t.Fatalf("no trigger, yet changed: %q -> %q", s, got)
		}
	})
}

// anyPair reports whether a trigger or a host secret could begin anywhere
// in s.
func anyPair(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		k := int(s[i])<<8 | int(s[i+1])
		if machine.starts[k/64]&(1<<(k%64)) != 0 {
			return true
		}
		if c := fold[s[i]]; c == 'h' || c == 'k' {
			return true // the host secrets of this fuzz begin with h or k
		}
	}
	return false
}
