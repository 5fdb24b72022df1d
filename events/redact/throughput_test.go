// throughput_test.go: the redactor's speed over a large generated log, whole
// and in the stream's 8 KB chunks, beside a frozen copy of the rule-set
// redactor it replaces and a single regexp of the vendor formats.

package redact_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/runehost/runehost/events/redact"
)

// benchCorpus is generated once per run and kind (50 MB takes about a
// second), on first use.
type benchCorpus struct {
	text   string
	pieces []string
}

var benchCorpora struct {
	sync.Mutex
	m map[float64]*benchCorpus
}

// benchMB is the corpus size, REDACT_BENCH_MB (default 50).
func benchMB(b *testing.B) int {
	if s := os.Getenv("REDACT_BENCH_MB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("REDACT_BENCH_MB=%q: want a positive number", s)
		}
		return n
	}
	return 50
}

func corpusFor(b *testing.B, rate float64) *benchCorpus {
	benchCorpora.Lock()
	defer benchCorpora.Unlock()
	if c := benchCorpora.m[rate]; c != nil {
		return c
	}
	if benchCorpora.m == nil {
		benchCorpora.m = map[float64]*benchCorpus{}
	}
	text, _ := genLog(defaultSeed, benchMB(b)<<20, rate)
	c := &benchCorpus{text: text}
	c.pieces, _ = chunks(text, 8000)
	benchCorpora.m[rate] = c
	return c
}

var sink string

// BenchmarkThroughput redacts the corpus with ~1% of its lines carrying a
// secret and with none. The old rule set runs at about 1 MB/s: at the
// default 50 MB a run takes minutes, so give it -timeout 0, or set
// REDACT_BENCH_MB=2 for a quick look.
func BenchmarkThroughput(b *testing.B) {
	impls := []struct {
		name string
		f    func(string) string
	}{
		// A Redactor of its own: String's memo of short inputs would
		// only blur the figures (8 KB chunks skip it anyway).
		{"redact", redact.New().String},
		{"baseline", baselineRedact},
		{"oneregexp", func(s string) string { return oneRegexp.ReplaceAllString(s, baseMark) }},
	}
	for _, kind := range []struct {
		name string
		rate float64
	}{{"mixed", 0.01}, {"clean", 0}} {
		b.Run(kind.name, func(b *testing.B) {
			c := corpusFor(b, kind.rate)
			for _, im := range impls {
				b.Run(im.name, func(b *testing.B) {
					b.Run("chunks", func(b *testing.B) {
						b.SetBytes(int64(len(c.text)))
						b.ReportAllocs()
						for b.Loop() {
							for _, p := range c.pieces {
								sink = im.f(p)
							}
						}
					})
					// One call over the whole text: the rules are
					// regular expressions, linear in their input.
					b.Run("whole", func(b *testing.B) {
						b.SetBytes(int64(len(c.text)))
						b.ReportAllocs()
						for b.Loop() {
							sink = im.f(c.text)
						}
					})
				})
			}
		})
	}
}

// The one-regexp baseline: the vendor formats as one alternation, the floor
// of what a pass of Go's regexp over the text costs.
var oneRegexp = regexp.MustCompile(`xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|` +
	`sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|` +
	`(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z+/=]{16,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`)

// What follows is a copy of the rule-set redactor as redact.go had it before
// its rewrite (the formats, without host secrets: Default has none), frozen
// here so that one run shows the new against the old.

const baseMark = "«redacted»"

type baseRule struct {
	re   *regexp.Regexp
	repl string
}

var baseRules = []baseRule{
	{regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|(\n?)\z)`), "-----BEGIN ${1}PRIVATE KEY-----" + baseMark + "-----END ${1}PRIVATE KEY-----${2}"},
	{regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)(bearer|basic|token|digest)\s+[^\s"',;]+`), "${1}${2} " + baseMark},
	{regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}`), "${1} " + baseMark},
	{regexp.MustCompile(`(?im)^((?:set-)?cookie\s*:\s*)[^\r\n]+`), "${1}" + baseMark},
	{regexp.MustCompile(`(?i)(-H\s*["']?(?:set-)?cookie\s*:\s*)[^"'\r\n]+`), "${1}" + baseMark},
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s:@'"]+):([^/\s'"]*)@`), "${1}${2}:" + baseMark + "@"},
	{regexp.MustCompile(`((?:^|\s)(?:-u|--user)\s*=?\s*)(["'])([^:"'\r\n]+):([^"'\r\n]*)(["'])`), "${1}${2}${3}:" + baseMark + "${5}"},
	{regexp.MustCompile(`((?:^|\s)(?:-u|--user)\s*=?\s*)([^\s:"']+):([^\s"']+)`), "${1}${2}:" + baseMark},
	{regexp.MustCompile(`(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+`), "${1}" + baseMark},
	{regexp.MustCompile(`xox[abposre]-[A-Za-z0-9-]{10,}`), baseMark},
	{regexp.MustCompile(`xapp-[A-Za-z0-9-]{10,}`), baseMark},
	{regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`), baseMark},
	{regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), baseMark},
	{regexp.MustCompile(`(x-access-token:)[^@\s"']+`), "${1}" + baseMark},
	{regexp.MustCompile(`sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}`), baseMark},
	{regexp.MustCompile(`(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}`), baseMark},
	{regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`), baseMark},
	{regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}`), baseMark},
	{regexp.MustCompile(`whsec_[0-9A-Za-z+/=]{16,}`), baseMark},
}

var (
	baseAssignEq      = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)(\s*=\s*)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"'&;,()=]+)`)
	baseAssignYAML    = regexp.MustCompile(`(?m)^(\s*-?\s*)([A-Za-z_][A-Za-z0-9_.-]*)(\s*:[ \t]+)("[^"\r\n]*"|'[^'\r\n]*'|[^#\r\n]*[^\s#])([ \t]+#[^\r\n]*)?[ \t]*$`)
	baseAssignJSON    = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_.-]*)"(\s*:\s*)"((?:[^"\\\r\n]|\\.)*)"`)
	baseAssignSingle  = regexp.MustCompile(`'([A-Za-z_][A-Za-z0-9_.-]*)'(\s*:\s*)'([^'\r\n]*)'`)
	baseAssignEscaped = regexp.MustCompile(`\\"([A-Za-z_][A-Za-z0-9_.-]*)\\"(\s*:\s*)\\"((?:[^"\\\r\n]|\\[^"])*)\\"`)
	baseAssignHeader  = regexp.MustCompile(`((?:^|[\s"'<>])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+)(\s*:\s*)([^\s"',;]+)`)
	baseAssignFlag    = regexp.MustCompile(`((?:^|\s)--?[A-Za-z][A-Za-z0-9-]*)(\s+|=)([^\s-][^\s]*)`)
)

