// assign.go holds the assignment reader: around a secret word it reads
// the whole name, an operator and a value, once, in every common syntax
// (NAME=v, name := "v", var name string = "v", name: Type = "v", :name =>
// 'v', 'name' => 'v', "name": "v", {\"name\":\"v\"}, name: v, NAME ?= v,
// --name=v, Header-Name: v, ;Password=v; in a connection string,
// ?access_token=v in a URL), and decides from the name and the value's
// shape whether the value goes.

package redact

import "strings"

// nameByte is a byte of a name: letters, digits, _ . - and $ (JS).
func nameByte(c byte) bool { return alnum(c) || c == '_' || c == '.' || c == '-' || c == '$' }

// An assign is what the reader found: the name, and where its value is.
type assign struct {
	name      string
	lineStart bool // the name opens its line: NAME: v runs to its end
	flag      bool // --name
	quoted    bool // the name was in quotes of its own ("name":)
	enclosing string
	op        string
	spaced    bool // spaces around the operator
	valStart  int
	valEnd    int
	valQuoted bool
	escaped   bool // the line began at a \n escape: the text is inside a JSON string
	valAt     int  // where the value (its quote, its prefix) begins
	nameAt    int  // where the name begins
	capped    bool // the value was read up to maxValue, not to its end
}

// assignment reads the name holding the secret word at s[start:end] and,
// if an assignment follows it, cuts its value when the rule says so.
func (sc *scanner) assignment(start, end int) {
	s := sc.s
	// The whole name: name bytes, and :: between parts (a::b::api_key).
	ns, ne := start, end
	for ns > 0 && (nameByte(s[ns-1]) || ns > 2 && s[ns-1] == ':' && s[ns-2] == ':' && nameByte(s[ns-3])) {
		if escapeEnds(s, ns) {
			break // \npassword, \u0026token in a JSON string: the n is its escape's
		}
		if s[ns-1] == ':' {
			ns -= 2
		} else {
			ns--
		}
	}
	for ne < len(s) && (nameByte(s[ne]) || ne+2 < len(s) && s[ne] == ':' && s[ne+1] == ':' && nameByte(s[ne+2])) {
		if s[ne] == ':' {
			ne += 2
		} else {
			ne++
		}
	}
	sc.done = ne
	// Trailing dots and dashes end a sentence or a word, not a name.
	for ne > ns && (s[ne-1] == '.' || s[ne-1] == '-') {
		ne--
	}
	a := assign{}
	// --flag: the dashes are not the name.
	dash := ns
	for ns < ne && s[ns] == '-' {
		ns++
	}
	if ns > dash {
		a.flag = dash == 0 || strings.IndexByte(" \t\n\"'", s[dash-1]) >= 0
	}
	if ns >= ne || start < ns || end > ne {
		return // the word was only in the dashes or dots around a name
	}
	a.name = s[ns:ne]
	str := nameStrength(a.name)
	if str == notSecret {
		return
	}
	if ns >= 3 && s[ns-1] == '/' && s[ns-2] == '/' && s[ns-3] == ':' {
		return // scheme://user:…: userinfo reads it
	}
	if !sc.readAssign(&a, ns, ne) {
		return
	}
	v := s[a.valStart:a.valEnd]
	if !a.valQuoted && (a.valEnd < len(s) && (s[a.valEnd] == '(' || s[a.valEnd] == '[') && callee(v) || call(v)) {
		return // a call or an index: os.getenv("KEY"), ENV["TOKEN"]
	}
	if strings.HasPrefix(v, "-----BEGIN") {
		return // PRIVATE_KEY=-----BEGIN …: the PEM reader takes the block
	}
	if !a.valQuoted && (a.spaced || a.op == ":=") && reference(v) || !secretValue(a.name, str, v) {
		return // code reads a secret from where it is kept: apiKey := cfg.APIKey
	}
	if sc.special(&a, v) {
		return
	}
	switch {
	case a.valQuoted || a.lineStart || a.enclosing != "":
	case a.op == " " || a.op == ":" && !a.quoted:
		// --password VALUE and name: value in running text: prose unless
		// the word could be a secret.
		if !secretish(v) {
			return
		}
	}
	sc.full(&a)
	sc.cut(a.valStart, a.valEnd)
	sc.done = max(sc.done, a.valEnd)
}

