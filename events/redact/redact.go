// Package redact strips secrets from text before it enters a run's event
// stream, the store's event records, a log line or a terminal: known
// credential formats, credentials in headers, URLs and command lines, PEM
// private keys, the values of assignments whose name marks a secret, and any
// value the host knows to be secret, whatever its shape, raw or encoded
// (known.go). It is conservative
// the other way too: prose that says "token", PORT=3000, SHAs, digests and
// UUIDs stay as they are.
package redact

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
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
// result's summary), and the rules are a dozen regular expressions each.
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

type rule struct {
	re   *regexp.Regexp
	repl string // with $1… for kept groups
}

// The rules, in order. Each keeps what says what the secret was (a header
// name, a scheme, a user) and replaces only the secret.
var rules = []rule{
	// PEM private keys, whole blocks; a block cut off runs to the end.
	{regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|(\n?)\z)`), "-----BEGIN ${1}PRIVATE KEY-----" + Mark + "-----END ${1}PRIVATE KEY-----${2}"},
	// Authorization headers: keep the scheme.
	{regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)(bearer|basic|token|digest)\s+[^\s"',;]+`), "${1}${2} " + Mark},
	{regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}`), "${1} " + Mark},
	// Cookies: the whole value.
	{regexp.MustCompile(`(?im)^((?:set-)?cookie\s*:\s*)[^\r\n]+`), "${1}" + Mark},
	{regexp.MustCompile(`(?i)(-H\s*["']?(?:set-)?cookie\s*:\s*)[^"'\r\n]+`), "${1}" + Mark},
	// scheme://user:password@host (a password may hold @: up to the last)
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s:@'"]+):([^/\s'"]*)@`), "${1}${2}:" + Mark + "@"},
	// curl -u user:password, quoted (with spaces) or not
	{regexp.MustCompile(`((?:^|\s)(?:-u|--user)\s*=?\s*)(["'])([^:"'\r\n]+):([^"'\r\n]*)(["'])`), "${1}${2}${3}:" + Mark + "${5}"},
	{regexp.MustCompile(`((?:^|\s)(?:-u|--user)\s*=?\s*)([^\s:"']+):([^\s"']+)`), "${1}${2}:" + Mark},
	// Slack incoming webhooks and signed URLs' signatures
	{regexp.MustCompile(`(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+`), "${1}" + Mark},
	// Vendor formats.
	{regexp.MustCompile(`xox[abposre]-[A-Za-z0-9-]{10,}`), Mark},
	{regexp.MustCompile(`xapp-[A-Za-z0-9-]{10,}`), Mark},
	{regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`), Mark},
	{regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), Mark},
	{regexp.MustCompile(`(x-access-token:)[^@\s"']+`), "${1}" + Mark},
	{regexp.MustCompile(`sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}`), Mark},
	{regexp.MustCompile(`(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}`), Mark},
	{regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`), Mark},
	{regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}`), Mark},
	{regexp.MustCompile(`whsec_[0-9A-Za-z+/=]{16,}`), Mark},
}

// Assignments: NAME=VALUE, NAME: VALUE at the start of a line, and JSON
// "NAME": "VALUE", where NAME marks a secret.
var (
	assignEq   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)(\s*=\s*)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"'&;,()=]+)`)
	assignYAML = regexp.MustCompile(`(?m)^(\s*-?\s*)([A-Za-z_][A-Za-z0-9_.-]*)(\s*:[ \t]+)("[^"\r\n]*"|'[^'\r\n]*'|[^#\r\n]*[^\s#])([ \t]+#[^\r\n]*)?[ \t]*$`)
	assignJSON = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_.-]*)"(\s*:\s*)"((?:[^"\\\r\n]|\\.)*)"`)
	// {'name': 'value'} (Python reprs) and {\"name\":\"value\"} (JSON in a string)
	assignSingle  = regexp.MustCompile(`'([A-Za-z_][A-Za-z0-9_.-]*)'(\s*:\s*)'([^'\r\n]*)'`)
	assignEscaped = regexp.MustCompile(`\\"([A-Za-z_][A-Za-z0-9_.-]*)\\"(\s*:\s*)\\"((?:[^"\\\r\n]|\\[^"])*)\\"`)
	// Header: value anywhere on a line (curl -v's "> X-Api-Key: …", -H "…")
	assignHeader = regexp.MustCompile(`((?:^|[\s"'<>])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+)(\s*:\s*)([^\s"',;]+)`)
	// --password VALUE and --api-key=VALUE
	assignFlag = regexp.MustCompile(`((?:^|\s)--?[A-Za-z][A-Za-z0-9-]*)(\s+|=)([^\s-][^\s]*)`)
)