var baseSecretWords = map[string]bool{
	"secret": true, "secrets": true, "key": true, "apikey": true, "token": true, "tokens": true,
	"password": true, "passwd": true, "pwd": true, "pass": true, "passphrase": true,
	"credential": true, "credentials": true, "auth": true, "signature": true, "sig": true, "dsn": true, "cookie": true,
	"privatekey": true, "accesskey": true, "secretkey": true, "clientsecret": true,
}

var baseErrorWords = map[string]bool{
	"failed": true, "fail": true, "failure": true, "error": true, "err": true, "expired": true,
	"invalid": true, "missing": true, "denied": true, "revoked": true, "refused": true, "rejected": true,
	"unauthorized": true, "forbidden": true, "mismatch": true, "required": true, "notfound": true,
	"length": true, "len": true, "count": true, "type": true, "name": true, "file": true,
	"path": true, "url": true, "ttl": true, "expiry": true, "expires": true,
}

func baseComponents(name string) []string {
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

func baseSecretName(name string) bool {
	parts := baseComponents(name)
	marked := false
	for i, p := range parts {
		if baseErrorWords[p] {
			return false
		}
		if baseSecretWords[p] {
			marked = true
		}
		if i > 0 && baseSecretWords[parts[i-1]+p] {
			marked = true
		}
	}
	return marked
}

func baseEmptyish(v string) bool {
	v = strings.Trim(v, `"'`)
	switch strings.ToLower(v) {
	case "", "null", "nil", "none", "true", "false", "undefined", "***", "<redacted>", "changeme":
		return true
	}
	return strings.Contains(v, baseMark) || strings.HasPrefix(v, "${") || strings.HasPrefix(v, "$(")
}

func baseSecretish(v string) bool {
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

func baseQuoteLike(orig, v string) string {
	if len(orig) >= 2 && (orig[0] == '"' || orig[0] == '\'') {
		return orig[:1] + v + orig[:1]
	}
	return v
}

func baselineRedact(s string) string {
	if s == "" {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for _, ru := range baseRules {
		s = ru.re.ReplaceAllString(s, ru.repl)
	}
	s = baseAssignJSON.ReplaceAllStringFunc(s, func(m string) string {
		g := baseAssignJSON.FindStringSubmatch(m)
		if !baseSecretName(g[1]) || baseEmptyish(g[3]) {
			return m
		}
		return `"` + g[1] + `"` + g[2] + `"` + baseMark + `"`
	})
	s = baseAssignEq.ReplaceAllStringFunc(s, func(m string) string {
		g := baseAssignEq.FindStringSubmatch(m)
		if !baseSecretName(g[1]) || baseEmptyish(g[3]) {
			return m
		}
		return g[1] + g[2] + baseQuoteLike(g[3], baseMark)
	})
	s = baseAssignYAML.ReplaceAllStringFunc(s, func(m string) string {
		g := baseAssignYAML.FindStringSubmatch(m)
		if !baseSecretName(g[2]) || baseEmptyish(g[4]) {
			return m
		}
		return g[1] + g[2] + g[3] + baseQuoteLike(g[4], baseMark) + g[5]
	})
	for _, re := range []*regexp.Regexp{baseAssignSingle, baseAssignEscaped, baseAssignHeader, baseAssignFlag} {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			g := re.FindStringSubmatch(m)
			if !baseSecretName(strings.TrimLeft(g[1], " \t\"'<>-")) || baseEmptyish(g[3]) {
				return m
			}
			if re == baseAssignFlag && !baseSecretish(g[3]) {
				return m
			}
			if re == baseAssignSingle {
				return "'" + g[1] + "'" + g[2] + "'" + baseMark + "'"
			}
			if re == baseAssignEscaped {
				return `\"` + g[1] + `\"` + g[2] + `\"` + baseMark + `\"`
			}
			return g[1] + g[2] + baseMark
		})
	}
	return s
}