// full reads a value that is to be cut to its end, if it was read only up
// to maxValue.
func (sc *scanner) full(a *assign) {
	if a.capped {
		sc.readValue(a, a.valAt, len(sc.s))
		a.capped = false
	}
}

// readAssign reads what follows the name s[ns:ne]: its closing quote, a
// type, the operator and the value. It reports whether there is one.
func (sc *scanner) readAssign(a *assign, ns, ne int) bool {
	s := sc.s
	// What opens the name: a quote of its own ("name") or of a larger
	// string ("Authorization: Bearer …", 'password=…').
	lq := ""
	if ns > 0 && (s[ns-1] == '"' || s[ns-1] == '\'' || s[ns-1] == '`') {
		k := ns - 1
		for k > 0 && s[k-1] == '\\' { // \"name\" in a JSON string, \\\"name\\\" in one in one
			k--
		}
		lq = s[k:ns]
	}
	a.lineStart, a.escaped = lineStart(s, ns-len(lq))
	a.nameAt = ns
	p := ne
	if lq != "" {
		if strings.HasPrefix(s[p:], lq) {
			p += len(lq)
			a.quoted = true
			a.lineStart = false
			if p < len(s) && s[p] == ']' { // config["password"] = …
				p++
			}
		} else {
			a.enclosing = lq
		}
	}
	sp := skipSpace(s, p)
	// Types between the name and the operator: var token string = …,
	// let password: String = …, const KEY: &str = …; and C's
	// char password[] = ….
	if !a.quoted {
		if t := typeEnd(s, sp); t > 0 {
			sp = t
		}
	}
	op := operator(s[sp:])
	if op == "," && !(a.quoted && callArg(s, ns-len(lq))) {
		op = "" // only f("NAME", "value") pairs a name with a value
	}
	if op == "" && sp > p && sp < len(s) && s[sp] != '-' && (a.flag || netrc(s, ns, a.name)) {
		op = " " // --password VALUE; machine h login u password VALUE
	}
	if op == "" {
		return false
	}
	a.op = op
	v := sp + len(strings.TrimSpace(op))
	if op == " " {
		v = sp
	}
	vs := skipSpace(s, v)
	a.spaced = sp > p || vs > v
	if op == "," && (vs >= len(s) || quoteAt(s, vs) == "") {
		return false // setenv("KEY", value): only a quoted value is one
	}
	if op == ":" && !a.spaced && strings.HasPrefix(s[vs:], "//") {
		return false // a URL's scheme
	}
	a.valAt = vs
	return sc.readValue(a, vs, min(len(s), vs+maxValue))
}

// maxValue bounds how far a value is read before it is decided: a value
// not cut costs at most this, however many names a long line holds. One
// that is cut is then read to its end.
const maxValue = 1024

// readValue reads the value at s[i].
func (sc *scanner) readValue(a *assign, i, lim int) bool {
	s := sc.s
	if i >= len(s) {
		return false
	}
	// @"…" (Objective-C, C#), b'…', r"…", u"…", f"…" (Python).
	if i+1 < len(s) && strings.IndexByte("@bruf", s[i]) >= 0 && (s[i+1] == '"' || s[i+1] == '\'') {
		i++
	}
	if q := quoteAt(s, i); q != "" && q != a.enclosing {
		end := closeQuote(s, i+len(q), q, max(lim, i+len(q)))
		a.valStart, a.valEnd, a.valQuoted = i+len(q), end, true
		a.capped = end == lim && lim < len(s)
		return true
	}
	if (s[i] == '|' || s[i] == '>') && a.lineStart && a.op == ":" {
		return sc.blockScalar(a, i, lim)
	}
	end := i
	switch {
	case a.enclosing != "" && headerName(a.name):
		// -H "Authorization: Bearer x": the value runs to the quote.
		end = min(sc.stop(a.enclosing, i, func(j int) bool { return s[j] == '\n' || strings.HasPrefix(s[j:], a.enclosing) }), lim)
	case a.lineStart && (a.op == ":" || a.spaced && a.op != " "):
		// YAML's name: v, INI's name = v: to the end of the line, less a
		// comment.
		for end < lim && s[end] != '\n' && s[end] != '\r' && !(a.escaped && (s[end] == '"' || s[end] == '\\')) {
			if (s[end] == '#' || s[end] == ';') && end > i && (s[end-1] == ' ' || s[end-1] == '\t') {
				break
			}
			end++
		}
	case headerName(a.name) && a.op == ":":
		end = min(sc.stop("header", i, func(j int) bool { return strings.IndexByte("\n\r\"'", s[j]) >= 0 }), lim)
	default:
		// A bare value inside a JSON string ends at an escape: TOKEN=x\n.
		// NAME=v alone on its line (a .env, a shell) ends only at a space
		// or a quote: DB_PASSWORD=p4ss,w0rd(9) is one value.
		ends := bareEnd
		if a.lineStart && a.op == "=" && !a.spaced {
			ends = wordEnd
		}
		for end < lim && !ends(s[end]) && !(s[end] == '\\' && end+1 < len(s) && strings.IndexByte(`nrtu"\\`, s[end+1]) >= 0) {
			end++
		}
	}
	a.capped = end == lim && lim < len(s)
	for end > i && (s[end-1] == ' ' || s[end-1] == '\t' || s[end-1] == '\r') {
		end--
	}
	if end == i {
		return false
	}
	a.valStart, a.valEnd = i, end
	return true
}

