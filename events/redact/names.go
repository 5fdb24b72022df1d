// names.go holds the rule for names: which names mark their value as a
// secret, from the name's components, and how strongly.

package redact

import "strings"

// A strength says what a name tells of its value.
type strength uint8

const (
	notSecret strength = iota
	// weak: the name may hold a secret (key, token, auth): the value's
	// shape decides. key=user:42 is a cache key, key=9f2Kx81Lq0Zp7w a secret.
	weak
	// strong: the value is a secret unless it is plainly not one (empty,
	// a placeholder, a reference to where the secret is kept).
	strong
)

// strongWords mark a value secret whatever else the name holds.
var strongWords = map[string]bool{
	"secret": true, "secrets": true, "password": true, "passwd": true, "pwd": true,
	"passphrase": true, "passcode": true, "credential": true, "credentials": true, "creds": true,
	"apikey": true, "privatekey": true, "accesskey": true, "secretkey": true, "clientsecret": true,
	"accesstoken": true, "authtoken": true, "refreshtoken": true, "apitoken": true, "dsn": true,
	"cookie": true, "authorization": true,
}

// weakWords mark a value that may be secret: alone, the value decides.
var weakWords = map[string]bool{
	"key": true, "keys": true, "token": true, "tokens": true, "auth": true, "sig": true,
	"signature": true, "pass": true, "pat": true, "private": true,
}

// qualifiers make key a credential's key (api_key, ACCOUNT_KEY), not a
// cache's or a table's.
var qualifiers = map[string]bool{
	"api": true, "access": true, "secret": true, "private": true, "client": true, "signing": true,
	"encryption": true, "master": true, "account": true, "app": true, "auth": true, "license": true,
	"service": true, "admin": true, "consumer": true, "webhook": true, "deploy": true, "ssh": true,
	"shared": true, "storage": true, "subscription": true, "bot": true, "root": true, "sas": true,
	"hmac": true, "jwt": true, "aes": true, "rsa": true, "gpg": true, "pgp": true, "crypto": true,
	"session": true, "cipher": true, "decryption": true, "db": true, "database": true,
	"smtp": true, "personal": true, "sendgrid": true, "stripe": true, "openai": true, "anthropic": true,
	"aws": true, "gcp": true, "azure": true, "github": true, "gitlab": true, "slack": true, "user": true,
}

// otherWords make a name an error code or a reference to a secret, never
// the secret: github-token-mint-failed: HTTP 422 is a diagnosis,
// TOKEN_URL=https://… is where tokens come from, max_tokens: 4096 a limit.
var otherWords = map[string]bool{
	"failed": true, "fail": true, "failure": true, "error": true, "errors": true, "err": true,
	"expired": true, "invalid": true, "missing": true, "denied": true, "revoked": true, "refused": true,
	"rejected": true, "unauthorized": true, "forbidden": true, "mismatch": true, "required": true,
	"notfound": true, "length": true, "len": true, "count": true, "type": true, "name": true,
	"names": true, "file": true, "files": true, "path": true, "url": true, "uri": true, "ttl": true,
	"expiry": true, "expires": true, "expiration": true, "ref": true, "reference": true, "arn": true,
	"env": true, "var": true, "field": true, "param": true, "prompt": true, "label": true, "hint": true,
	"policy": true, "format": true, "size": true, "bits": true, "algorithm": true, "alg": true,
	"endpoint": true, "host": true, "dir": true, "location": true, "provider": true, "method": true,
	"mode": true, "scheme": true, "version": true, "kind": true, "index": true, "prefix": true,
	"limit": true, "max": true, "min": true, "budget": true, "used": true, "usage": true,
	"rotation": true, "timeout": true, "lifetime": true, "enabled": true, "disabled": true,
	"strength": true, "id": true, "ids": true, "hash": true, "fingerprint": true, "domain": true, "public": true, "publishable": true, "pub": true, "pubkey": true,
	"secure": true,
}

// appendComponents appends the components of name to parts: name split at
// _, -, ., :, / and camelCase boundaries (APIKey is api and key), as slices
// of lowered (name lower-cased), so that no part is allocated.
func appendComponents(parts []string, lowered, name string) []string {
	start := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !alnum(c) {
			if start < i {
				parts = append(parts, lowered[start:i])
			}
			start = i + 1
			continue
		}
		if i > start && upper(c) {
			p := name[i-1]
			// aB starts a word; so does the B of ABc (APIKey: API, Key).
			if lower(p) || digit(p) || (upper(p) && i+1 < len(name) && lower(name[i+1])) {
				parts = append(parts, lowered[start:i])
				start = i
			}
		}
	}
	if start < len(name) {
		parts = append(parts, lowered[start:])
	}
	return parts
}

// nameStrength is what a name says of its value.
func nameStrength(name string) strength {
	var buf [16]string
	lowered := name
	if len(name) <= 64 {
		var b [64]byte
		lowered = lowerInto(b[:0], name)
	} else {
		lowered = strings.ToLower(name)
	}
	parts := appendComponents(buf[:0], lowered, name)
	got := notSecret
	for i, p := range parts {
		c := classOf[p]
		if c&cOther != 0 && !(i == 0 && (p == "id" || p == "ids")) { // id_token is a token
			return notSecret
		}
		switch {
		case c&cStrong != 0, joinedStrong(p):
			got = strong
		case i > 0 && pairs[[2]string{parts[i-1], p}]: // api_key, client-secret written apart
			got = strong
		case c&cWeak != 0:
			got = max(got, weakStrength(parts, i))
		}
	}
	return got
}

