// plants_test.go: the planted lines of the corpus, one family of secrets
// each, written in the syntaxes the redactor covers.

package redact_test

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// A plant is a line carrying one secret.
type plant struct {
	family, syntax string // what was planted and how it is written
	line           string
	secret         string
	fixed          int  // leading bytes of secret that are public: a vendor's prefix
	anchored       bool // the syntax needs the line to itself (YAML, curl -v)
	offset         int  // in a corpus: the secret's byte offset
}

func (p plant) key() string { return p.family + " " + p.syntax }

// vendor is a token of a vendor's format: its family, the token, and the
// length of its public prefix.
func (g *gen) vendor() (string, string, int) {
	switch g.r.IntN(16) {
	case 0:
		return "slack", "xoxb-" + g.digits(g.n(10, 13)) + "-" + g.digits(g.n(10, 13)) + "-" + g.chars(alnum, 24), 5
	case 1:
		return "slack", "xoxp-" + g.digits(g.n(10, 13)) + "-" + g.digits(g.n(10, 13)) + "-" + g.digits(g.n(10, 13)) + "-" + g.hex(32), 5
	case 2:
		return "slack", "xapp-1-A" + g.chars(upper+digit, 10) + "-" + g.digits(13) + "-" + g.hex(64), 7
	case 3, 4, 5:
		return "github", g.pick("ghp_", "gho_", "ghs_") + g.chars(alnum, 36), 4
	case 6:
		return "github", "github_pat_" + g.chars(alnum, 22) + "_" + g.chars(alnum, 59), 11
	case 7:
		return "openai", "sk-" + g.chars(alnum, 48), 3
	case 8:
		return "openai", "sk-proj-" + g.chars(alnum, 1) + g.chars(b64url, g.n(60, 150)) + g.chars(alnum, 1), 8
	case 9:
		return "anthropic", "sk-ant-api03-" + g.chars(b64url, 93) + "AA", 13
	case 10:
		return "aws", "AKIA" + g.chars(upper+digit, 16), 4
	case 11:
		return "google", "AIza" + g.chars(b64url, 35), 4
	case 12:
		return "stripe", g.pick("sk_live_", "rk_live_") + g.chars(alnum, g.n(24, 99)), 8
	case 13:
		return "stripe", "whsec_" + g.chars(alnum, 32), 6
	}
	return "jwt", g.jwt(), 3
}

func (g *gen) jwt() string {
	header := g.pick(`{"alg":"HS256","typ":"JWT"}`, `{"alg":"RS256","typ":"JWT","kid":"`+g.hex(16)+`"}`, `{"alg":"ES256","kid":"`+g.chars(alnum, 10)+`"}`)
	iat := g.when().Unix()
	payload := g.pick(
		fmt.Sprintf(`{"sub":"%s","iat":%d,"exp":%d}`, g.digits(8), iat, iat+3600),
		fmt.Sprintf(`{"iss":"https://auth.example.com/","sub":"auth0|%s","aud":"api","iat":%d,"exp":%d,"scope":"read:org"}`, g.hex(24), iat, iat+86400))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + g.b64(enc, g.pick32or256())
}

func (g *gen) pick32or256() int {
	if g.chance(0.6) {
		return 32
	}
	return 256
}

// secretNames are names that mark the value assigned to them.
var secretNames = []string{"password", "db_password", "apiKey", "API_KEY", "client_secret", "SECRET_KEY", "auth_token", "GITHUB_TOKEN"}

