// fuzz_test.go: a planted secret never survives redaction plus capping,
// wherever it lands (at a token boundary, for the formats anchored at one)
// and wherever the cap falls.

package events

import (
	"strings"
	"testing"

	"github.com/runehost/runehost/events/redact"
)

func FuzzCleanNeverLeaks(f *testing.F) {
	f.Add("config:\n", "\nmore text", 40, uint8(0))
	f.Add("export A=", "", 3, uint8(1))
	f.Add("x", "y", 0, uint8(2))
	f.Add(strings.Repeat("a", 300), "", 250, uint8(3))
	const host = "Hq7-sentinel-9Zx"
	planted := []string{
		host,
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a",
		"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
		"AKIAIOSFODNN7EXAMPLE",
		"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz",
	}
	anchored := map[string]bool{"AKIAIOSFODNN7EXAMPLE": true}
	r := redact.New(host)
	f.Fuzz(func(t *testing.T, before, after string, n int, which uint8) {
		secret := planted[int(which)%len(planted)]
		// The fuzzer may write part of the secret itself; take it out, so
		// that any fragment found afterwards came from the planted one.
		for _, part := range []*string{&before, &after} {
			for strings.Contains(*part, secret[:8]) {
				*part = strings.ReplaceAll(*part, secret[:8], "")
			}
		}
		// A format matched only at a token boundary (an AWS key id: twenty
		// capitals inside a longer run of them are a word) is planted at one.
		if anchored[secret] {
			before, after = before+" ", " "+after
		}
		text := before + secret + after
		got := Clean(r, text, n%10000)
		for k := 8; k <= len(secret); k++ {
			if strings.Contains(got, secret[:k]) {
				t.Fatalf("fragment %q of the secret survived in %q", secret[:k], got)
			}
		}
	})
}