// stop returns the first j from i where at(j) holds, or the text's end.
// The last such run is kept by its kind: a scan from inside it stops where
// it stopped, so that a line of many header names is read once, not once
// per name.
func (sc *scanner) stop(kind string, i int, at func(j int) bool) int {
	if r := &sc.run; r.kind == kind && r.from <= i && i <= r.end {
		return r.end
	}
	j := i
	for j < len(sc.s) && !at(j) {
		j++
	}
	sc.run = run{kind, i, j}
	return j
}

// special handles the values whose name says more: an Authorization
// header keeps its scheme, a cookie goes whole. It reports whether it
// did.
func (sc *scanner) special(a *assign, v string) bool {
	s := sc.s
	auth := suffixFold(a.name, "authorization") || suffixFold(a.name, "-auth") && headerName(a.name)
	if !auth && !(!a.valQuoted && (strings.EqualFold(v, "bearer") || strings.EqualFold(v, "basic"))) {
		return false
	}
	// Authorization: Bearer TOKEN, Basic …, token …, Digest …: the scheme
	// stays; so it does in access_token=Bearer TOKEN.
	sc.full(a)
	v = s[a.valStart:a.valEnd]
	sp := strings.IndexAny(v, " \t")
	if sp < 0 && scheme(v) {
		// authorization=Bearer TOKEN: the value read stopped at the space.
		i := skipSpace(s, a.valEnd)
		j := i
		for j < len(s) && j-i < maxValue && bearerByte(s[j]) {
			j++
		}
		if j > i && !placeholder(s[i:j]) {
			sc.cut(i, j)
		}
		return true
	}
	if sp < 0 {
		sc.cut(a.valStart, a.valEnd)
		return true
	}
	rest := strings.TrimLeft(v[sp:], " \t")
	if placeholder(rest) || strings.HasPrefix(rest, "$") {
		return true
	}
	sc.cut(a.valEnd-len(rest), a.valEnd)
	return true
}

// scheme reports whether v is an HTTP authentication scheme.
func scheme(v string) bool {
	for _, w := range []string{"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "hmac", "aws4-hmac-sha256"} {
		if strings.EqualFold(v, w) {
			return true
		}
	}
	return false
}

// suffixFold reports whether name ends with suffix, in any ASCII case.
func suffixFold(name, suffix string) bool {
	return len(name) >= len(suffix) && strings.EqualFold(name[len(name)-len(suffix):], suffix)
}