// secretWords are the components of a name that mark its value secret.
var secretWords = map[string]bool{
	"secret": true, "secrets": true, "key": true, "apikey": true, "token": true, "tokens": true,
	"password": true, "passwd": true, "pwd": true, "pass": true, "passphrase": true,
	"credential": true, "credentials": true, "auth": true, "signature": true, "sig": true, "dsn": true, "cookie": true,
	"privatekey": true, "accesskey": true, "secretkey": true, "clientsecret": true,
}

// errorWords make a name an error code, not a secret:
// github-token-mint-failed: HTTP 422 is a diagnosis.
var errorWords = map[string]bool{
	"failed": true, "fail": true, "failure": true, "error": true, "err": true, "expired": true,
	"invalid": true, "missing": true, "denied": true, "revoked": true, "refused": true, "rejected": true,
	"unauthorized": true, "forbidden": true, "mismatch": true, "required": true, "notfound": true,
	"length": true, "len": true, "count": true, "type": true, "name": true, "file": true,
	"path": true, "url": true, "ttl": true, "expiry": true, "expires": true,
}

// components splits a name at _, -, . and camelCase boundaries, lower-cased.
func components(name string) []string {
	var out []string
	var cur []rune
	prevLower := false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return out
}

// SecretName reports whether a name marks its value as a secret.
func SecretName(name string) bool {
	parts := components(name)
	marked := false
	for i, p := range parts {
		if errorWords[p] {
			return false
		}
		if secretWords[p] {
			marked = true
		}
		// apiKey, accessKey, client_secret written together
		if i > 0 && secretWords[parts[i-1]+p] {
			marked = true
		}
	}
	return marked
}

// plain values that are not secrets even after a secret name: nothing set.
func emptyish(v string) bool {
	v = strings.Trim(v, `"'`)
	switch strings.ToLower(v) {
	case "", "null", "nil", "none", "true", "false", "undefined", "***", "<redacted>", "changeme":
		return true
	}
	return strings.Contains(v, Mark) || strings.HasPrefix(v, "${") || strings.HasPrefix(v, "$(")
}

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
	s = r.known.strip(s)
	for _, ru := range rules {
		s = ru.re.ReplaceAllString(s, ru.repl)
	}
	s = assignJSON.ReplaceAllStringFunc(s, func(m string) string {
		g := assignJSON.FindStringSubmatch(m)
		if !SecretName(g[1]) || emptyish(g[3]) {
			return m
		}
		return `"` + g[1] + `"` + g[2] + `"` + Mark + `"`
	})
	s = assignEq.ReplaceAllStringFunc(s, func(m string) string {
		g := assignEq.FindStringSubmatch(m)
		if !SecretName(g[1]) || emptyish(g[3]) {
			return m
		}
		return g[1] + g[2] + quoteLike(g[3], Mark)
	})
	s = assignYAML.ReplaceAllStringFunc(s, func(m string) string {
		g := assignYAML.FindStringSubmatch(m)
		if !SecretName(g[2]) || emptyish(g[4]) {
			return m
		}
		return g[1] + g[2] + g[3] + quoteLike(g[4], Mark) + g[5]
	})
	for _, re := range []*regexp.Regexp{assignSingle, assignEscaped, assignHeader, assignFlag} {
		re := re
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			g := re.FindStringSubmatch(m)
			if !SecretName(strings.TrimLeft(g[1], " \t\"'<>-")) || emptyish(g[3]) {
				return m
			}
			if re == assignFlag && !secretish(g[3]) {
				return m // "use the --password flag": prose, not a value
			}
			if re == assignSingle {
				return "'" + g[1] + "'" + g[2] + "'" + Mark + "'"
			}
			if re == assignEscaped {
				return `\"` + g[1] + `\"` + g[2] + `\"` + Mark + `\"`
			}
			return g[1] + g[2] + Mark
		})
	}
	return s
}

// secretish reports whether a bare word could be a secret: long enough, and
// not only letters.
func secretish(v string) bool {
	if len(v) < 6 {
		return false
	}
	for _, r := range v {
		if !unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

func quoteLike(orig, v string) string {
	if len(orig) >= 2 && (orig[0] == '"' || orig[0] == '\'') {
		return orig[:1] + v + orig[:1]
	}
	return v
}
