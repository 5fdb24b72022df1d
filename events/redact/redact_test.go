// redact_test.go: realistic leaked shapes are fully redacted, look-alikes
// are untouched, and (fuzzed) a planted secret never survives redaction and
// capping.

package redact

import (
	"strings"
	"testing"
)

// lookAlikes must come out exactly as they went in.
var lookAlikes = []string{
	"The token expired, so ask for a new token and retry.",
	"PORT=3000\nREACT_VERSION=18.2.0\nMONKEY_BARS=4\nNODE_ENV=production",
	"commit 3f786850e387550fdab836ed7e6dc881de23001b",
	"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"request id 123e4567-e89b-12d3-a456-426614174000",
	"github-token-mint-failed: HTTP 422 Unprocessable Entity",
	"error: TOKEN_EXPIRED: please sign in again",
	"key_file=/etc/ssl/server.pem\nTOKEN_URL=https://auth.example.com/token\nSECRET_NAME=prod-db",
	`{"key": null, "token_type": "bearer", "expires_in": 3600}`,
	"Use the --password flag to set it.",
	"https://example.com/path?q=1 and http://localhost:8080/",
	"sort keys: a, b, c",
	"password: ${DB_PASSWORD}",
	"the bypass=on switch",
	"keyboard: us\nmonkey: 3",
	"PWD=/home/ada\nOLDPWD=/home/ada/src",
	"GOOGLE_APPLICATION_CREDENTIALS=/home/ada/.config/gcloud/key.json\nssl_key: /etc/ssl/private/app.key",
	`publicKey: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"`,
	"password_hash: $2b$12$abcdefghijklmnopqrstuv",
	"tokenizer: cl100k_base",
}

func TestLookAlikesUntouched(t *testing.T) {
	for _, s := range lookAlikes {
		if got := String(s); got != s {
			t.Errorf("changed:\n%s\n->\n%s", s, got)
		}
	}
}

func TestHostSecrets(t *testing.T) {
	r := New("Zq9-sentinel-value", "short")
	got := r.String("echo Zq9-sentinel-value; short stays")
	if strings.Contains(got, "Zq9-sentinel-value") || !strings.Contains(got, "short stays") {
		t.Fatalf("got %q", got)
	}
}

