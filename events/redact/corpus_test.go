// corpus_test.go: a seeded generator of realistic log text, mostly lines that
// hold no secret and some carrying a planted one of a covered family, and the
// recall of the redactor over such a corpus.

package redact_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/events/redact"
)

// gen draws the pieces of log lines from one seeded source: the same seed
// and stream give the same text.
type gen struct{ r *rand.Rand }

func newGen(seed int64, stream uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(uint64(seed), stream))}
}

const (
	lower  = "abcdefghijklmnopqrstuvwxyz"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digit  = "0123456789"
	alnum  = lower + upper + digit
	hexLow = "0123456789abcdef"
	b64url = alnum + "-_"

	// Symbols of generated secrets, by where the value stands. None is one
	// that JSON escapes (" \ < > &), so a secret reads the same raw and
	// inside a JSON string.
	bareSyms   = "-_.+@%~"               // unquoted: shell, YAML, flags
	quotedSyms = bareSyms + "#*^/:?=,;!" // inside quotes
	urlSyms    = "-._~"                  // unreserved in a URL
	connSyms   = bareSyms + "#*^!"       // a value in key=value; lists
)

func (g *gen) n(lo, hi int) int         { return lo + g.r.IntN(hi-lo+1) }
func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) chance(p float64) bool    { return g.r.Float64() < p }
func (g *gen) hex(n int) string         { return g.chars(hexLow, n) }
func (g *gen) digits(n int) string      { return g.chars(digit[1:], 1) + g.chars(digit, n-1) }
func (g *gen) num(lo, hi int) string    { return strconv.Itoa(g.n(lo, hi)) }
func (g *gen) b64(enc *base64.Encoding, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return enc.EncodeToString(b)
}

func (g *gen) chars(alpha string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alpha[g.r.IntN(len(alpha))]
	}
	return string(b)
}

// secret is a generic secret value of 12 to 40 characters: random mixed
// case letters, digits and some of syms (never at either end), or hex, or
// base64url. Whatever the shape, it is one a person would call a secret.
func (g *gen) secret(syms string) string {
	switch k := g.r.IntN(10); {
	case k == 0:
		return g.hex(g.pick32or40())
	case k == 1:
		return g.chars(alnum, 1) + g.chars(alnum+"-_", g.n(18, 38)) + g.chars(alnum, 1)
	}
	n := g.n(12, 40)
	b := []byte(g.chars(alnum, n))
	for i := 1; i < n-1; i++ {
		if syms != "" && g.chance(0.12) {
			b[i] = syms[g.r.IntN(len(syms))]
		}
	}
	// One of each class, so that every value mixes them.
	p := g.r.Perm(n)
	b[p[0]], b[p[1]], b[p[2]] = lower[g.r.IntN(26)], upper[g.r.IntN(26)], digit[g.r.IntN(10)]
	return string(b)
}

func (g *gen) pick32or40() int {
	if g.chance(0.5) {
		return 32
	}
	return 40
}

// Pieces of ordinary lines.

var epoch = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

