// format.go holds the text forms of numbers and strings shared by the
// machine's str() and json_encode and by DataToJSON, so they always agree.

package checkpoint

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FormatFloat writes a float so that it reads back as the same float:
// plain decimals from 1e-4 up to 1e16 (always with a decimal point),
// exponent form outside that, "nan", "inf" and "-inf" for the rest.
func FormatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e16) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// AppendJSONString appends s as a JSON string: control characters, quote
// and backslash escaped; nothing else (no HTML escaping).
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigit(c>>4), hexDigit(c&15))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			// Valid JSON, but not valid JavaScript; escape like everyone does.
			b = append(b, `\u202`...)
			b = append(b, hexDigit(byte(r&15)))
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func hexDigit(n byte) byte { return "0123456789abcdef"[n] }

// Quote writes s as a Rune string literal that reads back as s.
func Quote(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029':
			b = append(b, `\u{`...)
			b = strconv.AppendInt(b, int64(r), 16)
			b = append(b, '}')
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(append(b, '"'))
}