func TestNameStrength(t *testing.T) {
	for name, want := range map[string]strength{
		"AWS_SECRET_ACCESS_KEY": strong, "apiKey": strong, "GITHUB_TOKEN": strong, "db.password": strong, "client-secret": strong,
		"PGPASSWORD": strong, "SharedAccessKey": strong, "key": weak, "cache_key": weak, "max_tokens": notSecret, "tokens": weak,
		"MONKEY_BARS": notSecret, "PORT": notSecret, "token_type": notSecret, "github-token-mint-failed": notSecret,
		"KEY_ID": notSecret, "id_token": strong, "keyboard": notSecret, "public_key": notSecret, "secret_name": notSecret,
	} {
		if got := nameStrength(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

// Shapes found by a review: each must be redacted.
func TestReviewedShapes(t *testing.T) {
	for _, c := range []struct{ text, secret string }{
		{"password: correct horse battery", "correct horse"},
		{"api_key: Xk29dk2 # prod", "Xk29dk2"},
		{"> X-Api-Key: abcdef123456", "abcdef123456"},
		{"< Set-Cookie: sid=31d4d96e407aad42", "31d4d96e407aad42"},
		{`curl -H "X-Auth-Token: tok9876543" https://x`, "tok9876543"},
		{"{'api_key': 'py-secret-999'}", "py-secret-999"},
		{`{\"password\":\"esc-secret-77\"}`, "esc-secret-77"},
		{"id_token=eyJraWQiOiIxIn0.abc", "eyJraWQiOiIxIn0"},
		{"auth_header: Zm9vYmFyYmF6", "Zm9vYmFyYmF6"},
		{"https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXX"},
		{"https://acct.blob.core.windows.net/c/f?sv=2020&sig=AbCdEf123%3D", "AbCdEf123"},
		{"postgres://u:p@ss@word1@host/db", "ss@word1"},
		{"curl -u 'bob:pass word' https://x", "pass word"},
		{"mysql --password hunter2hunter2 db", "hunter2hunter2"},
		{"run --api-key=sk9sk9sk9sk9", "sk9sk9sk9sk9"},
		// Found while building the one-pass reader.
		{"Cookie: sid=31d4d96e; csrftoken=zz9", "31d4d96e"},
		{"machine api.example.com login ada password Hu7nter2x", "Hu7nter2x"},
		{`char password[] = "Kd93jdKs02kd";`, "Kd93jdKs02kd"},
		{"PGPASSWORD=Hu7nter2 psql -h db", "Hu7nter2"},
		{"Server=db;Uid=sa;Pwd=hunter2;", "hunter2"},
		{`password <- "Kd93jdKs02kd"`, "Kd93jdKs02kd"},
		{"password: |\n  Kd93jdKs02kd\n  more\nnext: ok\n", "Kd93jdKs02kd"},
		{`os.Setenv("API_KEY", "Kd93jdKs02kd")`, "Kd93jdKs02kd"},
		{`{"log":"x\npassword: Kd93jdKs02kd\nuser: ada"}`, "Kd93jdKs02kd"},
		{`{"cmd":"export TOKEN_X=Kd93jdKs02kd\nls"}`, "Kd93jdKs02kd"},
		{"//registry.npmjs.org/:_authToken=abcd1234-ef56-7890-abcd-1234567890ab", "abcd1234-ef56"},
	} {
		if got := String(c.text); strings.Contains(got, c.secret) {
			t.Errorf("%q survived: %q", c.secret, got)
		}
	}
}

// Values and tokens longer than the bounded first read go whole.
func TestLongValues(t *testing.T) {
	long := func(n int) string {
		const alpha = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz"
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[(i*7+i/13)%len(alpha)]
		}
		return string(b)
	}
	v := long(5000)
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJ" + long(9000) + "." + long(300)
	for _, text := range []string{
		`password="` + v + `"`, "password: " + v, "Authorization: Basic " + v, `-H "Authorization: Bearer ` + v + `"`,
		"token=" + v, "xoxb-1234-" + v, "curl -u ada:" + v, "see " + jwt + ".", "https://ada:" + v[:900] + "@example.com/",
	} {
		got := String(text)
		for i := 0; i+16 <= len(v); i += 97 {
			if strings.Contains(got, v[i:i+16]) {
				t.Fatalf("a piece at %d of a long value survived in %.80q…", i, got)
			}
		}
	}
}

// Found by a review of the one-pass reader: each must hold.
func TestReviewFindings(t *testing.T) {
	for _, c := range []struct{ text, secret string }{
		{"PRIVATE_KEY=-----BEGIN RSA PRIVATE KEY-----\nMIIEbodyLine1\n-----END RSA PRIVATE KEY-----", "MIIEbodyLine1"},
		{"PRIVATE_KEY=\"-----BEGIN RSA PRIVATE KEY-----\nMIIEbodyLine1\n-----END RSA PRIVATE KEY-----\"", "MIIEbodyLine1"},
		{"password: -----BEGIN PRIVATE KEY-----\nMIIEbodyLine1\n-----END PRIVATE KEY-----", "MIIEbodyLine1"},
		{"authorization=Bearer 9f2Kx81Lq0Zp7wRtAbc", "9f2Kx81Lq0Zp7wRtAbc"},
		{"access_token=Bearer 9f2Kx81Lq0Zp7wRtAbc", "9f2Kx81Lq0Zp7wRtAbc"},
		{`{"msg":"config:\npassword: |\n  hunter2x9Q\n"}`, "hunter2x9Q"},
		{"xoxb-" + strings.Repeat("a", 1100) + " xoxb-1234567890-abcdefABCDEF", "xoxb-1234567890-abcdefABCDEF"},
		{"DB_PASSWORD=Tr0ub4dor(3)x", "Tr0ub4dor"},
		{"Server=db;Pwd=/Zx81kLm2Qp9;", "Zx81kLm2Qp9"},
		{"password=Correct.Horse.Battery.Staple", "Horse.Battery"},
		{"DB_PASSWORD=p4ss,w0rd9", "w0rd9"},
		{"https://ada:" + strings.Repeat("Zx81kLm2", 200) + "@example.com/", "Zx81kLm2Zx81kLm2"},
		{"curl -u root:root https://x", ":root "},
	} {
		if got := String(c.text); strings.Contains(got, c.secret) {
			t.Errorf("%q survived: %.120q", c.secret, got)
		}
	}
	for _, s := range []string{
		"docker run -u www-data:www-data nginx", "sudo -u ada ls", "make -B V=1 all", "git checkout -B topic=x",
		"Cache restored from key: node-cache-Linux-x64-npm-8c8a3c7b9d2e", "key=0121aa87d877606c777fcd986061d95e63baf6fc",
		"cache key: 0121aa87d877606c777fcd986061d95e63baf6fc", "Use Bearer token-based auth", "password: ••••••••",
		"password=" + strings.Repeat(`\`, 1100) + `"x`, `"token": ` + strings.Repeat(`\`, 1100),
	} {
		if got := String(s); got != s {
			t.Errorf("changed: %.80q -> %.80q", s, got)
		}
	}
}