func (g *gen) when() time.Time {
	return epoch.Add(time.Duration(g.r.Int64N(int64(30 * 24 * time.Hour))))
}
func (g *gen) iso() string    { return g.when().Format("2006-01-02T15:04:05.000Z07:00") }
func (g *gen) syslog() string { return g.when().Format("Jan _2 15:04:05") }
func (g *gen) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}
func (g *gen) sha() string    { return g.hex(40) }
func (g *gen) digest() string { return "sha256:" + g.hex(64) }
func (g *gen) ip() string {
	switch g.r.IntN(3) {
	case 0:
		return "10." + g.num(0, 255) + "." + g.num(0, 255) + "." + g.num(1, 254)
	case 1:
		return g.pick("203.0.113.", "198.51.100.", "192.0.2.") + g.num(1, 254)
	}
	return "2001:db8:" + strconv.FormatInt(int64(g.n(1, 0xffff)), 16) + "::" + g.num(1, 99)
}
func (g *gen) dur() string {
	switch g.r.IntN(3) {
	case 0:
		return g.num(1, 999) + "ms"
	case 1:
		return time.Duration(g.r.Int64N(int64(5 * time.Second))).Round(time.Microsecond).String()
	}
	return time.Duration(g.r.Int64N(int64(10 * time.Minute))).Round(100 * time.Millisecond).String()
}
func (g *gen) semver() string {
	return g.num(0, 9) + "." + g.num(0, 30) + "." + g.num(0, 40)
}
func (g *gen) user() string {
	return g.pick("ada", "bob", "carol", "deploy", "svc-api", "ci-runner", "postgres")
}
func (g *gen) host() string {
	return g.pick("api.example.com", "db-"+g.num(1, 9)+".internal", "cache.internal", "auth.example.org", "registry.example.io", "web-"+g.num(1, 40))
}
func (g *gen) pod() string {
	return g.pick("web", "worker", "api", "scheduler") + "-" + g.hex(9) + "-" + g.chars(lower+digit, 5)
}
func (g *gen) path() string {
	return g.pick("/var/log/nginx/access.log", "/etc/app/config.yaml", "/srv/app/releases/"+g.when().Format("20060102150405")+"/bin/app",
		"/home/deploy/.cache/go-build/"+g.hex(2)+"/"+g.hex(64)+"-d", "/usr/lib/python3.11/site-packages/requests/adapters.py",
		"/tmp/runehost-"+g.num(1000, 99999)+"/work/out.txt", "./internal/store/store.go", "/var/lib/postgresql/16/main/base/"+g.num(16000, 17000)+"/"+g.num(1000, 9999),
		"/etc/ssl/certs/ca-certificates.crt", "/opt/app/node_modules/express/lib/router/index.js")
}
func (g *gen) urlPath() string {
	p := g.pick("/api/v1/users/"+g.num(1, 9999), "/static/js/app."+g.hex(8)+".js", "/healthz", "/api/v2/orders/"+g.uuid(),
		"/login", "/settings/tokens", "/repos/org/app/commits/"+g.sha(), "/metrics")
	switch g.r.IntN(4) {
	case 0:
		p += "?page=" + g.num(1, 20) + "&per_page=50&sort=created_at"
	case 1:
		p += "?q=" + g.pick("reset+password", "token+expired", "api+key", "deploy") + "&lang=en"
	case 2:
		p += "?ref=main&v=" + g.semver()
	}
	return p
}

// A clean unit is one or more lines that hold no secret.
type cleanKind struct {
	name string
	gen  func(g *gen) string
}