// blockScalar reads a YAML block scalar at s[i] (password: |, key: >-):
// the lines after it indented more than its name are the value. Inside a
// JSON string (a.escaped) its lines end at \n escapes and the value at the
// string's end. It reads up to lim.
func (sc *scanner) blockScalar(a *assign, i, lim int) bool {
	s := sc.s
	nl := "\n"
	if a.escaped {
		nl = `\n`
	}
	// The indicator's line: |, |-, >+, |2, a comment.
	eol := strings.Index(s[i:min(len(s), i+64)], nl)
	if eol < 0 {
		return false
	}
	indent := 0
	for k := a.nameAt; k > 0 && indent < 256 && (s[k-1] == ' ' || s[k-1] == '\t'); k-- {
		indent++
	}
	start := i + eol + len(nl)
	end := start
	for end < lim {
		line := end
		for end < lim && (s[end] == ' ' || s[end] == '\t') {
			end++
		}
		if end-line <= indent && end < lim && !strings.HasPrefix(s[end:], nl) && s[end] != '\r' {
			end = line // a line indented no more than the name: the value ended
			break
		}
		for end < lim && !strings.HasPrefix(s[end:], nl) && !(a.escaped && s[end] == '"' && s[end-1] != '\\') {
			end++
		}
		if end >= lim || !strings.HasPrefix(s[end:], nl) {
			break // the text's end, or the JSON string's
		}
		end += len(nl)
	}
	a.capped = end >= lim && lim < len(s)
	end = min(end, lim)
	for end > start && strings.HasSuffix(s[start:end], nl) {
		end -= len(nl)
	}
	for end > start && s[end-1] == '\r' {
		end--
	}
	if end <= start {
		return false
	}
	a.valStart, a.valEnd, a.valQuoted = start, end, true
	return true
}

// operator returns the assignment operator at the start of t, or "".
// ==, =~ and != compare; :// opens a URL.
func operator(t string) string {
	if t == "" {
		return ""
	}
	switch t[0] {
	case '=':
		switch {
		case strings.HasPrefix(t, "=>"):
			return "=>"
		case strings.HasPrefix(t, `=\u003e`): // => in JSON from Go's encoder
			return `=\u003e`
		case len(t) > 1 && (t[1] == '=' || t[1] == '~'):
			return ""
		}
		return "="
	case ':':
		switch {
		case strings.HasPrefix(t, "::="):
			return "::="
		case strings.HasPrefix(t, ":="):
			return ":="
		case len(t) > 1 && t[1] == ':':
			return ""
		}
		return ":"
	case '?', '+':
		if len(t) > 1 && t[1] == '=' {
			return t[:2]
		}
	case '<':
		if strings.HasPrefix(t, "<-") {
			return "<-"
		}
	case ',':
		return ","
	}
	return ""
}

// typeEnd returns where the operator is after a declared type at s[i]
// (string = …, : String = …, : &str = …), or 0 when there is none.
func typeEnd(s string, i int) int {
	j := i
	colon := j < len(s) && s[j] == ':' && (j+1 >= len(s) || s[j+1] != '=' && s[j+1] != ':')
	if colon {
		j = skipSpace(s, j+1)
	}
	k := j
	for k < len(s) && (nameByte(s[k]) || strings.IndexByte("[]*&<>?", s[k]) >= 0) {
		k++
	}
	if k == j || k == i {
		return 0
	}
	if !colon && (k == len(s) || s[k] != ' ' && s[k] != '\t') {
		return 0 // var token string = …: a space before the type's operator
	}
	if !colon && !letterStart(s[j:k]) {
		return 0
	}
	e := skipSpace(s, k)
	if e == k {
		return 0 // Cookie: sid=…: a type is spaced from its operator
	}
	if op := operator(s[e:]); op == "=" || op == ":=" {
		return e
	}
	return 0
}

// netrc reports whether the name at s[ns] is a .netrc password: "machine
// HOST login USER password SECRET", on one line.
func netrc(s string, ns int, name string) bool {
	if name != "password" && name != "passwd" {
		return false
	}
	b := max(ns-256, 0)
	if k := strings.LastIndexByte(s[b:ns], '\n'); k >= 0 {
		b += k + 1
	}
	head := s[b:ns]
	return strings.Contains(head, "login ") || strings.HasPrefix(head, "machine ") || strings.HasPrefix(head, "default ")
}

// call reports whether v opens with a call or an index of a name:
// os.getenv("KEY"), os.environ["KEY"], getSecret().
func call(v string) bool {
	i := 0
	for i < len(v) && (nameByte(v[i]) || v[i] == ':') {
		i++
	}
	return i < len(v) && (v[i] == '(' || v[i] == '[') && callee(v[:i])
}

