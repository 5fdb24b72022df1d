// formats.go holds the readers of shapes a secret has whatever its name:
// vendors' token formats (anchored at a token boundary), PEM private key
// blocks, bearer tokens, a URL's userinfo, and curl's --user and --cookie.

package redact

import "strings"

// A vendor format: an exact prefix, then a body of the given characters,
// at least min long (and at most max, if set). A body must end at a
// boundary, and the prefix must not continue a word: ASIAASACK… inside a
// word and task-… are not tokens.
type format struct {
	prefix   string
	body     charset
	min, max int
	digit    bool // the body holds a digit (real tokens do; prose does not)
	// loose: the prefix is distinctive enough to be a token even where it
	// continues a word (xxoxb-…); the others need a boundary before them.
	loose bool
}

type charset uint8

const (
	alnumSet  charset = iota // A-Z a-z 0-9
	upperSet                 // A-Z 0-9
	dashSet                  // A-Z a-z 0-9 - _
	base64Set                // A-Z a-z 0-9 + / = - _
	slackHook                // A-Z a-z 0-9 / _ -
	jwtSet                   // A-Z a-z 0-9 - _ .
)

// vendorFormats are the tokens matched by format alone. The docs list
// them (docs/events.md, "Redaction").
var vendorFormats = []format{
	// Slack: bot, user, app-level, refresh, session and config tokens.
	{"xoxb-", dashSet, 10, 0, true, true}, {"xoxp-", dashSet, 10, 0, true, true}, {"xoxa-", dashSet, 10, 0, true, true},
	{"xoxr-", dashSet, 10, 0, true, true}, {"xoxs-", dashSet, 10, 0, true, true}, {"xoxe-", dashSet, 10, 0, true, true},
	{"xoxe.xoxp-", dashSet, 10, 0, true, true}, {"xapp-", dashSet, 10, 0, true, true},
	{"hooks.slack.com/services/", slackHook, 8, 0, false, true},
	{"hooks.slack.com/workflows/", slackHook, 8, 0, false, true},
	{"hooks.slack.com/triggers/", slackHook, 8, 0, false, true},
	// GitHub: personal, OAuth, user-to-server, server-to-server, refresh.
	{"ghp_", alnumSet, 20, 0, false, true}, {"gho_", alnumSet, 20, 0, false, true}, {"ghu_", alnumSet, 20, 0, false, true},
	{"ghs_", alnumSet, 20, 0, false, true}, {"ghr_", alnumSet, 20, 0, false, true}, {"github_pat_", dashSet, 20, 0, false, true},
	// GitLab personal access tokens; npm and PyPI upload tokens; Hugging Face.
	{"glpat-", dashSet, 20, 0, false, true}, {"npm_", alnumSet, 30, 0, false, false}, {"pypi-", dashSet, 50, 0, false, true},
	{"hf_", alnumSet, 30, 0, false, false},
	// OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-…).
	{"sk-ant-api", dashSet, 16, 0, false, true}, {"sk-ant-admin", dashSet, 16, 0, false, true},
	{"sk-ant-oat", dashSet, 16, 0, false, true}, {"sk-proj-", dashSet, 16, 0, false, true},
	{"sk-svcacct-", dashSet, 16, 0, false, true}, {"sk-admin-", dashSet, 16, 0, false, true},
	{"sk-", dashSet, 16, 0, false, false},
	// AWS access key ids, and the ids of temporary credentials.
	{"AKIA", upperSet, 16, 16, false, false}, {"ASIA", upperSet, 16, 16, false, false}, {"AGPA", upperSet, 16, 16, false, false},
	{"AIDA", upperSet, 16, 16, false, false}, {"AROA", upperSet, 16, 16, false, false},
	// Google API keys and OAuth access tokens.
	{"AIza", dashSet, 35, 35, false, false}, {"ya29.", dashSet, 20, 0, false, false},
	// Stripe secret and restricted keys, and webhook signing secrets.
	{"sk_live_", alnumSet, 16, 0, false, true}, {"sk_test_", alnumSet, 16, 0, false, true},
	{"rk_live_", alnumSet, 16, 0, false, true}, {"rk_test_", alnumSet, 16, 0, false, true},
	{"whsec_", base64Set, 16, 0, false, true},
	// SendGrid: SG.<22>.<43>.
	{"SG.", jwtSet, 40, 0, false, false},
	// JSON Web Tokens: base64url of {"…, three parts.
	{"eyJ", jwtSet, 20, 0, false, false},
}