var cleanKinds = []cleanKind{
	{"access-log", func(g *gen) string {
		user := "-"
		if g.chance(0.2) {
			user = g.user()
		}
		return fmt.Sprintf(`%s - %s [%s] "%s %s HTTP/1.1" %s %s "%s" "%s" %s`, g.ip(), user, g.when().Format("02/Jan/2006:15:04:05 -0700"),
			g.pick("GET", "GET", "POST", "PUT", "DELETE"), g.urlPath(), g.pick("200", "200", "204", "301", "304", "404", "500"), g.num(0, 90000),
			g.pick("-", "https://app.example.com/dashboard", "https://www.google.com/"),
			g.pick("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", "curl/8.5.0", "Go-http-client/2.0", "kube-probe/1.29"),
			strconv.FormatFloat(g.r.Float64(), 'f', 3, 64))
	}},
	{"zap-json", func(g *gen) string {
		f := fmt.Sprintf(`{"level":"%s","ts":%d.%03d,"caller":"%s","msg":"%s"`, g.pick("info", "debug", "warn", "error"), g.when().Unix(), g.n(0, 999),
			g.pick("server/handler.go:", "store/pg.go:", "auth/refresh.go:")+g.num(20, 400),
			g.pick("request served", "cache miss", "token refreshed", "password policy loaded", "retrying upstream", "key rotation scheduled"))
		if g.chance(0.7) {
			f += fmt.Sprintf(`,"method":"GET","path":"%s","status":%s,"latency":"%s"`, g.urlPath(), g.pick("200", "404", "503"), g.dur())
		}
		if g.chance(0.5) {
			f += fmt.Sprintf(`,"request_id":"%s","trace_id":"%s"`, g.uuid(), g.hex(32))
		}
		if g.chance(0.3) {
			f += fmt.Sprintf(`,"commit":"%s","version":"v%s"`, g.sha(), g.semver())
		}
		return f + "}"
	}},
	{"slog-json", func(g *gen) string {
		kv := g.pick(`"key":"user:`+g.num(1, 9999)+`","ttl":"5m0s"`, `"key": "approval:`+g.num(1, 99)+`","age":"`+g.dur()+`"`,
			`"user_id":`+g.num(1, 9999)+`,"ip":"`+g.ip()+`"`, `"token_type":"Bearer","expires_in":3600`, `"max_tokens":4096,"model":"claude-sonnet-4-5"`)
		return fmt.Sprintf(`{"time":"%s","level":"%s","msg":"%s",%s}`, g.iso(), g.pick("INFO", "DEBUG", "WARN"),
			g.pick("cache hit", "approval pending", "session started", "oauth exchange done", "completion done"), kv)
	}},
	{"logfmt", func(g *gen) string {
		s := fmt.Sprintf(`time=%s level=%s msg="%s"`, g.iso(), g.pick("debug", "info", "warn"),
			g.pick("refreshing token", "password changed", "cache set", "completion done", "listening"))
		switch g.r.IntN(4) {
		case 0:
			s += " key=user:" + g.num(1, 9999) + " hit=" + g.pick("true", "false")
		case 1:
			s += " model=claude-sonnet-4-5 input_tokens=" + g.num(10, 90000) + " output_tokens=" + g.num(1, 4096)
		case 2:
			s += " addr=:" + g.num(3000, 9000) + " pid=" + g.num(2, 60000)
		}
		return s + " duration=" + g.dur() + " request_id=" + g.uuid()
	}},
	{"python-trace", func(g *gen) string {
		return "Traceback (most recent call last):\n" +
			`  File "` + g.path() + `", line ` + g.num(10, 900) + ", in " + g.pick("request", "urlopen", "send", "<module>") + "\n" +
			"    resp = self.send(prep, **send_kwargs)\n" +
			`  File "/usr/lib/python3.11/site-packages/urllib3/connectionpool.py", line ` + g.num(10, 900) + ", in urlopen\n" +
			g.pick("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='"+g.host()+"', port=443): Max retries exceeded with url: /v1/items",
				"KeyError: 'api_key'", "ValueError: token must be a str, not NoneType", "TimeoutError: timed out after "+g.dur())
	}},
	{"go-panic", func(g *gen) string {
		return "panic: runtime error: invalid memory address or nil pointer dereference\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x" + g.hex(2) + " pc=0x" + g.hex(6) + "]\n\n" +
			"goroutine " + g.num(1, 900) + " [running]:\n" +
			"github.com/example/app/store.(*Store).Get(0x0, {0xc000" + g.hex(6) + ", 0x" + g.hex(1) + "})\n" +
			"\t/src/app/store/store.go:" + g.num(10, 500) + " +0x" + g.hex(3) + "\n" +
			"main.main()\n\t/src/app/main.go:" + g.num(10, 99) + " +0x" + g.hex(2)
	}},
	{"k8s", func(g *gen) string {
		switch g.r.IntN(4) {
		case 0:
			return fmt.Sprintf(`I%s       1 controller.go:%s] "Reconciling" pod="default/%s" revision=%s`, g.when().Format("0102 15:04:05.000000"), g.num(50, 400), g.pod(), g.num(1, 40))
		case 1:
			return fmt.Sprintf("%s   1/1     %s   %s          %sd%sh", g.pod(), g.pick("Running", "Pending", "CrashLoopBackOff"), g.num(0, 9), g.num(0, 30), g.num(0, 23))
		case 2:
			return fmt.Sprintf(`  Normal   Pulled     %sm    kubelet  Successfully pulled image "nginx:%s" in %s`, g.num(1, 59), g.semver(), g.dur())
		}
		return "deployment.apps/" + g.pick("web", "api", "worker") + " " + g.pick("configured", "unchanged", "created")
	}},
	{"k8s-manifest", func(g *gen) string {
		return "        image: ghcr.io/example/app@" + g.digest() + "\n" +
			"        env:\n" +
			"        - name: DB_PASSWORD\n" +
			"          valueFrom:\n" +
			"            secretKeyRef:\n" +
			"              name: db-credentials\n" +
			"              key: password\n" +
			"        - name: LOG_LEVEL\n" +
			"          value: " + g.pick("debug", "info") + "\n" +
			"        replicas: " + g.num(1, 9)
	}},
	{"systemd", func(g *gen) string {
		pre := g.syslog() + " " + g.pick("web-3", "db-1", "ci-7") + " "
		switch g.r.IntN(5) {
		case 0:
			return pre + "systemd[1]: Started " + g.pick("nginx", "postgresql", "app") + ".service - " + g.pick("A high performance web server", "PostgreSQL RDBMS", "App server") + "."
		case 1:
			return pre + "sshd[" + g.num(100, 60000) + "]: Accepted publickey for deploy from " + g.ip() + " port " + g.num(1024, 65535) + " ssh2: ED25519 SHA256:" + g.b64(base64.RawStdEncoding, 32)
		case 2:
			return pre + "sshd[" + g.num(100, 60000) + "]: Failed password for invalid user " + g.pick("admin", "oracle", "test") + " from " + g.ip() + " port " + g.num(1024, 65535) + " ssh2"
		case 3:
			return pre + "CRON[" + g.num(100, 60000) + "]: (root) CMD (/usr/local/bin/backup.sh --keep " + g.num(3, 30) + ")"
		}
		return pre + "app[" + g.num(100, 60000) + "]: listening on :" + g.num(3000, 9000)
	}},
	{"sql", func(g *gen) string {
		switch g.r.IntN(5) {
		case 0:
			return "SELECT id, email, created_at FROM users WHERE id = " + g.num(1, 99999) + " AND deleted_at IS NULL LIMIT 1;"
		case 1:
			return "INSERT INTO audit_log (actor, action, at) VALUES ('" + g.user() + "', '" + g.pick("login", "token.create", "key.rotate") + "', '" + g.when().Format("2006-01-02 15:04:05") + "');"
		case 2:
			return "UPDATE users SET password_hash = $1, updated_at = now() WHERE id = $2"
		case 3:
			return g.when().Format("2006-01-02 15:04:05.000 MST") + " [" + g.num(100, 60000) + "] LOG:  duration: " + g.num(0, 900) + "." + g.num(100, 999) + " ms  statement: SELECT count(*) FROM api_keys WHERE user_id = " + g.num(1, 9999)
		}
		return "CREATE INDEX CONCURRENTLY idx_sessions_user ON sessions (user_id, created_at);"
	}},
	{"git", func(g *gen) string {
		s := g.sha()
		switch g.r.IntN(5) {
		case 0:
			return "commit " + s + "\nAuthor: Ada Lovelace <ada@example.com>\nDate:   " + g.when().Format("Mon Jan 2 15:04:05 2006 -0700")
		case 1:
			return "[main " + s[:7] + "] " + g.pick("fix: refresh the token before expiry", "docs: explain key rotation", "chore: bump deps")
		case 2:
			return "   " + s[:7] + ".." + g.hex(7) + "  main -> main"
		case 3:
			return "HEAD is now at " + s[:7] + " " + g.pick("Merge pull request #"+g.num(1, 999)+" from org/fix-auth", "release v"+g.semver())
		}
		return "* " + s[:7] + " (HEAD -> main, origin/main) " + g.pick("add password reset page", "cache keys by tenant")
	}},
	{"docker", func(g *gen) string {
		switch g.r.IntN(5) {
		case 0:
			return g.hex(12) + ": Pull complete"
		case 1:
			return "Digest: " + g.digest()
		case 2:
			return "Status: Downloaded newer image for " + g.pick("nginx", "postgres", "redis") + ":" + g.semver()
		case 3:
			return "#" + g.num(3, 20) + " writing image " + g.digest() + " done"
		}
		return "latest: digest: " + g.digest() + " size: " + g.num(500, 9000)
	}},
	{"packages", func(g *gen) string {
		switch g.r.IntN(5) {
		case 0:
			return "added " + g.num(10, 900) + " packages, and audited " + g.num(10, 900) + " packages in " + g.num(1, 30) + "s"
		case 1:
			return "+ " + g.pick("express", "react", "jsonwebtoken", "lodash") + "@" + g.semver()
		case 2:
			return "Collecting requests==" + g.semver() + "\n  Downloading requests-" + g.semver() + "-py3-none-any.whl (" + g.num(10, 900) + " kB)"
		case 3:
			return "go: downloading github.com/" + g.pick("jackc/pgx/v5", "stretchr/testify", "golang-jwt/jwt/v5") + " v" + g.semver()
		}
		return "golang.org/x/" + g.pick("net", "crypto", "sys") + " v0." + g.num(1, 40) + ".0 h1:" + g.b64(base64.StdEncoding, 32)
	}},
	{"http-headers", func(g *gen) string {
		return "> GET " + g.urlPath() + " HTTP/2\n> Host: " + g.host() + "\n> User-Agent: curl/8.5.0\n> Accept: */*\n>\n< HTTP/2 200\n" +
			"< content-type: application/json; charset=utf-8\n< x-request-id: " + g.uuid() + "\n< etag: W/\"" + g.hex(40) + "\"\n< cache-control: private, max-age=0"
	}},
	{"config", func(g *gen) string {
		return g.pick("PORT="+g.num(3000, 9000), "timeout: "+g.num(1, 90)+"s", "log_level="+g.pick("debug", "info"), "key=user:"+g.num(1, 9999),
			`"key": "approval:`+g.num(1, 99)+`"`, "max_tokens: "+g.num(256, 8192), "NODE_ENV=production", "workers = "+g.num(1, 16),
			"retry_backoff: "+g.num(50, 900)+"ms", "DB_HOST=db-"+g.num(1, 9)+".internal", "password_min_length: "+g.num(8, 16),
			"key_file=/etc/ssl/server.pem", "TOKEN_URL=https://auth.example.com/oauth/token", "SECRET_NAME=prod-db", "sort_key=created_at",
			"cache_key=user:"+g.num(1, 9999)+":profile", "REACT_VERSION="+g.semver())
	}},
	{"prose", func(g *gen) string {
		return g.pick("The token expired, so ask for a new token and retry.", "Reset your password from the account settings page.",
			"Rotate the signing key every 90 days.", "Pass the API key in a header, not in the URL.", "password reset requested for user "+g.num(1, 9999),
			"key rotation completed in "+g.dur(), "token refresh failed: upstream returned 503", "missing API key; set OPENAI_API_KEY or pass --api-key",
			"Use a Bearer token in the Authorization header.", "the key was not found in the cache", "Your password must be at least 12 characters long.",
			"Generated a new key pair for deploy@ci.", "sort keys: a, b, c", "error: TOKEN_EXPIRED: please sign in again")
	}},
	{"url", func(g *gen) string {
		return g.pick("GET https://api.github.com/repos/org/app/commits/"+g.sha()+" -> 200 ("+g.dur()+")",
			"redirecting to https://app.example.com/login?next=%2Fsettings%2Ftokens",
			"Fetched https://registry.npmjs.org/express/-/express-"+g.semver()+".tgz",
			"webhook delivered to https://hooks.example.com/ci/build?id="+g.uuid(),
			"see https://github.com/org/app/blob/"+g.sha()+"/internal/auth/token.go#L"+g.num(1, 400))
	}},
	{"paths", func(g *gen) string {
		return g.pick("open "+g.path()+": no such file or directory", "wrote "+g.num(1, 900)+" KiB to "+g.path(),
			"loading certificates from /etc/ssl/certs/ca-certificates.crt", "ok  \tgithub.com/runehost/runehost/"+g.pick("events", "host", "store")+"\t"+g.dur(),
			"##[group]Run actions/checkout@v4", "listening on "+g.ip()+":"+g.num(1024, 65535))
	}},
}

