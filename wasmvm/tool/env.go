// env.go holds the rule for a tool's environment: the host's own
// configuration is never given, by its name, nor any host secret inside a
// value under another name, raw or encoded.

package tool

import (
	"os"
	"strings"

	"github.com/runehost/runehost/events/redact"
)

// HostOwn reports whether an environment variable is the host's own
// configuration (RUNEHOST_*, SLACK_*: the store, the model endpoints and
// their keys, the Slack tokens), which no tool is ever given.
func HostOwn(name string) bool {
	return strings.HasPrefix(name, "RUNEHOST_") || strings.HasPrefix(name, "SLACK_")
}

// HostSecret reports whether environment variable name, set to value, holds
// one of the host's secrets: a variable the redactor counts as one
// (redact.Assignment: GITHUB_TOKEN, OPENAI_API_KEY, *_PASSWORD...), or one
// of the host's own whose name marks a secret at all (RUNEHOST_MODEL_KEY,
// whatever its value looks like: the host knows it is a key). It is the one
// rule for both the redactor's list (acts.EnvSecrets) and CheckEnv.
func HostSecret(name, value string) bool {
	return value != "" && (redact.Assignment(name, value) || HostOwn(name) && redact.SecretName(name))
}

// CheckEnv refuses a variable for a tool, KEY=VALUE, that is the host's
// own by its name, or whose value holds a host secret of this process's
// environment (HostSecret, at least redact.MinSecret bytes) in any form the
// redactor strips: raw in any letter case, hex, base64 or base64url at any
// alignment, padded or not, URL- or JSON-escaped. The error names the host
// variable and the encoding, never the value.
func CheckEnv(kv string) error {
	k, v, _ := strings.Cut(kv, "=")
	if HostOwn(k) {
		return &Error{What: "env", Msg: k + ": " + ErrHostEnv.Error(), Err: ErrHostEnv}
	}
	for _, hkv := range os.Environ() {
		hk, hv, _ := strings.Cut(hkv, "=")
		if len(hv) < redact.MinSecret || !HostSecret(hk, hv) {
			continue
		}
		if enc := redact.Find(v, hv); enc != "" {
			what := k + " holds the value of " + hk + " (" + enc + ")"
			if hk == k && enc == "raw" {
				what = k + " is one of the host's secrets" // granted by its own name
			}
			return &Error{What: "env", Msg: what + ": " + ErrHostEnv.Error(), Err: ErrHostEnv}
		}
	}
	return nil
}