func (c charset) has(b byte) bool {
	switch {
	case alnum(b):
		return c != upperSet || !lower(b)
	case b == '-' || b == '_':
		return c == dashSet || c == base64Set || c == slackHook || c == jwtSet
	case b == '+' || b == '=':
		return c == base64Set
	case b == '/':
		return c == base64Set || c == slackHook
	case b == '.':
		return c == jwtSet
	}
	return false
}

// vendor reads a token of format f (its prefix so far matched in any
// case) at s[at]. A prefix inside the body of one that was not a token is
// not one either (its body is a suffix of that one: shorter, and with no
// more digits), and is not read again: xoxb-aaaaxoxb-aaaa… costs one read.
func (sc *scanner) vendor(at int, id int) {
	s, f := sc.s, &vendorFormats[id]
	memo := f.max == 0 && f.prefix != "eyJ"
	if memo && at < sc.notToken[id] {
		return
	}
	end := formatEnd(s, at, f)
	if end == 0 {
		if memo && strings.HasPrefix(s[at:], f.prefix) && !glued(s, at, f) {
			sc.notToken[id] = bodyEnd(s, at+len(f.prefix), f)
		}
		return
	}
	if strings.HasPrefix(f.prefix, "hooks.") {
		at += len(f.prefix) // the hook's host and path stay; its key goes
	}
	sc.cut(at, end)
}

// vendorAt returns the end of the longest vendor token at s[at], or 0.
func vendorAt(s string, at int) int {
	best := 0
	if at < len(s) {
		for _, i := range byFirst[s[at]] {
			best = max(best, formatEnd(s, at, &vendorFormats[i]))
		}
	}
	return best
}

// byFirst lists the formats by the first byte of their prefix.
var byFirst = func() (t [256][]int) {
	for i, f := range vendorFormats {
		t[f.prefix[0]] = append(t[f.prefix[0]], i)
	}
	return t
}()

// glued reports whether a token of f at s[at] would continue a word.
func glued(s string, at int, f *format) bool {
	return !f.loose && at > 0 && (alnum(s[at-1]) || s[at-1] == '_') && !escapeEnds(s, at)
}

// bodyEnd is where a run of f's body characters from s[i] ends.
func bodyEnd(s string, i int, f *format) int {
	for i < len(s) && f.body.has(s[i]) {
		i++
	}
	return i
}

// maxToken bounds how far a token's body is read before it is decided;
// maxJWT a JSON Web Token's, which can be long.
const (
	maxToken = 1024
	maxJWT   = 16 << 10
)

// formatEnd returns the end of a token of format f at s[at], or 0.
func formatEnd(s string, at int, f *format) int {
	if !strings.HasPrefix(s[at:], f.prefix) {
		return 0
	}
	if glued(s, at, f) {
		return 0 // glued to a word
	}
	from := at + len(f.prefix)
	end := from
	hasDigit := false
	// A body is read up to maxToken before it is decided (a run of token
	// characters full of prefixes costs no more than one token), and to
	// its end only once it is one.
	lim := min(len(s), from+maxToken)
	if f.prefix == "eyJ" {
		lim = min(len(s), from+maxJWT) // a JWT is decided by its three parts
	}
	for end < lim && f.body.has(s[end]) && (f.max == 0 || end-from < f.max) {
		hasDigit = hasDigit || digit(s[end])
		end++
	}
	if end-from < f.min || f.digit && !hasDigit {
		return 0
	}
	for end == lim && end < len(s) && f.max == 0 && f.body.has(s[end]) {
		end++
		lim++
	}
	if f.max > 0 && end < len(s) && (alnum(s[end]) || s[end] == '_') {
		return 0 // longer than the format: part of a word
	}
	if f.prefix == "eyJ" {
		return max(jwtEnd(s, at, end), 0)
	}
	return end
}

