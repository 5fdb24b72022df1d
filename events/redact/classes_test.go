// classes_test.go: secret classes, in the syntaxes their docs give, are redacted; near misses are not.

package redact

import (
	"strings"
	"testing"
)

// The values are made up here, shaped after the formats' own documentation,
// so that no scanner's fixtures decide what counts.
var classPositives = []struct {
	name    string
	text    string
	secrets []string // none may survive
	keep    []string // each must survive: what says which secret it was
}{
	// 1. Assignments whose name marks a secret.
	{"go short var decl", `apiKey := "go-K3y-f3Kq82"`, []string{"go-K3y-f3Kq82"}, []string{"apiKey :="}},
	{"go var with type", `var jiraToken string = "go-Jira-88aa1c"`, []string{"go-Jira-88aa1c"}, []string{"var jiraToken string ="}},
	{"go const", `const dbPassword = "go-Pw-Wq3mz0"`, []string{"go-Pw-Wq3mz0"}, []string{"const dbPassword ="}},
	{"typescript typed const", `const apiToken: string = "ts-Tok-4410";`, []string{"ts-Tok-4410"}, []string{"const apiToken: string ="}},
	{"swift typed let", `let password: String = "sw-Pw-7730"`, []string{"sw-Pw-7730"}, []string{"let password: String ="}},
	{"kotlin typed val", `val clientSecret: String = "kt-Cs-9981"`, []string{"kt-Cs-9981"}, []string{"val clientSecret: String ="}},
	{"rust const str", `const API_KEY: &str = "rs-Const-K3y-0193";`, []string{"rs-Const-K3y-0193"}, []string{"const API_KEY: &str ="}},
	{"java field", `private static final String DB_PASSWORD = "j4va-Pw-8812";`, []string{"j4va-Pw-8812"}, []string{"String DB_PASSWORD ="}},
	{"csharp verbatim string", `var connPassword = @"C:\vaultQz\Pw-3381";`, []string{"vaultQz", "Pw-3381"}, []string{"var connPassword ="}},
	{"objc NSString literal", `NSString *apiKey = @"objc-K3y-5521";`, []string{"objc-K3y-5521"}, []string{"NSString *apiKey ="}},
	{"ruby hash rocket", `config = { :api_key => "rb-Rocket-K3y-55", :region => "eu" }`, []string{"rb-Rocket-K3y-55"}, []string{":api_key =>", `:region => "eu"`}},
	{"ruby keyword args", `User.create(name: 'ada', password: 'rb-Kw-Pw-2210')`, []string{"rb-Kw-Pw-2210"}, []string{"name: 'ada'", "password:"}},
	{"ruby 1.9 hash lines", "{\n  user: 'ada',\n  password: 'rb19-Pw-4471',\n  role: :admin\n}", []string{"rb19-Pw-4471"}, []string{"user: 'ada',", "role: :admin"}},
	{"php array", `$config = ['username' => 'ada', 'password' => 'php-Arr-Pw93'];`, []string{"php-Arr-Pw93"}, []string{"'username' => 'ada'", "'password' =>"}},
	{"php variable", `$db_password = "php-Var-Pw11";`, []string{"php-Var-Pw11"}, []string{"$db_password ="}},
	// Debatable, kept: the name is define's first argument and the value its
	// second, as wp-config.php writes them.
	{"php define second argument", `define( 'DB_PASSWORD', 'php-Def-Pw55' );`, []string{"php-Def-Pw55"}, []string{"define( 'DB_PASSWORD',"}},
	{"python constant", `API_KEY = 'py-Const-K3y8'`, []string{"py-Const-K3y8"}, []string{"API_KEY ="}},
	{"python kwargs", `s3 = boto3.client("s3", aws_secret_access_key="py-Kw-Sak-6620", region_name="eu-west-1")`, []string{"py-Kw-Sak-6620"}, []string{`boto3.client("s3",`, "aws_secret_access_key=", `region_name="eu-west-1"`}},
	{"python dict", `payload = {"api_key": "py-Dict-88zz", "model": "small"}`, []string{"py-Dict-88zz"}, []string{`"api_key":`, `"model": "small"`}},
	{"python subscript", `config["password"] = "py-Sub-Pw42"`, []string{"py-Sub-Pw42"}, []string{`config["password"] =`}},
	{"python os.environ set", `os.environ["SECRET_KEY"] = "py-Env-Sk99"`, []string{"py-Env-Sk99"}, []string{`os.environ["SECRET_KEY"] =`}},
	{"shell export", "export TOKEN_X=sh-Exp-T0k77", []string{"sh-Exp-T0k77"}, []string{"export TOKEN_X="}},
	{"shell env prefix quoted", "PASSWORD='pre-cmd Pw9' ./run.sh --verbose", []string{"pre-cmd", "Pw9"}, []string{"PASSWORD=", "./run.sh --verbose"}},
	{"makefile conditional", "DB_PASSWORD ?= mk-Cond-Pw31", []string{"mk-Cond-Pw31"}, []string{"DB_PASSWORD ?="}},
	{"makefile posix immediate", "API_TOKEN ::= mk-Imm-T0k62", []string{"mk-Imm-T0k62"}, []string{"API_TOKEN ::="}},
	{"makefile simple", "SECRET := mk-Simple-S3c", []string{"mk-Simple-S3c"}, []string{"SECRET :="}},
	{"dotenv", "# .env\nDB_HOST=db.internal\nDB_PASSWORD=\"dotenv-Pw-2xq\"\nPORT=3000\n", []string{"dotenv-Pw-2xq"}, []string{"DB_HOST=db.internal", "DB_PASSWORD=", "PORT=3000"}},
	// java.util.Properties: the value is the rest of the line.
	{"properties value to end of line", "db.user = ada\ndb.password = Tr0ub4dor and 3 more\ndb.pool = 4\n", []string{"Tr0ub4dor", "and 3 more"}, []string{"db.user = ada", "db.password =", "db.pool = 4"}},
	{"properties colon no space", "password:Kx8mLq2Zr", []string{"Kx8mLq2Zr"}, []string{"password:"}},
	// INI and properties comments start a line, so # is part of a value.
	{"ini value with hash", "[database]\nuser=ada\npassword=iniPw#Hash77\n", []string{"iniPw", "Hash77"}, []string{"[database]", "user=ada", "password="}},
	{"yaml trailing comment", "db:\n  password: yamlPw-44q  # rotated monthly\n  pool: 4\n", []string{"yamlPw-44q"}, []string{"password:", "# rotated monthly", "pool: 4"}},
	// Mid-line, a value that mixes letters and digits (a plain word is prose: see the negatives).
	{"colon mid-line in a log", "2026-01-01T12:00:00Z INFO login attempt password: midLinePw77", []string{"midLinePw77"}, []string{"INFO login attempt", "password:"}},
	{"js object literal", `login({username: 'ada', password: 'objLit-Pw-93'})`, []string{"objLit-Pw-93"}, []string{"username: 'ada'", "password:"}},
	{"namespaced key", `agent::allowlisted_api_key: 'ns-Key-5510'`, []string{"ns-Key-5510"}, []string{"agent::allowlisted_api_key:"}},
	{"hiera key", `profile::db::password: 'hiera-Pw-0021'`, []string{"hiera-Pw-0021"}, []string{"profile::db::password:"}},
	{"mixed quotes", `{"user": "ada", "password": 'mixQ-Pw-61'}`, []string{"mixQ-Pw-61"}, []string{`"user": "ada"`, `"password":`}},
	{"escaped quote in value", `password = "pre9Quote\"post4Quote"`, []string{"pre9Quote", "post4Quote"}, []string{"password ="}},
	{"json escaped quote in value", `{"password": "jsonEsc\"Tail88"}`, []string{"jsonEsc", "Tail88"}, []string{`"password":`}},
	{"json inside a json string", `{"body": "{\"user\":\"ada\",\"password\":\"nested-Pw-71\"}"}`, []string{"nested-Pw-71"}, []string{`"body":`, `\"user\":\"ada\"`}},

	// 2. A secret inside a larger value whose own name says nothing.
	{"ado.net connection string", `"ConnectionStrings": {"Default": "Server=db1;Database=app;User Id=svc;Password=ado-Pw-77x;"}`, []string{"ado-Pw-77x"}, []string{"Server=db1", "Database=app", "User Id=svc", "Password="}},
	{"ado.net pwd", "Data Source=db1;Initial Catalog=app;User ID=svc;Pwd=ado-Pwd-31;", []string{"ado-Pwd-31"}, []string{"Data Source=db1", "User ID=svc", "Pwd="}},
	{"azure service bus", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=MiReRwKA4s9YaIjOPsZd2u1SU+fcJkQxpHlmf8azBxQ=",
		[]string{"MiReRwKA4s9YaIjOPsZd2u1SU", "fcJkQxpHlmf8azBxQ"}, []string{"Endpoint=sb://acme.servicebus.windows.net/", "SharedAccessKeyName=RootManageSharedAccessKey", "SharedAccessKey="}},
	{"azure storage", "DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey=JGE1bu/UAjLf4ieZeEFV3gxt7mazZUVBBVZzSZgFPtmIqQaBliwB/c9vPY2bmW9Sr3p8n8r9geFYC2fWkY3uBg==;EndpointSuffix=core.windows.net",
		[]string{"JGE1bu", "UAjLf4ieZeEFV3gxt7mazZUVBBVZzSZgFPtmIqQaBliwB", "c9vPY2bmW9Sr3p8n8r9geFYC2fWkY3uBg"}, []string{"DefaultEndpointsProtocol=https", "AccountName=acmestore", "AccountKey=", "EndpointSuffix=core.windows.net"}},
	{"query access_token", "GET https://api.example.com/me?access_token=qTok-88aa77 HTTP/1.1", []string{"qTok-88aa77"}, []string{"https://api.example.com/me?access_token=", "HTTP/1.1"}},
	{"query client_secret", "https://oauth.example.com/token?grant_type=client_credentials&client_id=app1&client_secret=cs-Qp0-991z", []string{"cs-Qp0-991z"}, []string{"grant_type=client_credentials", "client_id=app1", "client_secret="}},
	{"query api_key then more", "https://api.example.com/v2/items?api_key=qKey-5031ab&page=2", []string{"qKey-5031ab"}, []string{"api_key=", "&page=2"}},
	{"oauth implicit redirect fragment", "https://app.example.com/cb#access_token=frag-At-5521&token_type=Bearer&expires_in=3600", []string{"frag-At-5521"}, []string{"https://app.example.com/cb#access_token=", "token_type=Bearer", "expires_in=3600"}},

	// 3. curl -u user:password (curl(1)); the user stays.
	{"curl user quoted password", "curl --user ada:'Mid9q Zt4w' https://x.example", []string{"Mid9q", "Zt4w"}, []string{"--user ada:", "https://x.example"}},
	{"curl user both quoted", `curl --user "ada":"dq-Pw-31" https://x.example`, []string{"dq-Pw-31"}, []string{`--user "ada":`, "https://x.example"}},
	{"curl empty user", `curl -u ":emptyUserPw8" --negotiate https://x.example`, []string{"emptyUserPw8"}, []string{"--negotiate", "https://x.example"}},
	{"curl -u plain", "curl -u ada:plain-Pw-42 https://x.example", []string{"plain-Pw-42"}, []string{"-u ada:", "https://x.example"}},
	// curl itself takes the next word; scripts still write --user=.
	{"curl --user= form", "curl --user=ada:eq-Pw-42 https://x.example", []string{"eq-Pw-42"}, []string{"--user=ada:", "https://x.example"}},
	{"curl quoted with space", "curl -u 'carol:Tw0 W0rds9' https://x.example", []string{"Tw0", "W0rds9"}, []string{"carol", "https://x.example"}},
	{"wget password flag", "wget --user=ada --password=wget-Pw-66 https://x.example/f", []string{"wget-Pw-66"}, []string{"--user=ada", "--password=", "https://x.example/f"}},

	// 4. PEM private keys (RFC 7468) whose BEGIN line does not start the line.
	{"pem in service account json", `{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\n7h2RYluQg0s3cU8Bivd0FWqYm+V91Ul9M/0/seg18dlGVNt+axpv7imVDsRxNlVI\ncjHbcXt+JpaHoJNhU7UTL2ck6EaXRHOoXa+UU92XzdPdnwujUw3uMR32hifT4zd8\n-----END PRIVATE KEY-----\n", "client_email": "ci@runehost-dev.iam.gserviceaccount.com"}`,
		[]string{"7h2RYluQg0s3cU8Bivd0FWqYm", "V91Ul9M", "seg18dlGVNt", "cjHbcXt", "JpaHoJNhU7UTL2ck6EaXRHOoXa", "UU92XzdPdnwujUw3uMR32hifT4zd8"},
		[]string{`"type": "service_account"`, `"client_email": "ci@runehost-dev.iam.gserviceaccount.com"`}},
	{"pem rsa in toml string", `tls_pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAwkrVAzce5Ym47vjkim7befzmFpqrWWjXdN2zxMGp2aokcqz9\nhtrry0jv9/hSrpo0QDwQofRDDXnKsgFLiX5O5xcgoQYk56OwQGw1o871hozVqV1l\n-----END RSA PRIVATE KEY-----"` + "\nport = 8443",
		[]string{"MIIEowIBAAKCAQEAwkrVAzce5Ym47vjkim7befzmFpqrWWjXdN2zxMGp2aokcqz9", "htrry0jv9", "hSrpo0QDwQofRDDXnKsgFLiX5O5xcgoQYk56OwQGw1o871hozVqV1l"},
		[]string{"tls_pem =", "port = 8443"}},
	{"pem after a log prefix", "2026-01-01 ERROR key: -----BEGIN PRIVATE KEY-----\nNaRDQEd64otAus4FrCW8BMJ9Nx5vR+IJquun/kMSLLfV4GFEU3wEQ/yNDg+k9h5v\nwofkb7tYFOYudQuhuxmfgPVcjCaMSqr+eq9Ng+gLhWiwyPkDdy8wKNVz/nLz/ArX\n-----END PRIVATE KEY-----\n2026-01-01 INFO retrying\n",
		[]string{"NaRDQEd64otAus4FrCW8BMJ9Nx5vR", "IJquun", "kMSLLfV4GFEU3wEQ", "wofkb7tYFOYudQuhuxmfgPVcjCaMSqr", "eq9Ng", "gLhWiwyPkDdy8wKNVz"},
		[]string{"2026-01-01 ERROR", "2026-01-01 INFO retrying"}},
	{"pem ec in yaml block scalar", "tls:\n  cert: /etc/tls/cert.pem\n  key: |\n    -----BEGIN EC PRIVATE KEY-----\n    HaCPWRumAoREZwJgaRBtOwLMq+DRvYYZd7oUxk/fFWLGEUZ2b9aJ+fA9QFHdQukX\n    QSSIm6zJbPbQxhMhhjz3t8LEz1dUoKcfb4BgiNvwZJo+X0KK3BZftUqixZtRSfSh\n    -----END EC PRIVATE KEY-----\n",
		[]string{"HaCPWRumAoREZwJgaRBtOwLMq", "DRvYYZd7oUxk", "fFWLGEUZ2b9aJ", "fA9QFHdQukX", "QSSIm6zJbPbQxhMhhjz3t8LEz1dUoKcfb4BgiNvwZJo", "X0KK3BZftUqixZtRSfSh"},
		[]string{"tls:", "cert: /etc/tls/cert.pem"}},
	{"pem openssh in echo", `echo "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA5tkr5qc+lpIedT4WB5hT1PKbXeMZwl2XeKJHHJOj\nOG/8pSInj2inuomIjvfGUoshCOpvqbFIk/FE9XtGNSFxUO2kaLvD2FeYTJFrd72e\n-----END OPENSSH PRIVATE KEY-----" > ~/.ssh/id_ed25519`,
		[]string{"5tkr5qc", "lpIedT4WB5hT1PKbXeMZwl2XeKJHHJOj", "OG/8pSInj2inuomIjvfGUoshCOpvqbFIk", "FE9XtGNSFxUO2kaLvD2FeYTJFrd72e"},
		[]string{"echo", "> ~/.ssh/id_ed25519"}},

	// 5. Vendor formats, after names that say nothing, at token boundaries.
	{"slack bot token in prose", "chat.postMessage as xoxb-709643682281-2852806203836-Z5iakCS8LvsM8XqBpqXN44M2 returned ok",
		[]string{"xoxb-709643682281-2852806203836-Z5iakCS8LvsM8XqBpqXN44M2", "Z5iakCS8LvsM8XqBpqXN44M2"}, []string{"chat.postMessage as", "returned ok"}},
	{"slack user token in brackets", "user=U0ABCD123 creds=[xoxp-840733637729-638207402700-5531126776405-a52a59d3145da6ce98a720bb4df24527]",
		[]string{"xoxp-840733637729-638207402700-5531126776405-a52a59d3145da6ce98a720bb4df24527", "a52a59d3145da6ce98a720bb4df24527"}, []string{"user=U0ABCD123", "creds=["}},
	{"slack app-level token", "SLACK_APP_LEVEL=xapp-1-AWGWHX6IPEJ-6412731256392-750528d72420a4a00b83bf32208a11dbb95864cc0ccec3e0e1fe14d0d4f99874",
		[]string{"750528d72420a4a00b83bf32208a11dbb95864cc0ccec3e0e1fe14d0d4f99874"}, []string{"SLACK_APP_LEVEL="}},
	{"github classic pat on stdin", "gh auth login --with-token <<< ghp_3j1MRwdlEYUnVOaeCp73EeTUNVYI22ylSTGf", []string{"ghp_3j1MRwdlEYUnVOaeCp73EeTUNVYI22ylSTGf", "3j1MRwdlEYUnVOaeCp73EeTUNVYI22ylSTGf"}, []string{"gh auth login --with-token <<<"}},
	{"github oauth token in json", `{"oauth": "gho_rHfw9d9p7azVxv76boiopvd8r03uCvdKx65A"}`, []string{"rHfw9d9p7azVxv76boiopvd8r03uCvdKx65A"}, []string{`"oauth":`}},
	{"github installation token", "installation 4242 -> ghs_9cZ70uBxXV86odAavScyslGxw8AtB9IhoC5M", []string{"9cZ70uBxXV86odAavScyslGxw8AtB9IhoC5M"}, []string{"installation 4242 ->"}},
	{"github fine-grained pat", `fineGrained := "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"`,
		[]string{"nKFkVPRGX5iRNds1ZiduCS", "zFSs1oPR1c6AQLqrw1F8qi74rmJGwjJkkC5celepeKyfm76G7kLWwW5hF5K"}, []string{"fineGrained :="}},
	{"openai key after plain name", "OPENAI=sk-WLKxVjMT7C2iL0jUSMc0ftwAhQOHi2nY83xda4Gl95TV6axj", []string{"WLKxVjMT7C2iL0jUSMc0ftwAhQOHi2nY83xda4Gl95TV6axj"}, []string{"OPENAI="}},
	{"openai project key in a list", `["sk-proj-6xGgqJSDCMBSRvC0s5WHsPxLCEkB3BOZOCLdc-0-oS1OPTS8", "other"]`, []string{"6xGgqJSDCMBSRvC0s5WHsPxLCEkB3BOZOCLdc", "oS1OPTS8"}, []string{`"other"`}},
	{"anthropic key in header", `curl https://api.anthropic.com/v1/messages -H "x-api-key:sk-ant-api03-_5_-4H6R4ZS08hM9yGI2uVuCmDHZRAZugBWlZANUhiSIq1-UjYHyAKCaWnQf4UlX1xOta6Vor47U1bImeBGZLSJm4N_kbAA"`,
		[]string{"4H6R4ZS08hM9yGI2uVuCmDHZRAZugBWlZANUhiSIq1", "UjYHyAKCaWnQf4UlX1xOta6Vor47U1bImeBGZLSJm4N_kbAA"}, []string{"https://api.anthropic.com/v1/messages", "x-api-key:"}},
	{"anthropic key in prose", "retrying with sk-ant-api03-_5_-4H6R4ZS08hM9yGI2uVuCmDHZRAZugBWlZANUhiSIq1-UjYHyAKCaWnQf4UlX1xOta6Vor47U1bImeBGZLSJm4N_kbAA now",
		[]string{"4H6R4ZS08hM9yGI2uVuCmDHZRAZugBWlZANUhiSIq1", "UjYHyAKCaWnQf4UlX1xOta6Vor47U1bImeBGZLSJm4N_kbAA"}, []string{"retrying with", "now"}},
	{"aws long-term key id in prose", "arn:aws:iam::123456789012:user/ada used AKIACCAY226S4X2Z5PM2 from 10.0.0.1", []string{"AKIACCAY226S4X2Z5PM2"}, []string{"arn:aws:iam::123456789012:user/ada used", "from 10.0.0.1"}},
	{"aws sts credentials json", `{"Credentials": {"AccessKeyId": "ASIAY64WOJOCNMQYXDSH", "SecretAccessKey": "uZ3mQ9vLx7Tk2Wp8Rn4Hs6Jd1Fc5Gb0Ya", "SessionToken": "IQoJb3JpZ2luX2VjEtestSessXy7", "Expiration": "2026-01-01T12:00:00Z"}}`,
		[]string{"ASIAY64WOJOCNMQYXDSH", "uZ3mQ9vLx7Tk2Wp8Rn4Hs6Jd1Fc5Gb0Ya", "IQoJb3JpZ2luX2VjEtestSessXy7"}, []string{`"Expiration": "2026-01-01T12:00:00Z"`}},
	{"google api key in script src", `<script src="https://maps.googleapis.com/maps/api/js?key=AIza2CX4lIAm05T6gqZiqtgrnZl5ClHa5jpgr3-&callback=initMap"></script>`,
		[]string{"AIza2CX4lIAm05T6gqZiqtgrnZl5ClHa5jpgr3-", "2CX4lIAm05T6gqZiqtgrnZl5ClHa5jpgr3"}, []string{"https://maps.googleapis.com/maps/api/js?key=", "callback=initMap"}},
	{"stripe secret key as curl user", "curl https://api.stripe.com/v1/charges -u sk_live_2XkHTk9hHAgcQzNC9b4JlhEM:", []string{"2XkHTk9hHAgcQzNC9b4JlhEM"}, []string{"curl https://api.stripe.com/v1/charges -u "}},
	{"stripe restricted key", "STRIPE_RESTRICTED=rk_live_Mosau95a3SD8bahc5sjk9qVG", []string{"Mosau95a3SD8bahc5sjk9qVG"}, []string{"STRIPE_RESTRICTED="}},
	{"stripe webhook secret from cli", "Ready! Your webhook signing secret is whsec_DGmEoIfHiSjwLMnl9agMwjxJ7LQxX6TS (^C to quit)", []string{"DGmEoIfHiSjwLMnl9agMwjxJ7LQxX6TS"}, []string{"Your webhook signing secret is", "(^C to quit)"}},
	{"gitlab pat in prose", "created glpat-osboPFyUasyQ_2NV_t-M for ci", []string{"glpat-osboPFyUasyQ_2NV_t-M", "osboPFyUasyQ"}, []string{"created", "for ci"}},
	{"jwt as oauth assertion", "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhZGEiLCJhdWQiOiJydW5laG9zdCIsImlhdCI6MTc2NzIyNTYwMH0.Y_gQCHw6nx73mNZzOrNjXRxDPo7BwrGXrm2GjHFSnGU",
		[]string{"eyJzdWIiOiJhZGEiLCJhdWQiOiJydW5laG9zdCIsImlhdCI6MTc2NzIyNTYwMH0", "Y_gQCHw6nx73mNZzOrNjXRxDPo7BwrGXrm2GjHFSnGU"}, []string{"grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer"}},
	{"jwt in iap header", "X-Goog-IAP-JWT-Assertion: eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhZGEiLCJhdWQiOiJydW5laG9zdCIsImlhdCI6MTc2NzIyNTYwMH0.Y_gQCHw6nx73mNZzOrNjXRxDPo7BwrGXrm2GjHFSnGU",
		[]string{"eyJzdWIiOiJhZGEiLCJhdWQiOiJydW5laG9zdCIsImlhdCI6MTc2NzIyNTYwMH0", "Y_gQCHw6nx73mNZzOrNjXRxDPo7BwrGXrm2GjHFSnGU"}, []string{"X-Goog-IAP-JWT-Assertion:"}},
	{"jwt in prose", "decoded eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhZGEiLCJhdWQiOiJydW5laG9zdCIsImlhdCI6MTc2NzIyNTYwMH0.Y_gQCHw6nx73mNZzOrNjXRxDPo7BwrGXrm2GjHFSnGU -> sub=ada",
		[]string{"eyJzdWIiOiJhZGEiLCJhdWQiOiJydW5laG9zdCIsImlhdCI6MTc2NzIyNTYwMH0", "Y_gQCHw6nx73mNZzOrNjXRxDPo7BwrGXrm2GjHFSnGU"}, []string{"decoded", "-> sub=ada"}},
	{"authorization bearer", "Authorization: Bearer W7Vgq3YyDSrttyeL8ry.g_DydkEfHCPXMe7HwWc0", []string{"W7Vgq3YyDSrttyeL8ry", "g_DydkEfHCPXMe7HwWc0"}, []string{"Authorization: Bearer"}},
	{"authorization basic", "Authorization: Basic YWRhOmJhc2ljLVB3LTc3MzE=", []string{"YWRhOmJhc2ljLVB3LTc3MzE"}, []string{"Authorization: Basic"}},
	{"proxy-authorization basic", "Proxy-Authorization: Basic YWRhOmJhc2ljLVB3LTc3MzE=", []string{"YWRhOmJhc2ljLVB3LTc3MzE"}, []string{"Proxy-Authorization: Basic"}},
	{"http2 lowercase authorization", "authorization: bearer W7Vgq3YyDSrttyeL8ry.g_DydkEfHCPXMe7HwWc0", []string{"W7Vgq3YyDSrttyeL8ry", "g_DydkEfHCPXMe7HwWc0"}, []string{"authorization: bearer"}},
	{"cookie header", "Cookie: sessionid=ck-8842aa91f0; csrftoken=ck-Csrf-5510", []string{"ck-8842aa91f0", "ck-Csrf-5510"}, []string{"Cookie:"}},
	{"set-cookie header", "Set-Cookie: __Host-sid=sc-77ab0912cd; Path=/; Secure; HttpOnly", []string{"sc-77ab0912cd"}, []string{"Set-Cookie:"}},
	{"curl --cookie", `curl --cookie "sid=ckFlag-5512" https://x.example`, []string{"ckFlag-5512"}, []string{"curl --cookie", "https://x.example"}},
	{"postgres url userinfo", "postgres://app:pgPw-9921@db.internal:5432/app?sslmode=require", []string{"pgPw-9921"}, []string{"postgres://app:", "@db.internal:5432/app?sslmode=require"}},
	{"redis url empty user", "redis://:redisPw-4410@cache.internal:6379/0", []string{"redisPw-4410"}, []string{"redis://", "@cache.internal:6379/0"}},
	{"mongodb url escaped at", "mongodb://ada:mongo%40Pw-31@db1,db2/?replicaSet=rs0", []string{"mongo%40Pw-31"}, []string{"mongodb://ada:", "replicaSet=rs0"}},
	// The first table, from before the one-pass reader.
	{"env file", "# prod\nDATABASE_URL=postgres://app:s3cr3tPassw0rd@db.internal:5432/app\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nSLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx\nSTRIPE_SECRET=sk_live_4eC39HqLyjWDarjtT1zdp7dc\nPORT=3000\n",
		[]string{"s3cr3tPassw0rd", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}, nil},
	{"export lines", "export GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a\nexport OPENAI_API_KEY='sk-proj-abcdefghijklmnop1234567890ABCD'\n",
		[]string{"ghp_16C7e42F292c6912E7710c838347Ae178B4a", "sk-proj-abcdefghijklmnop1234567890ABCD"}, nil},
	{"curl", `curl -u admin:hunter2hunter -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig123" -H 'Cookie: session=abc123def456; csrftoken=zzz999' https://api.example.com/v1`,
		[]string{"hunter2hunter", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig123", "abc123def456", "zzz999"}, nil},
	{"basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==\nX-Other: fine", []string{"dXNlcjpwYXNzd29yZA=="}, nil},
	{"token header", "authorization: token ghx_notreallyavendorformat123456", []string{"ghx_notreallyavendorformat123456"}, nil},
	{"json", `{"user": "ada", "password": "correct horse battery", "api_key": "k-12345678", "clientSecret": "cs_abcdef123", "token": "t0k3n-value"}`,
		[]string{"correct horse battery", "k-12345678", "cs_abcdef123", "t0k3n-value"}, nil},
	{"yaml", "database:\n  user: app\n  password: Pa55w0rd!x\nstripe_webhook: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", []string{"Pa55w0rd!x", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, nil},
	{"stack trace", "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    connect(\"mysql://root:toor1234@10.0.0.5/prod\")\nValueError: bad key AIzaSyA-1234567890abcdefghijklmnopqrstu for project", []string{"toor1234", "AIzaSyA-1234567890abcdefghijklmnopqrstu"}, nil},
	{"connection strings", "mongodb+srv://svc:Sup3rS3cret@cluster0.mongodb.net/db redis://:redispass99@cache:6379 amqp://guest:guestpass@mq", []string{"Sup3rS3cret", "guestpass"}, nil},
	{"pem", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq1\nabcdefghijkl\n-----END RSA PRIVATE KEY-----\ndone", []string{"MIIEpAIBAAKCAQEA7bq1", "abcdefghijkl"}, nil},
	{"pem cut off", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", []string{"b3BlbnNzaC1rZXktdjEAAAAA"}, nil},
	{"anthropic", "using sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 now", []string{"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}, nil},
	{"github pat and app token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r.git",
		[]string{"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "ghs_16C7e42F292c6912E7710c838347Ae178B4a"}, nil},
	{"set-cookie", "HTTP/1.1 200 OK\nSet-Cookie: sid=31d4d96e407aad42; Path=/; Secure\n", []string{"31d4d96e407aad42"}, nil},
	{"python kwargs, two", `client = Client(api_key="abcd1234efgh", timeout=30)`, []string{"abcd1234efgh"}, nil},
}

// classNegatives must come out exactly as they went in.
var classNegatives = []struct{ name, text string }{
	// Vendor prefixes inside words and file names.
	{"asia inside a word", "report: EURASIAPACIFICREGION2026.csv"},
	{"xoxo in a url path", "https://blog.example.org/2025/xoxo-hugs-and-kisses-letters"},
	{"sk-ant inside a word", "build desk-ant-colony-simulation-v2-final"},
	{"sk- inside task id", "queued task-98765432100fedcba42 for retry"},
	{"sk- inside file name", "see risk-assessment-2026-quarterly.pdf"},
	// A bare key names a lookup key more often than a credential.
	{"cache key", "cache miss key=user:42"},
	{"cache_key namespaced", "redis GET cache_key=session:abc:42"},
	{"approval key", `"key": "approval:1"`},
	// Placeholders and shell expansions, not tokens.
	{"bearer command substitution", `curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://x.example`},
	{"bearer braced variable", `curl -H "Authorization: Bearer ${TOKEN}" https://x.example`},
	{"bearer variable", `curl -H "Authorization: Bearer $GITHUB_TOKEN" https://x.example`},
	{"bearer placeholder", "Authorization: Bearer <token>"},
	// Counts of model tokens.
	{"yaml max_tokens", "max_tokens: 4096"},
	{"json max_tokens", `{"model": "small", "max_tokens": 1024}`},
	{"token_count", "token_count=12"},
	{"tokens_used", "tokens_used=3500"},
	// References to a secret, not the secret.
	{"compose interpolation", "password: ${DB_PASSWORD}"},
	{"actions secrets expression", "token: ${{ secrets.GITHUB_TOKEN }}"},
	{"ansible jinja reference", `password: "{{ vault_db_password }}"`},
	{"python os.environ read", `password = os.environ["DB_PASSWORD"]`},
	{"python os.getenv", `api_key = os.getenv("API_KEY")`},
	{"go field read", "apiKey := cfg.APIKey"},
	{"node process.env", "const token = process.env.GITHUB_TOKEN;"},
	{"empty value", "password="},
	{"empty ini value then next line", "[db]\npassword=\nuser=ada\n"},
	{"yaml null", "password: null"},
	// Names about a secret whose values are not secret.
	{"secret_name yaml", "secret_name: prod-db"},
	{"SECRET_NAME env", "SECRET_NAME=prod-db"},
	{"key_file path", "key_file=/etc/ssl/x.pem"},
	{"token_url", "token_url: https://auth.example.com/oauth/token"},
	{"keyboard", "keyboard: us"},
	{"monkey", "monkey: 3"},
	{"primary_key column", "primary_key: id"},
	{"sort_key column", "sort_key=created_at"},
	// Prose.
	// Mid-line and a plain word: a prompt, not a value.
	{"prose password prompt", "Enter your password: then press Enter"},
	{"prose token expired", "the token expired"},
	{"prose password flag", "Use the --password flag to set it."},
	{"prose missing secrets file", "open /etc/runehost/secrets.d/db.yaml: no such file or directory"},
	// Identifiers, digests, versions, paths.
	{"git sha", "commit 0121aa87d877606c777fcd986061d95e63baf6fc"},
	{"uuid", "request_id=7eaa461c-0d51-4eb2-9168-c30c099bc153"},
	{"image digest", "image: ghcr.io/acme/app@sha256:af87cd4252833d19cbb2a0238d10bbf75a70d5cb6b2f645f52b6a5fbdcd69c1e"},
	{"semver", "upgraded v2.3.4-rc.1+build.5 to v2.4.0"},
	{"file path", "/home/ada/.config/runehost/config.yaml"},
	// Public keys are public.
	{"ssh public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI0BSWV7Sfkiq14uGY8tB50REHdK1FufmIM+RlkgqaDqD ada@laptop"},
	{"pem certificate", "-----BEGIN CERTIFICATE-----\nO+7l2Rj9XQGUIUwenPkygFAW3MT5c+WyiRQg8VzFaSDGDllrg4BYJG9TIkCiQCTH\nvyixZyqP/LcetuHJVIfdxAi41lpbtwcRLtDf/abVSFC/Prc9YUKu4BRpzl7+TSEp\n-----END CERTIFICATE-----\n"},
	// Ordinary config.
	{"dotenv port and log level", "PORT=3000\nLOG_LEVEL=debug\n"},
	{"yaml timeout", "timeout: 30s"},
	{"log_level", "log_level=debug"},
	// URLs and addresses without a password.
	{"url without userinfo", "https://example.com/a/b?q=1&page=2#top"},
	{"git scp-like address", "git@github.com:org/repo.git"},
	{"ssh url with user only", "ssh://git@github.com/org/repo.git"},
	{"email address", "user@example.com"},
	{"time of day", "12:00:01"},
	{"localhost url", "http://localhost:8080/"},
	// Error codes name a token, they hold none.
	{"error code with token", "github-token-mint-failed: HTTP 422"},
	{"TOKEN_EXPIRED", "error: TOKEN_EXPIRED"},
	{"oauth invalid_token json", `{"error": "invalid_token", "error_description": "The access token expired"}`},
	{"www-authenticate challenge", `WWW-Authenticate: Bearer realm="runehost", error="invalid_token", error_description="The access token expired"`},
}

func TestClassPositives(t *testing.T) {
	for _, c := range classPositives {
		t.Run(c.name, func(t *testing.T) {
			got := String(c.text)
			for _, s := range c.secrets {
				if strings.Contains(got, s) {
					t.Errorf("%q survived", s)
				}
			}
			for _, k := range c.keep {
				if !strings.Contains(got, k) {
					t.Errorf("%q lost", k)
				}
			}
			if !strings.Contains(got, Mark) {
				t.Errorf("nothing marked")
			}
			if t.Failed() {
				t.Logf("in:  %s\nout: %s", c.text, got)
			}
		})
	}
}

func TestClassNegatives(t *testing.T) {
	for _, c := range classNegatives {
		t.Run(c.name, func(t *testing.T) {
			if got := String(c.text); got != c.text {
				t.Errorf("changed:\n%s\n->\n%s", c.text, got)
			}
		})
	}
}

// The approval event's key is an id, not a credential.
func TestApprovalEventUnchanged(t *testing.T) {
	ev := `{"key": "approval:1", "prompt": "ship it?"}`
	if got := String(ev); got != ev {
		t.Errorf("changed:\n%s\n->\n%s", ev, got)
	}
}

// A typo in the tables would make a case pass for nothing.
func TestClassTablesSound(t *testing.T) {
	names := map[string]bool{}
	for _, c := range classPositives {
		if names[c.name] {
			t.Errorf("%s: name used twice", c.name)
		}
		names[c.name] = true
		if len(c.secrets) == 0 {
			t.Errorf("%s: no secret", c.name)
		}
		for _, s := range c.secrets {
			if !strings.Contains(c.text, s) {
				t.Errorf("%s: secret %q not in the text", c.name, s)
			}
			for _, k := range c.keep {
				if strings.Contains(k, s) {
					t.Errorf("%s: kept %q holds secret %q", c.name, k, s)
				}
			}
		}
		for _, k := range c.keep {
			if !strings.Contains(c.text, k) {
				t.Errorf("%s: kept %q not in the text", c.name, k)
			}
		}
	}
	for _, c := range classNegatives {
		if names[c.name] {
			t.Errorf("%s: name used twice", c.name)
		}
		names[c.name] = true
	}
}
