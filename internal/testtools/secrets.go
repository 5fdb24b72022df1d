// secrets.go holds host secrets hidden in every encoding a tool.env value
// might carry them in, for the tests of each path to a tool.

package testtools

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
)

// HostSecret is a variable of the host's environment that holds a secret.
type HostSecret struct{ Name, Value string }

// HostSecrets are a Slack bot token, a model key under OpenAI's name (not
// the host's own prefix: the redactor's rule counts it) and a host token
// whose bytes escape differently in a URL's query and path and give '+'
// and '/' in base64.
var HostSecrets = []HostSecret{
	{"SLACK_BOT_TOKEN", "xoxb-2210-9876543210-Zx81kLm2Qp9sT4vWaB3c"},
	{"OPENAI_API_KEY", "sk-proj-Qx7Lm2Zp9sT4vWkR81bN0cYd"},
	{"RUNEHOST_DEPLOY_TOKEN", "rh tok/en+?>~=9z&Q~~~"},
}

// A Hidden value holds a secret in one encoding.
type Hidden struct {
	Case  string // the encoding and where the secret sits, for a test's name
	Value string
}

// encodings turn a text into the form a value carries it in.
var encodings = []struct {
	name string
	enc  func(string) string
}{
	{"raw", func(s string) string { return s }},
	{"upper", strings.ToUpper},
	{"lower", strings.ToLower},
	{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }},
	{"HEX", func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) }},
	{"base64", b64(base64.StdEncoding)},
	{"base64-raw", b64(base64.RawStdEncoding)},
	{"base64url", b64(base64.URLEncoding)},
	{"base64url-raw", b64(base64.RawURLEncoding)},
	{"query", url.QueryEscape},
	{"path", url.PathEscape},
}

func b64(enc *base64.Encoding) func(string) string {
	return func(s string) string { return enc.EncodeToString([]byte(s)) }
}

// Hide returns secret in each encoding, embedded in a longer text before
// it is encoded (at offsets 0 to 4, so at each byte of a base64 group) and
// the encoding embedded again in a longer value.
func Hide(secret string) []Hidden {
	var out []Hidden
	for _, e := range encodings {
		for i, pre := range []string{"", "a", "ab", "abc=", "user:"} {
			suf := []string{"", "!", "&x=1", "\n"}[i%4]
			out = append(out, Hidden{
				Case:  fmt.Sprintf("%s/at%d", e.name, len(pre)),
				Value: []string{"", "Bearer ", "v="}[i%3] + e.enc(pre+secret+suf) + []string{"", ";", " tail"}[i%3],
			})
		}
	}
	return out
}

// Innocent are values no host secret is in: ordinary text, a base64 blob,
// and pieces of the secrets shorter than the rule matches.
var Innocent = []string{
	"/home/ada", "hello world", "en_US.UTF-8", "sk-proj-", "xoxb-2210",
	base64.StdEncoding.EncodeToString([]byte("an ordinary value of no importance at all")),
	hex.EncodeToString([]byte("xoxb-22")), "Zx81kLm", "rh tok/",
}