// vendorPrefixed reports whether v is a vendor token, whole.
func vendorPrefixed(v string) bool {
	return v != "" && vendorAt(v, 0) == len(v)
}

// jwtEnd returns where the JSON Web Token in s[at:end] ends, or -1: it is
// header.payload.signature, the first two base64url JSON objects; a
// sentence's full stop after it is not a part.
func jwtEnd(s string, at, end int) int {
	parts := strings.SplitN(s[at:end], ".", 4)
	if len(parts) < 3 || len(parts[0]) < 10 || len(parts[1]) < 10 || !strings.HasPrefix(parts[1], "eyJ") {
		return -1
	}
	return at + len(parts[0]) + len(parts[1]) + len(parts[2]) + 2
}

// pem reads a private key block at s[at] ("-----BEGIN "): its body goes,
// up to its END line or, cut off, the end of the text. The BEGIN line need
// not start a line: a key inside a JSON string or after a log prefix goes
// too.
func (sc *scanner) pem(at int) {
	s := sc.s
	const begin = "-----BEGIN "
	if !strings.HasPrefix(s[at:], begin) {
		return
	}
	i := at + len(begin)
	for i < len(s) && (upper(s[i]) || digit(s[i]) || s[i] == ' ') && i-at < 64 {
		i++
	}
	label := s[at+len(begin) : i]
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return
	}
	if !strings.HasPrefix(s[i:], "-----") {
		return
	}
	from := i + len("-----")
	end := strings.Index(s[from:], "-----END ")
	if end < 0 {
		end = len(s)
		if strings.HasSuffix(s, "\n") {
			end--
		}
	} else {
		end += from
	}
	sc.cut(from, end)
}

// bearer reads "Bearer TOKEN" at s[start:end]: the token goes, unless it
// is a command substitution or a variable (Bearer $(gcloud auth
// print-access-token), Bearer ${TOKEN}) or a placeholder (<token>).
func (sc *scanner) bearer(start, end int) {
	s := sc.s
	if start > 0 && alnum(s[start-1]) {
		return
	}
	i := end
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i == end {
		return
	}
	j := i
	for j < len(s) && bearerByte(s[j]) {
		j++
	}
	if j-i >= 8 && secretish(s[i:j]) {
		sc.cut(i, j)
	}
}

// bearerByte is a byte of RFC 6750's b64token.
func bearerByte(c byte) bool {
	return alnum(c) || strings.IndexByte("-._~+/=", c) >= 0
}

// maxUserinfo bounds a URL's user:password@.
const maxUserinfo = 1024

// userinfo reads scheme://user:password@ at the "://" at s[at]: the
// password goes (it may hold @: the userinfo runs to the last @ before the
// host). A lone user that is itself a token (https://TOKEN@github.com)
// goes too.
func (sc *scanner) userinfo(at int) {
	s := sc.s
	if at == 0 || !alnum(s[at-1]) {
		return
	}
	from := at + 3
	end, colon := -1, -1
	for i := from; i < len(s) && i-from < maxUserinfo; i++ {
		c := s[i]
		if c == '/' || c == '?' || c == '#' || c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == '\\' {
			break
		}
		if c == ':' && colon < 0 {
			colon = i
		}
		if c == '@' {
			end = i
		}
	}
	if end < 0 || strings.IndexByte(s[from:end], '=') >= 0 {
		return // none, or parameters (jdbc:sqlserver://h:1433;user=sa;password=…@…)
	}
	switch {
	case colon >= 0 && colon < end:
		if !placeholder(s[colon+1 : end]) {
			sc.cut(colon+1, end)
		}
	case secretShaped(s[from:end]):
		sc.cut(from, end)
	}
}

