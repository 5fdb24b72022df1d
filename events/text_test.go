// text_test.go: StripControl's fast path answers as its slow path does.

package events

import (
	"math/rand/v2"
	"testing"
)

func TestStripControlFastPath(t *testing.T) {
	pieces := []string{"a", "Z", " ", "abcdefghijklmnop", "0123456", "\n", "\t", "\r", "\x1b[31m", "\x00", "\x7f", "é", "\u0085", "\u009f", "\u00a0",
		"\u2028", "\u2029", "\u2027", "\xe2\x80", "\xc2", "\xff", "日本", "\U0001F600", "«redacted»"}
	rng := rand.New(rand.NewPCG(15, 15))
	for range 20000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		s := string(b)
		if got, want := StripControl(s), stripControl(s); got != want {
			t.Fatalf("StripControl(%q) = %q, the slow path says %q", s, got, want)
		}
	}
}
