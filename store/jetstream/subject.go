// subject.go holds how keys become NATS subjects for the JetStream backend:
// one token per part, escaped, and back.

package jetstream

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/runehost/runehost/store"
)

// tokenSafe reports the bytes a subject token keeps as they are; every other
// byte (the subject's own '.', '*', '>', spaces, '~', non-ASCII) is written
// "~" and two hex digits, and an empty part is "~".
func tokenSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

const hexDigits = "0123456789abcdef"

// appendToken appends part, escaped, as one token.
func appendToken(b []byte, part []byte) []byte {
	if len(part) == 0 {
		return append(b, '~')
	}
	for _, c := range part {
		if tokenSafe(c) {
			b = append(b, c)
		} else {
			b = append(b, '~', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return b
}

// keyTokens is a key's complete parts (each ended by 0x00) as tokens joined
// by '.', and what follows the last complete part (a prefix may end inside
// a part).
func keyTokens(k store.Key) (tokens string, partial []byte) {
	var b []byte
	for {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return string(b), k
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = appendToken(b, k[:i])
		k = k[i+1:]
	}
}

// subjectKey decodes the tokens after a subject's prefix back into a key.
func subjectKey(tokens string) (store.Key, error) {
	var k store.Key
	for _, t := range strings.Split(tokens, ".") {
		if t == "~" {
			k = append(k, 0)
			continue
		}
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c != '~' {
				k = append(k, c)
				continue
			}
			if i+2 >= len(t) {
				return nil, fmt.Errorf("subject token %q: a cut escape", t)
			}
			hi, lo := strings.IndexByte(hexDigits, t[i+1]), strings.IndexByte(hexDigits, t[i+2])
			if hi < 0 || lo < 0 {
				return nil, fmt.Errorf("subject token %q: a bad escape", t)
			}
			k = append(k, byte(hi<<4|lo))
			i += 2
		}
		k = append(k, 0)
	}
	return k, nil
}