// callee reports whether v can name what is called or indexed: a name
// with no digits (Tr0ub4dor(3)x is a password).
func callee(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if digit(v[i]) {
			return false
		}
	}
	return true
}

func letterStart(t string) bool {
	return t != "" && (lower(t[0]) || upper(t[0]) || t[0] == '[' || t[0] == '*')
}

// headerName reports whether a name is an HTTP header's (X-Api-Key,
// Authorization, Cookie, Set-Cookie).
func headerName(name string) bool {
	for _, h := range []string{"authorization", "proxy-authorization", "cookie", "set-cookie"} {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	if !strings.Contains(name, "-") || !upper(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// quoteAt returns the quote that opens a string at s[i]: ", ', `, or a
// quote escaped once or more (\", \\\") inside a JSON string.
func quoteAt(s string, i int) string {
	k := i
	for k < len(s) && s[k] == '\\' && k-i < 8 { // JSON in JSON in JSON: deeper is not a quote
		k++
	}
	if k < len(s) && (s[k] == '"' || s[k] == '\'' || s[k] == '`' && k == i) {
		return s[i : k+1]
	}
	return ""
}

// callArg reports whether the quoted name opening at s[i] is a call's
// first argument: os.Setenv("KEY", …), define('DB_PASSWORD', …).
func callArg(s string, i int) bool {
	for i > 0 && s[i-1] == ' ' {
		i--
	}
	return i > 1 && s[i-1] == '(' && nameByte(s[i-2])
}

// escapeEnds reports whether a JSON escape (\n, \t, \r, \uXXXX) ends at
// s[i]: a name or a token after it starts there.
func escapeEnds(s string, i int) bool {
	if i >= 2 && s[i-2] == '\\' && strings.IndexByte("nrtbf", s[i-1]) >= 0 {
		return true
	}
	return i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' && hexDigit(s[i-4]) && hexDigit(s[i-3]) && hexDigit(s[i-2]) && hexDigit(s[i-1])
}

// closeQuote returns where the string opened by q before s[i] ends: at its
// closing quote, past backslash escapes, or at the end of the line (or at
// lim).
func closeQuote(s string, i int, q string, lim int) int {
	for j := i; j < lim; j++ {
		c := s[j]
		switch {
		case c == '\n':
			return j
		case strings.HasPrefix(s[j:], q) && (len(q) == 1 || s[j-1] != '\\'):
			return j
		case c == '\\' && q != "`" && j+1 < len(s) && len(q) == 1:
			j++
		}
	}
	return lim
}

// bareEnd reports whether c ends a bare value: space, quotes and the
// separators of lists, queries, connection strings and calls.
func bareEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ',', ';', '&', '(', ')', '[', ']', '{', '}', '<', '>', '|':
		return true
	}
	return false
}

// wordEnd reports whether c ends a shell word: space or a quote.
func wordEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`':
		return true
	}
	return false
}

// lineStart reports whether only indentation, a list dash, or export /
// set / ENV lies between the line's start and s[i]; and whether that line
// starts at a \n escape (a text inside a JSON string). It looks back a
// bounded way, so that a long line costs no more per name.
func lineStart(s string, i int) (start, escaped bool) {
	j := i
	for j > 0 && i-j < 256 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	if j > 0 && s[j-1] != '\n' && !lower(s[j-1]) && !upper(s[j-1]) && s[j-1] != '-' {
		return false, false // "name": or x=name: not at a line's start, the common case
	}
	for _, kw := range []string{"export", "set", "ENV", "declare -x", "setenv", "-"} {
		if k := j - len(kw); k >= 0 && s[k:j] == kw && (k == 0 || s[k-1] == ' ' || s[k-1] == '\t' || s[k-1] == '\n' || k >= 2 && s[k-2:k] == `\n`) && j < i {
			j = k
			for j > 0 && i-j < 256 && (s[j-1] == ' ' || s[j-1] == '\t') {
				j--
			}
			break
		}
	}
	switch {
	case j == 0 || s[j-1] == '\n':
		return true, false
	case j >= 2 && s[j-1] == 'n' && s[j-2] == '\\':
		return true, true
	}
	return false, false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}