// clean is one clean unit and the index of its kind.
func (g *gen) clean() (string, int) {
	k := g.r.IntN(len(cleanKinds))
	return cleanKinds[k].gen(g), k
}

// situate puts a plant in a line as a log writes it: maybe after a log
// prefix, maybe followed by more. It returns the line and the secret's
// byte offset in it.
func (g *gen) situate(p plant) (string, int) {
	line := p.line
	if !p.anchored && g.chance(0.3) {
		line = g.pick(g.iso()+" INFO ", g.syslog()+" web-3 app[913]: ", "[worker-"+g.num(1, 9)+"] ", "+ ") + line
	}
	if !p.anchored && g.chance(0.2) {
		line += g.pick(" (took "+g.dur()+")", " ok", " # from env")
	}
	return line, strings.Index(line, p.secret)
}

// genCorpus writes lines until the text holds size bytes, secretRate of them
// carrying a planted secret.
func genCorpus(seed int64, size int, secretRate float64) (string, []plant) {
	g := newGen(seed, 0)
	var b strings.Builder
	b.Grow(size + 4096)
	var plants []plant
	lines := 0
	for b.Len() < size {
		// Plant when the secrets lag their share by more than a random
		// fraction: random spacing, the exact share in the long run.
		if secretRate*float64(lines)-float64(len(plants)) > g.r.Float64() {
			p := g.plant()
			line, at := g.situate(p)
			p.line, p.offset = line, b.Len()+at
			plants = append(plants, p)
			b.WriteString(line)
			b.WriteByte('\n')
			lines++
			continue
		}
		u, _ := g.clean()
		b.WriteString(u)
		b.WriteByte('\n')
		lines += 1 + strings.Count(u, "\n")
	}
	return b.String(), plants
}

