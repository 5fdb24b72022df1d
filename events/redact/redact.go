// Package redact strips secrets from text before it enters a run's event
// stream, the store's event records, a log line or a terminal: vendors'
// token formats, credentials in headers, URLs and command lines, PEM private
// keys, the values of assignments whose name marks a secret (in the
// syntaxes of shells, config files and the common languages), and any value
// the host knows to be secret, whatever its shape, raw or encoded
// (known.go). It is conservative the other way too: prose that says
// "token", PORT=3000, key=user:42, SHAs, digests and UUIDs stay as they are.
//
// It is one pass (scan.go): an automaton finds every trigger (a secret
// word, a vendor prefix, "://", a PEM header, curl's --user) at once, and a
// small reader at each decides what, around it, is secret. Text with no
// trigger costs one table lookup per byte.
package redact

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Mark replaces what is redacted.
const Mark = "«redacted»"

// Redactor redacts the known formats and the host's own secrets.
type Redactor struct {
	known known

	mu   sync.Mutex
	memo map[string]string // answers for recent short inputs (String is a function of its input)
}

// The memo: run events repeat the same short texts (a tool's call line, its
// result's summary).
const (
	memoEntries = 1024
	memoInput   = 512 // bytes: longer inputs are not kept
)

// New returns a Redactor that also strips each of secrets (values the host
// knows: a model's API key, a Slack token), raw and in every form Forms
// gives, in any ASCII case. A secret under MinSecret bytes is matched only
// as a whole word, raw, and only if it is not a plain word or number;
// one under MinShortSecret is ignored: either would blank ordinary text.
func New(secrets ...string) *Redactor {
	return &Redactor{known: compileKnown(secrets)}
}

// Default redacts the known formats only.
var Default = New()

// String redacts s with the Default redactor.
func String(s string) string { return Default.String(s) }

// Known takes only the host's own secrets out of s: for data a prog will
// read, where the formats must stay as they are.
func (r *Redactor) Known(s string) string {
	return r.known.strip(s)
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if len(s) > memoInput {
		return r.redact(s)
	}
	r.mu.Lock()
	out, ok := r.memo[s]
	r.mu.Unlock()
	if ok {
		return out
	}
	out = r.redact(s)
	r.mu.Lock()
	if r.memo == nil || len(r.memo) >= memoEntries {
		r.memo = make(map[string]string, memoEntries)
	}
	r.memo[s] = out
	r.mu.Unlock()
	return out
}

// redact is String without the memo.
func (r *Redactor) redact(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return scan(r.known.strip(s))
}
