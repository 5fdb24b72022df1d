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

// vendor reads a token of format id (its prefix so far matched in any
// case) at s[at].
func (sc *scanner) vendor(at int, id int) {
	s, f := sc.s, &vendorFormats[id]
	if f.prefix == "eyJ" {
		// A JWT's header ends at a dot, not far: a prefix with none near
		// is read no further (eyJ-eyJ-eyJ-… costs a dot search, once);
		// one inside the header of one that was no JWT is none either (a
		// shorter header, the same other parts).
		d := sc.dotAfter(at)
		if d < 0 || d-at > maxJWTHeader || at < sc.notJWT {
			return
		}
	}
	end := formatEnd(s, at, f, sc)
	if end == 0 {
		if f.prefix == "eyJ" {
			sc.notJWT = sc.dotAfter(at)
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
			best = max(best, formatEnd(s, at, &vendorFormats[i], nil))
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

// dotAfter returns the first '.' at or after s[i], or -1; the last answer
// is kept, so that a run of prefixes searches once.
func (sc *scanner) dotAfter(i int) int {
	if d := &sc.dot; d.valid && d.from <= i && (d.at < 0 || i <= d.at) {
		return d.at
	}
	at := strings.IndexByte(sc.s[i:], '.')
	if at >= 0 {
		at += i
	}
	sc.dot = dotRun{true, i, at}
	return at
}

// maxJWTHeader bounds a JSON Web Token's first part (x5c chains make it
// kilobytes, not more).
const maxJWTHeader = 8 << 10

// formatEnd returns the end of a token of format f at s[at], or 0.
func formatEnd(s string, at int, f *format, sc *scanner) int {
	if !strings.HasPrefix(s[at:], f.prefix) {
		return 0
	}
	if glued(s, at, f) {
		return 0 // glued to a word
	}
	from := at + len(f.prefix)
	end := sc.bodyEnd(s, from, f.body)
	if f.max > 0 {
		end = min(end, from+f.max)
	}
	if end-from < f.min || f.digit && !sc.digitIn(s, from, end) {
		return 0
	}
	if f.max > 0 && end < len(s) && (alnum(s[end]) || s[end] == '_') {
		return 0 // longer than the format: part of a word
	}
	if f.prefix == "eyJ" {
		return max(jwtEnd(s, at, end), 0)
	}
	return end
}

// bodyEnd is where the run of characters of body from s[i] ends. With a
// scanner the last run of each body is kept: a prefix inside a run ends
// where it ends, so that a long run full of prefixes is read once.
func (sc *scanner) bodyEnd(s string, i int, body charset) int {
	if sc != nil {
		if r := &sc.bodies[body]; r.valid && r.from <= i && i <= r.end {
			return r.end
		}
	}
	j := i
	for j < len(s) && body.has(s[j]) {
		j++
	}
	if sc != nil {
		sc.bodies[body] = span{true, i, j}
	}
	return j
}

// digitIn reports whether s[from:end] holds a digit; a scanner keeps the
// last digit found.
func (sc *scanner) digitIn(s string, from, end int) bool {
	if sc != nil && sc.digit.valid && sc.digit.from <= from && from <= sc.digit.end {
		return sc.digit.end < end
	}
	d := from
	for d < len(s) && !digit(s[d]) {
		d++
	}
	if sc != nil {
		sc.digit = span{true, from, d}
	}
	return d < end
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
	sc.pemEnd = end
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
	if j-i >= 8 && strings.ContainsAny(s[i:j], "0123456789") {
		sc.cut(i, j) // a token has digits; "Bearer token-based auth" is prose
	}
}

// bearerByte is a byte of RFC 6750's b64token.
func bearerByte(c byte) bool {
	return alnum(c) || strings.IndexByte("-._~+/=", c) >= 0
}

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
	for i := from; i < len(s); i++ {
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
	if !sc.exactFlag(start, end) {
		return
	}
	sc.flag(start, end, func(s string, from, to, colon int) (int, int, bool) {
		if colon < 0 {
			return 0, 0, false
		}
		tool := userTool(s, start)
		if tool == userOf {
			return 0, 0, false
		}
		a, b := unquote(s, colon+1, to)
		pass, user := s[a:b], strings.Trim(s[from:colon], `"'`)
		if pass == user && tool != credentialsOf || allDigits(user) && allDigits(pass) {
			return 0, 0, false // www-data:www-data, 1000:1000: a user and its group
		}
		return a, b, pass != "" && !placeholder(pass)
	})
}

// exactFlag reports whether the flag at s[start:end] is in its own case:
// -u and -b, not make's -B or sort's -U.
func (sc *scanner) exactFlag(start, end int) bool {
	for i := start; i < end; i++ {
		if upper(sc.s[i]) {
			return false
		}
	}
	return true
}

// What a -u names, by the command it is given to.
const (
	unknownOf     = iota
	userOf        // a user to run as: docker run -u www-data:www-data, sudo -u ada
	credentialsOf // a user and a password: curl -u ada:pw
)

// userTool says what the -u at s[at] names, from the command words before
// it on its line.
func userTool(s string, at int) int {
	b := max(at-256, 0)
	if k := strings.LastIndexAny(s[b:at], "\n;|&"); k >= 0 {
		b += k + 1
	}
	for line := s[b:at]; line != ""; {
		line = strings.TrimLeft(line, " \t")
		w := line
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			w, line = line[:i], line[i:]
		} else {
			line = ""
		}
		switch w {
		case "docker", "podman", "nerdctl", "kubectl", "sudo", "su", "runuser", "chown", "chroot", "ctr", "buildah":
			return userOf
		case "curl", "wget", "http", "httpie":
			return credentialsOf
		}
	}
	return unknownOf
}

// curlCookie reads curl's -b/--cookie 'NAME=VALUE; …' at s[start:end]:
// the cookies go whole. A word with no = is a cookie file and stays.
func (sc *scanner) curlCookie(start, end int) {
	if !sc.exactFlag(start, end) {
		return
	}
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