// genLog is genCorpus with only the planted values.
func genLog(seed int64, size int, secretRate float64) (text string, planted []string) {
	text, plants := genCorpus(seed, size, secretRate)
	for _, p := range plants {
		planted = append(planted, p.secret)
	}
	return text, planted
}

// chunks splits text at line ends into pieces of at most n bytes (a longer
// line is cut), as the CLI and the stream hand text to the redactor.
func chunks(text string, n int) (pieces []string, starts []int) {
	for at := 0; at < len(text); {
		end := min(at+n, len(text))
		if end < len(text) {
			if nl := strings.LastIndexByte(text[at:end], '\n'); nl >= 0 {
				end = at + nl + 1
			}
		}
		pieces, starts = append(pieces, text[at:end]), append(starts, at)
		at = end
	}
	return pieces, starts
}

// survivor is the longest piece of secret, 8 bytes or more and not within
// its public prefix, that out still holds: "" if none. Pieces that are also
// in one of others (JWTs of one issuer share their first segments) prove
// nothing and are passed over.
func survivor(out, secret string, fixed int, others ...string) string {
	const frag = 8
	if strings.Contains(out, secret) {
		return secret
	}
	for i := max(0, fixed-frag+1); i+frag <= len(secret); i++ {
		if w := secret[i : i+frag]; strings.Contains(out, w) && !slices.ContainsFunc(others, func(o string) bool { return strings.Contains(o, w) }) {
			j := i + frag
			for j < len(secret) && strings.Contains(out, secret[i:j+1]) {
				j++
			}
			return secret[i:j]
		}
	}
	return ""
}

