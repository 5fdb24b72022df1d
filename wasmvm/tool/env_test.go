// env_test.go: a host secret is refused in a tool's environment under any
// name, raw, in another case or encoded, anywhere in the value; the error
// names the host variable and the encoding, never the value; innocent
// values and short secrets pass.

package tool

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/runehost/runehost/internal/testtools"
)

func setHostSecrets(t *testing.T) {
	for _, s := range testtools.HostSecrets {
		t.Setenv(s.Name, s.Value)
	}
	t.Setenv("SHORT_TOKEN", "ab1-xy9") // under MinSecret: not checked
	t.Setenv("SORT_KEY", "created_at_desc")
}

func TestCheckEnvSecretInAnyEncoding(t *testing.T) {
	setHostSecrets(t)
	for _, s := range testtools.HostSecrets {
		for _, h := range testtools.Hide(s.Value) {
			err := CheckEnv("BUILD_INFO=" + h.Value)
			var te *Error
			if !errors.Is(err, ErrHostEnv) || !errors.As(err, &te) {
				t.Errorf("%s %s: %v", s.Name, h.Case, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, "BUILD_INFO holds the value of "+s.Name+" (") || strings.Contains(strings.ToLower(msg), strings.ToLower(s.Value)) {
				t.Errorf("%s %s: %s", s.Name, h.Case, msg)
			}
		}
	}
	for _, v := range append(testtools.Innocent, "ab1-xy9", "created_at_desc") {
		if err := CheckEnv("BUILD_INFO=" + v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// Each encoding is named as the one found.
func TestCheckEnvNamesEncoding(t *testing.T) {
	setHostSecrets(t)
	slack, token := testtools.HostSecrets[0].Value, testtools.HostSecrets[2].Value
	js, _ := json.Marshal(token)
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	for _, c := range []struct{ value, want string }{
		{"Bearer " + slack + ";", "holds the value of SLACK_BOT_TOKEN (raw)"},
		{strings.ToUpper(slack), "of SLACK_BOT_TOKEN (raw, in another letter case)"},
		{"0x" + hex.EncodeToString([]byte(slack)), "of SLACK_BOT_TOKEN (hex)"},
		{strings.ToUpper(hex.EncodeToString([]byte("." + slack))), "of SLACK_BOT_TOKEN (hex)"},
		{b64(base64.StdEncoding, "ab"+token), "of RUNEHOST_DEPLOY_TOKEN (base64)"},
		{b64(base64.RawURLEncoding, "a"+token+"z"), "of RUNEHOST_DEPLOY_TOKEN (base64url)"},
		{b64(base64.URLEncoding, "u:"+slack), "of SLACK_BOT_TOKEN (base64)"}, // no '+' or '/': the same text
		{"?t=" + url.QueryEscape(token), "of RUNEHOST_DEPLOY_TOKEN (URL query escape)"},
		{"/t/" + url.PathEscape(token), "of RUNEHOST_DEPLOY_TOKEN (URL path escape)"},
		{string(js), "of RUNEHOST_DEPLOY_TOKEN (JSON escape)"},
		{"?q=" + url.QueryEscape(b64(base64.StdEncoding, token)), "of RUNEHOST_DEPLOY_TOKEN (base64, URL-escaped)"},
		{"the docs", ""},
	} {
		err := CheckEnv("X=" + c.value)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.value, err, c.want)
		}
	}
	// A host secret granted by its own name; the host's own by name.
	for kv, want := range map[string]string{
		"OPENAI_API_KEY=" + testtools.HostSecrets[1].Value: "OPENAI_API_KEY is one of the host's secrets",
		"RUNEHOST_STORE=/tmp/s":                            "RUNEHOST_STORE: the host's own configuration",
		"SLACK_ANYTHING=x":                                 "SLACK_ANYTHING: the host's own configuration",
	} {
		if err := CheckEnv(kv); !errors.Is(err, ErrHostEnv) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// HostSecret is the redactor's rule, with the host's own keys whatever
// their shape.
func TestHostSecret(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        bool
	}{
		{"GITHUB_TOKEN", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", true},
		{"OPENAI_API_KEY", "sk-proj-Qx7Lm2Zp9sT4vWkR81bN0cYd", true},
		{"DB_PASSWORD", "hunter2hunter2", true},
		{"RUNEHOST_MODEL_KEY", "localmodelkey", true}, // not shaped like a secret, but the host's key
		{"RUNEHOST_MCP_FAR_KEY", "farfarfarfar", true},
		{"SLACK_SIGNING_SECRET", "8f742231b10e8888abcd99yyyzzz85a5", true},
		{"RUNEHOST_MODEL_MAX_TOKENS", "40960000", false},
		{"RUNEHOST_STORE", "/var/lib/runehost", false},
		{"SORT_KEY", "created_at_desc", false},
		{"PATH", "/usr/bin:/bin", false},
		{"GITHUB_TOKEN", "", false},
	} {
		if got := HostSecret(c.name, c.value); got != c.want {
			t.Errorf("HostSecret(%s, %q) = %v", c.name, c.value, got)
		}
	}
}
