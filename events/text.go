// text.go holds what every free text of an event goes through: control
// characters stripped, secrets redacted, and then (never before) a cap; the
// one-line summary of a tool's result; and the one reader of the `exit N:`
// prefix contract.

package events

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/runehost/runehost/events/redact"
)

// Caps of event text.
const (
	OutputCap  = 8000 // characters of a tool_result's output
	SummaryCap = 200  // characters of a one-line summary
	DetailCap  = 300  // characters of an Observation's detail
	// AssistantCap is characters of one assistant event: a few a second
	// of a model's output.
	AssistantCap = 8000
)

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// StripControl removes terminal escapes and control characters, keeping
// newlines and tabs, and makes s valid UTF-8.
func StripControl(s string) string {
	if clean(s) {
		return s // the common case: nothing to strip, nothing to copy
	}
	return stripControl(s)
}

// stripControl is StripControl without the fast path.
func stripControl(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = ansi.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r == '\r' {
			return -1
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return -1
		}
		return r
	}, s)
}

// clean reports whether s is valid UTF-8 with no control character but
// newlines and tabs, no escape and no line or paragraph separator.
func clean(s string) bool {
	ascii := true
	// Eight bytes at a time while they are printable ASCII; a word with a
	// byte under 0x20 (a newline too) or from 0x7f up goes byte by byte.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if (w|(w-0x20*ones)|(w+0x01*ones))&highs == 0 {
				i += 8
				continue
			}
		}
		for end := min(i+8, len(s)); i < end; i++ {
			c := s[i]
			switch {
			case c >= 0x80:
				ascii = false
				// C1 controls are C2 80-9F; U+2028 and U+2029 are E2 80 A8-A9.
				if c == 0xC2 && i+1 < len(s) && s[i+1] < 0xA0 || c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
					return false
				}
			case c < 0x20 && c != '\n' && c != '\t' || c == 0x7f:
				return false
			}
		}
	}
	return ascii || utf8.ValidString(s)
}

// Cap cuts s to at most n characters, saying how many more there were:
// "…[N more chars]". It never splits a character.
func Cap(s string, n int) string {
	count := utf8.RuneCountInString(s)
	if count <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n {
			break
		}
		k++
	}
	return s[:i] + fmt.Sprintf("…[%d more chars]", count-n)
}

// Clean is a free text as it may enter an event: stripped, redacted, then
// capped (n <= 0: not capped). Redaction always comes first, so a secret
// across the cap cannot leave a fragment behind.
func Clean(r *redact.Redactor, s string, n int) string {
	if r == nil {
		r = redact.Default
	}
	s = r.String(StripControl(s))
	if n > 0 {
		s = Cap(s, n)
	}
	return s
}

// Summary is the one-line summary of a tool's output: its first non-empty
// line, cleaned, capped at SummaryCap, with a note of the size when there
// was more.
func Summary(r *redact.Redactor, output string) string {
	clean := Clean(r, output, 0)
	lines := strings.Split(clean, "\n")
	first, rest := "", 0
	for i, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			first, rest = t, len(lines)-i-1
			break
		}
	}
	// Trailing empty lines do not count as more.
	for rest > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines, rest = lines[:len(lines)-1], rest-1
	}
	s := Cap(first, SummaryCap)
	if rest > 0 {
		s += fmt.Sprintf(" (+%d lines, %s)", rest, size(len(output)))
	}
	return s
}

func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

var exitPrefix = regexp.MustCompile(`^exit ([A-Za-z0-9_-]+):`)

// ParseExitPrefix is the one reader of the `exit N:` contract: a text that
// opens with "exit N:" reports exit code N (failed unless N is 0); one that
// opens with "exit ERRNO:" (not a number) reports a failure with no code;
// any other text, even one that says "exit 1:" later, is a clean exit.
func ParseExitPrefix(text string) (code int, hasCode, failed bool) {
	m := exitPrefix.FindStringSubmatch(text)
	if m == nil {
		return 0, true, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false, true
	}
	return n, true, n != 0
}