// TestCorpusRecall redacts a corpus in the stream's chunks and counts the
// planted secrets that are gone, by family and syntax.
func TestCorpusRecall(t *testing.T) {
	seed := propSeed(t)
	text, plants := genCorpus(seed, 2<<20, 0.05)
	pieces, starts := chunks(text, 8000)
	r := redact.New()
	type tally struct {
		planted, removed int
		miss             *plant
	}
	by := map[string]*tally{}
	removed, k := 0, 0
	for i, piece := range pieces {
		out := r.String(piece)
		var here []string // the secrets planted in this piece
		from := k
		for end := starts[i] + len(piece); k < len(plants) && plants[k].offset < end; k++ {
			here = append(here, plants[k].secret)
		}
		for j := from; j < k; j++ {
			p := &plants[j]
			tl := by[p.key()]
			if tl == nil {
				tl = &tally{}
				by[p.key()] = tl
			}
			tl.planted++
			others := slices.Delete(slices.Clone(here), j-from, j-from+1)
			if survivor(out, p.secret, p.fixed, others...) == "" {
				tl.removed++
				removed++
			} else if tl.miss == nil {
				tl.miss = p
			}
		}
	}
	lines := strings.Count(text, "\n")
	// For scale, the other way: marks in a corpus with no secret at all.
	clean, _ := genCorpus(seed, 512<<10, 0)
	marks := 0
	cleanPieces, _ := chunks(clean, 8000)
	for _, p := range cleanPieces {
		marks += strings.Count(r.String(p), redact.Mark)
	}
	t.Logf("a clean corpus of %d bytes comes out with %d marks", len(clean), marks)
	t.Logf("recall %.4f: %d of %d planted secrets removed (%d lines, %.1f%% planted, %d chunks, seed %d)",
		float64(removed)/float64(len(plants)), removed, len(plants), lines, 100*float64(len(plants))/float64(lines), len(pieces), seed)
	if removed == len(plants) {
		return
	}
	var msg strings.Builder
	for _, key := range slices.Sorted(maps.Keys(by)) {
		tl := by[key]
		if tl.miss == nil {
			continue
		}
		fmt.Fprintf(&msg, "\n  %-32s %3d of %3d kept; e.g. %q -> %q", key, tl.planted-tl.removed, tl.planted, tl.miss.line, r.String(tl.miss.line))
	}
	t.Errorf("recall %.4f, want 1: secrets kept, by family and syntax:%s", float64(removed)/float64(len(plants)), msg.String())
}