// The classes of a component, in one map so that a name costs one lookup
// per component.
const (
	cStrong = 1 << iota
	cWeak
	cQualifier
	cOther
)

var classOf = func() map[string]uint8 {
	m := map[string]uint8{}
	for _, set := range []struct {
		words map[string]bool
		class uint8
	}{{strongWords, cStrong}, {weakWords, cWeak}, {qualifiers, cQualifier}, {otherWords, cOther}} {
		for w := range set.words {
			m[w] |= set.class
		}
	}
	return m
}()

// pairs are the strong words written in one (apikey) as two components.
var pairs = func() map[[2]string]bool {
	m := map[[2]string]bool{}
	for w := range strongWords {
		for i := 1; i < len(w); i++ {
			m[[2]string{w[:i], w[i:]}] = true
		}
	}
	return m
}()

// joinedSuffixes end a name written in one word (PGPASSWORD, dbpassword,
// MYAPIKEY) that marks a secret.
var joinedSuffixes = []string{"password", "passwd", "passphrase", "secret", "apikey", "accesstoken",
	"authtoken", "apitoken", "secretkey", "privatekey", "accesskey"}

func joinedStrong(p string) bool {
	for _, w := range joinedSuffixes {
		if len(p) > len(w) && strings.HasSuffix(p, w) {
			return true
		}
	}
	return false
}

// weakStrength is the strength of weak word parts[i] among the others:
// GITHUB_TOKEN and DB_PASS are credentials; a key needs a qualifier
// (api_key, ACCOUNT_KEY; not cache_key, sort_key); plurals (max_tokens,
// keys) stay weak.
func weakStrength(parts []string, i int) strength {
	p := parts[i]
	if len(parts) == 1 || p == "tokens" || p == "keys" || p == "sig" || p == "signature" || p == "auth" || p == "private" {
		return weak
	}
	if p == "key" || p == "pat" {
		for j, q := range parts {
			if j != i && classOf[q]&cQualifier != 0 {
				return strong
			}
		}
		return weak
	}
	return strong // token, pass with another word: GITHUB_TOKEN, SMTP_PASS
}

// Assignment reports whether value, assigned to name, is redacted: by the
// same rule the redactor applies to NAME=VALUE in a text.
func Assignment(name, value string) bool {
	return secretValue(name, nameStrength(name), value)
}

// SecretName reports whether name marks its value as a secret at all,
// strongly (DB_PASSWORD) or weakly (RUNEHOST_MODEL_KEY, whose value decides
// in a text): the rule a caller that knows the variable holds a key of its
// own applies.
func SecretName(name string) bool { return nameStrength(name) != notSecret }

// secretValue is the rule for value v of a name of strength str: a strong
// name's value unless it is a placeholder, a weak one's if it is shaped
// like a secret. PWD=/home/ada is the working directory.
func secretValue(name string, str strength, v string) bool {
	switch {
	case str == notSecret || placeholder(v):
		return false
	case name == "PWD" && (v[0] == '/' || v[0] == '~' || len(v) > 2 && v[1] == ':' && v[2] == '\\'):
		return false // the working directory; ODBC's Pwd=/Zx81… is a password
	case filePath(v): // GOOGLE_APPLICATION_CREDENTIALS=/home/ada/key.json: where it is kept
		return false
	case str == weak:
		return secretShaped(v) && !(digest(v) && keyName(name))
	}
	return true
}

// keyName reports whether a weak name is a key's (cache_key, key), not a
// token's or a signature's.
func keyName(name string) bool {
	var buf [16]string
	for _, p := range appendComponents(buf[:0], strings.ToLower(name), name) {
		if classOf[p]&cWeak != 0 && p != "key" && p != "keys" {
			return false
		}
	}
	return true
}

// lowerInto lowers ASCII name into b without allocating when it can.
func lowerInto(b []byte, name string) string {
	for i := 0; i < len(name); i++ {
		if upper(name[i]) {
			for j := 0; j < len(name); j++ {
				c := name[j]
				if upper(c) {
					c += 'a' - 'A'
				}
				b = append(b, c)
			}
			return string(b)
		}
	}
	return name
}

// filePath reports whether v is plainly a file's path: under a system or
// home directory, or naming a file by its extension. A secret may hold
// slashes (AWS's do), so a slash alone does not make a path.
func filePath(v string) bool {
	if strings.ContainsAny(v, " \t") {
		return false
	}
	for _, root := range []string{"/home/", "/etc/", "/var/", "/tmp/", "/run/", "/usr/", "/opt/", "/root/", "/Users/", "/srv/", "/mnt/", "~/", "./", "../"} {
		if strings.HasPrefix(v, root) {
			return true
		}
	}
	if v[0] != '/' {
		return false
	}
	dot := strings.LastIndexByte(v, '.')
	switch strings.ToLower(v[dot+1:]) {
	case "json", "pem", "key", "txt", "yaml", "yml", "toml", "env", "p12", "pfx", "crt", "cfg", "conf", "ini":
		return dot > strings.LastIndexByte(v, '/')
	}
	return false
}

func alnum(c byte) bool { return lower(c) || upper(c) || digit(c) }
func lower(c byte) bool { return 'a' <= c && c <= 'z' }
func upper(c byte) bool { return 'A' <= c && c <= 'Z' }
func digit(c byte) bool { return '0' <= c && c <= '9' }