// curlUser reads curl's -u/--user USER:PASSWORD at s[start:end]: the
// password goes, however the word is quoted (--user name:'pass',
// -u "u":"p", -u ":pass", --user=u:p). uid:gid pairs stay (docker -u
// 1000:1000).
func (sc *scanner) curlUser(start, end int) {
	sc.flag(start, end, func(s string, from, to, colon int) (int, int, bool) {
		if colon < 0 {
			return 0, 0, false
		}
		a, b := unquote(s, colon+1, to)
		pass := s[a:b]
		return a, b, pass != "" && !placeholder(pass) && !(allDigits(strings.Trim(s[from:colon], `"'`)) && allDigits(pass))
	})
}

// curlCookie reads curl's -b/--cookie 'NAME=VALUE; …' at s[start:end]:
// the cookies go whole. A word with no = is a cookie file and stays.
func (sc *scanner) curlCookie(start, end int) {
	sc.flag(start, end, func(s string, from, to, _ int) (int, int, bool) {
		a, b := unquote(s, from, to)
		v := s[a:b]
		return a, b, strings.IndexByte(v, '=') > 0 && !placeholder(v)
	})
}

// flag reads the word after a flag at s[start:end] up to maxValue, asks
// what of it to cut, and cuts that, read to the word's end if it is longer.
func (sc *scanner) flag(start, end int, what func(s string, from, to, colon int) (a, b int, cut bool)) {
	s := sc.s
	from, to, colon := flagWord(s, start, end, maxValue)
	if from < 0 {
		return
	}
	a, b, ok := what(s, from, to, colon)
	if !ok {
		return
	}
	if to == from+maxValue { // a long one to cut: read it to its end
		from, to, colon = flagWord(s, start, end, len(s))
		a, b, _ = what(s, from, to, colon)
	}
	sc.cut(a, b)
}

// flagWord reads the shell word after a flag at s[start:end] (separated by
// spaces or =, or attached to a short flag): where it is, and its first
// colon, or -1s.
func flagWord(s string, start, end, max int) (from, to, colon int) {
	if start > 0 && s[start-1] != ' ' && s[start-1] != '\t' && s[start-1] != '\n' {
		return -1, -1, -1
	}
	i := end
	switch {
	case i < len(s) && s[i] == '=':
		i++
	case i < len(s) && (s[i] == ' ' || s[i] == '\t'):
		i = skipSpace(s, i)
	case end-start == 2 && i < len(s) && (s[i] == '"' || s[i] == '\'' || alnum(s[i])): // -uuser:pass
	default:
		return -1, -1, -1
	}
	// Unquoted runs and quoted parts, up to an unquoted space.
	from, colon = i, -1
	var q byte
	for lim := min(len(s), from+max); i < lim && s[i] != '\n'; i++ {
		c := s[i]
		if q != 0 {
			if c == q {
				q = 0
			} else if c == ':' && colon < 0 {
				colon = i
			}
			continue
		}
		if c == ' ' || c == '\t' || c == ';' || c == '|' || c == '&' {
			break
		}
		switch c {
		case '"', '\'':
			q = c
		case ':':
			if colon < 0 {
				colon = i
			}
		}
	}
	return from, i, colon
}

// unquote narrows s[a:b] to what is inside its quotes.
func unquote(s string, a, b int) (int, int) {
	for a < b && (s[a] == '"' || s[a] == '\'') {
		a++
	}
	for b > a && (s[b-1] == '"' || s[b-1] == '\'') {
		b--
	}
	return a, b
}

func allDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if !digit(v[i]) {
			return false
		}
	}
	return v != ""
}