// kebab writes a name as a command-line flag does: apiKey, API_KEY -> api-key.
func kebab(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_':
			b.WriteByte('-')
		case 'A' <= r && r <= 'Z':
			if i > 0 && 'a' <= name[i-1] && name[i-1] <= 'z' {
				b.WriteByte('-')
			}
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// families plant one secret each, in a syntax of their own choosing.
var families = []func(g *gen) plant{
	// A vendor's token, wherever a token is written.
	func(g *gen) plant {
		fam, tok, fixed := g.vendor()
		p := plant{family: fam, secret: tok, fixed: fixed}
		switch g.r.IntN(8) {
		case 0:
			p.syntax, p.line = "prose", fmt.Sprintf(g.pick("using %s for the upstream call", "error: credentials %s were rejected (401)", "found %s in the build log", "rotated the bot to %s."), tok)
		case 1:
			p.syntax, p.line = "json", `{"level":"info","msg":"client configured","client":"`+g.pick("slack", "gh", "llm")+`","value":"`+tok+`"}`
		case 2:
			p.syntax, p.line = "env-neutral", g.pick("SLACK_BOT", "UPSTREAM", "X", "arg")+"="+tok
		case 3:
			p.syntax, p.line = "url-path", "POST https://api.example.com/v1/hooks/"+tok+"/deliver -> 202"
		case 4:
			p.syntax, p.line = "python", "client = Client('"+tok+"', timeout=30)"
		case 5:
			p.syntax, p.line = "logfmt", `level=warn msg="upstream rejected" cred=`+tok+" status=401"
		case 6:
			p.syntax, p.line = "bracketed", fmt.Sprintf(g.pick("saw [%s] in the reply", "(%s)", "<%s>", "value `%s` is set"), tok)
		default:
			p.syntax, p.line = "yaml-list", "  - "+tok
		}
		return p
	},
	// Authorization headers.
	func(g *gen) plant {
		scheme, cred := "Bearer", g.chars(alnum, 1)+g.chars(alnum+"._~+/-", g.n(18, 62))+g.chars(alnum, 1)
		switch g.r.IntN(3) {
		case 0:
			cred = g.jwt()
		case 1:
			scheme, cred = "Basic", base64.StdEncoding.EncodeToString([]byte(g.user()+":"+g.secret(quotedSyms)))
		}
		p := plant{family: "auth-header", secret: cred}
		switch g.r.IntN(8) {
		case 0:
			p.syntax, p.line = "header", "Authorization: "+scheme+" "+cred
		case 1:
			p.syntax, p.line = "lowercase", "authorization: "+strings.ToLower(scheme)+" "+cred
		case 2:
			p.syntax, p.line = "curl-H", `curl -sS -H "Authorization: `+scheme+" "+cred+`" https://`+g.host()+"/v1/me"
		case 3:
			p.syntax, p.line, p.anchored = "curl-v", "> Authorization: "+scheme+" "+cred, true
		case 4:
			p.syntax, p.line = "json", `{"headers":{"Accept":"application/json","Authorization":"`+scheme+" "+cred+`"}}`
		case 5:
			p.syntax, p.line = "python", "requests.get(url, headers={'Authorization': '"+scheme+" "+cred+"'})"
		case 6:
			p.syntax, p.line = "go", `req.Header.Set("Authorization", "`+scheme+" "+cred+`")`
		default:
			p.syntax, p.line = "proxy", "Proxy-Authorization: "+scheme+" "+cred
		}
		return p
	},
	// Cookies.
	func(g *gen) plant {
		name := g.pick("sid", "session", "_session_id", "connect.sid", "JSESSIONID", "__Host-session", "remember_token")
		val := g.pick(g.hex(32), g.chars(alnum, g.n(24, 48)), "s%3A"+g.chars(alnum, 32)+"."+g.b64(base64.RawURLEncoding, 32))
		c := name + "=" + val
		p := plant{family: "cookie", secret: val}
		switch g.r.IntN(7) {
		case 0:
			p.syntax, p.line = "header", "Cookie: "+g.pick("theme=dark; "+c+"; lang=en", c, "lang=en; "+c)
		case 1:
			p.syntax, p.line = "set-cookie", "Set-Cookie: "+c+"; Path=/; HttpOnly; Secure; SameSite=Lax"
		case 2:
			p.syntax, p.line, p.anchored = "curl-v-request", "> Cookie: "+c, true
		case 3:
			p.syntax, p.line, p.anchored = "curl-v-response", "< set-cookie: "+c+"; Path=/; HttpOnly", true
		case 4:
			p.syntax, p.line = "curl-H", "curl -H 'Cookie: "+c+"' https://app.example.com/account"
		case 5:
			p.syntax, p.line = "curl-b", "curl -b '"+c+"' https://app.example.com/account"
		default:
			p.syntax, p.line = "json", `{"method":"GET","headers":{"cookie":"`+c+`","accept":"*/*"}}`
		}
		return p
	},
	// Passwords in a URL's userinfo.
	func(g *gen) plant {
		pass := g.secret(urlSyms)
		scheme := g.pick("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqps", "https", "sqlserver")
		user := g.user()
		p := plant{family: "url-userinfo", secret: pass}
		if scheme == "redis" && g.chance(0.5) {
			user = "" // redis://:password@host
		}
		u := scheme + "://" + user + ":" + pass + "@" + g.host()
		if scheme != "mongodb+srv" && scheme != "https" {
			u += ":" + g.num(1024, 9999)
		}
		if scheme == "https" {
			u += "/org/repo.git"
		} else {
			u += g.pick("/app", "/0", "/prod?sslmode=require")
		}
		switch g.r.IntN(6) {
		case 0:
			p.syntax, p.line = "log", "connecting to "+u
		case 1:
			p.syntax, p.line = "env", "DATABASE_URL="+u
		case 2:
			p.syntax, p.line = "yaml-quoted", `  url: "`+u+`"`
		case 3:
			p.syntax, p.line = "json", `{"upstream":"`+u+`","pool":10}`
		case 4:
			p.syntax, p.line = "go", `db, err := sql.Open("pgx", "`+u+`")`
		default:
			p.syntax, p.line = "git", "git clone "+u
		}
		if user == "" {
			p.syntax += "-nouser"
		}
		return p
	},
	// Secrets in query parameters.
	func(g *gen) plant {
		name := g.pick("access_token", "client_secret", "api_key", "token", "refresh_token", "sig", "X-Amz-Signature", "password", "apikey")
		val := g.chars(alnum, 1) + g.chars(alnum+urlSyms, g.n(18, 60)) + g.chars(alnum, 1)
		if name == "X-Amz-Signature" {
			val = g.hex(64)
		}
		q := name + "=" + val
		switch g.r.IntN(3) {
		case 0:
			q = "?" + q + "&page=2"
		case 1:
			q = "?state=" + g.hex(16) + "&" + q
		default:
			q = "?" + q
		}
		p := plant{family: "query-param", secret: val}
		switch g.r.IntN(5) {
		case 0:
			p.syntax, p.line = "access-log", fmt.Sprintf(`%s - - [%s] "GET /oauth/callback%s HTTP/1.1" 302 0 "-" "Mozilla/5.0"`, g.ip(), g.when().Format("02/Jan/2006:15:04:05 -0700"), q)
		case 1:
			p.syntax, p.line = "url-log", "GET https://"+g.host()+"/v1/items"+q+" -> 200 ("+g.dur()+")"
		case 2:
			p.syntax, p.line = "json", `{"level":"debug","msg":"fetch","url":"https://`+g.host()+"/v1/items"+q+`"}`
		case 3:
			p.syntax, p.line = "fragment", "Location: https://app.example.com/callback#"+name+"="+val+"&token_type=Bearer&expires_in=3600"
		default:
			p.syntax, p.line = "curl", "curl 'https://"+g.host()+"/v1/items"+q+"'"
		}
		return p
	},
	// Connection strings.
	func(g *gen) plant {
		pass := g.secret(connSyms)
		p := plant{family: "conn-string", secret: pass}
		var cs string
		switch g.r.IntN(5) {
		case 0:
			p.syntax, cs = "ado", "Server=tcp:"+g.host()+",1433;Initial Catalog=app;User ID="+g.user()+";Password="+pass+";Encrypt=True;"
		case 1:
			p.syntax, cs = "ado-pwd", "Data Source="+g.host()+";User Id="+g.user()+";Pwd="+pass+";"
		case 2:
			p.syntax, cs = "jdbc", "jdbc:sqlserver://"+g.host()+":1433;databaseName=app;user=sa;password="+pass+";encrypt=true"
		case 3:
			p.syntax, cs = "libpq", "host="+g.host()+" port=5432 user=app password="+pass+" dbname=app sslmode=require"
		default:
			p.secret = g.b64(base64.StdEncoding, 64)
			p.syntax, cs = "azure", "DefaultEndpointsProtocol=https;AccountName="+g.chars(lower, 10)+";AccountKey="+p.secret+";EndpointSuffix=core.windows.net"
		}
		if g.chance(0.4) {
			p.syntax += "-in-json"
			p.line = `{"ConnectionStrings":{"Default":"` + cs + `"}}`
		} else {
			p.line = cs
		}
		return p
	},
	// curl -u user:password.
	func(g *gen) plant {
		pass := g.secret("-_.+%~")
		up := g.user() + ":" + pass
		p := plant{family: "curl-user", secret: pass}
		switch g.r.IntN(4) {
		case 0:
			p.syntax, p.line = "-u", "curl -u "+up+" https://"+g.host()+"/v1/me"
		case 1:
			p.syntax, p.line = "--user", "curl --user "+up+" https://"+g.host()+"/v1/me"
		case 2:
			p.syntax, p.line = "-u-quoted", "curl -fsS -u '"+up+"' https://"+g.host()+"/v1/me"
		default:
			p.syntax, p.line = "--user=", "curl --user="+up+" -X POST https://"+g.host()+"/v1/deploy"
		}
		return p
	},
	// Assignments whose name marks the value.
	func(g *gen) plant {
		name := g.pick(secretNames...)
		p := plant{family: "assign"}
		v := g.secret(quotedSyms)
		switch g.r.IntN(14) {
		case 0:
			v = g.secret(bareSyms)
			p.syntax, p.line = "NAME=v", name+"="+v
		case 1:
			p.syntax, p.line = `NAME="v"`, name+`="`+v+`"`
		case 2:
			p.syntax, p.line = "export NAME='v'", "export "+name+"='"+v+"'"
		case 3:
			v = g.secret(bareSyms)
			p.syntax, p.line, p.anchored = "yaml", g.pick("", "  ", "    ")+name+": "+v, true
		case 4:
			p.syntax, p.line = "json", `{"user":"`+g.user()+`","`+name+`": "`+v+`","retries":3}`
		case 5:
			p.syntax, p.line = "json-in-string", `{"level":"debug","msg":"request body","body":"{\"user\":\"`+g.user()+`\",\"`+name+`\":\"`+v+`\"}"}`
		case 6:
			p.syntax, p.line = "go :=", "\t"+name+` := "`+v+`"`
		case 7:
			p.syntax, p.line = "ruby =>", "  "+g.pick("", ":")+name+" => '"+v+"',"
		case 8:
			v = g.secret(bareSyms)
			p.syntax, p.line = "--flag=v", "app serve --"+kebab(name)+"="+v+" --port 8080"
		case 9:
			v = g.secret(bareSyms)
			p.syntax, p.line = "--flag v", "app serve --"+kebab(name)+" "+v+" --port 8080"
		case 10:
			v = g.secret(bareSyms)
			p.syntax, p.line = "name:v", "auth ok user:"+g.user()+" "+name+":"+v
		case 11:
			p.syntax, p.line = "toml", name+` = "`+v+`"`
		case 12:
			p.syntax, p.line = "python-kwarg", `conn = connect(host="`+g.host()+`", `+name+`="`+v+`")`
		default:
			p.syntax, p.line, p.anchored = "yaml-quoted", "  "+name+`: "`+v+`"`, true
		}
		p.secret = v
		return p
	},
}

func (g *gen) plant() plant { return families[g.r.IntN(len(families))](g) }
