// web_test.go checks the HTTP acts against loopback servers: a granted host
// answers; an ungranted host, a redirect to one, a user-info trick, another
// port or scheme are denied before any request reaches them.

package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/web"
	"github.com/runehost/runehost/host"
)

func TestHTTPActs(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		io.WriteString(w, "OTHER")
	}))
	defer other.Close()
	granted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "hello %s key=%s", r.URL.Query().Get("name"), r.Header.Get(web.IdempotencyHeader))
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s", r.Header.Get("Content-Type"), b)
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/hello?name=again", http.StatusFound)
		case "/big":
			w.Write(make([]byte, web.MaxBody+10))
		}
	}))
	defer granted.Close()
	gHost := strings.TrimPrefix(granted.URL, "http://")
	oHost := strings.TrimPrefix(other.URL, "http://")
	e := acttest.Engine(t, web.New())
	acttest.Grant(t, e, "http.get:"+gHost, "http.post:"+gHost)
	for _, c := range []struct{ name, expr, want string }{
		{"get", `(act "http.get" {url: "` + granted.URL + `/hello?name=ada"}).body`, `"hello ada key=runehost-t1-1"`},
		{"status", `(act "http.get" {url: "` + granted.URL + `/hello"}).status`, `200`},
		{"post json", `(act "http.post" {url: "` + granted.URL + `/echo", body: {a: 1}}).body`, `"application/json {\"a\":1}"`},
		{"redirect inside", `(act "http.get" {url: "` + granted.URL + `/here"}).body`, `"hello again`},
		{"ungranted host", `act "http.get" {url: "` + other.URL + `/x"}`, `["denied",`},
		{"redirect out", `act "http.get" {url: "` + granted.URL + `/away"}`, `["denied","redirect to ` + other.URL + `/x: host ` + oHost + ` is not granted"]`},
		{"user info trick", `act "http.get" {url: "http://` + gHost + `@` + oHost + `/x"}`, `["denied",`},
		{"other scheme", `act "http.get" {url: "file:///etc/passwd"}`, `["value",`},
		{"https to the granted host:port", `act "http.get" {url: "ftp://` + gHost + `/x"}`, `["denied",`},
		{"host header", `act "http.get" {url: "` + granted.URL + `/hello", headers: {Host: "evil"}}`, `["value",`},
		{"too big", `act "http.get" {url: "` + granted.URL + `/big"}`, `["limit",`},
		{"post ungranted", `act "http.post" {url: "` + other.URL + `/x", body: "x"}`, `["denied",`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := acttest.Run(t, e, acttest.Catch(c.expr), nil)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %s, want %s…", got, c.want)
			}
		})
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the ungranted server was reached %d times", n)
	}
}

func TestGrantForms(t *testing.T) {
	e := acttest.Engine(t, web.New())
	for _, good := range []string{"http.get:api.example.com", "http.get:*.example.com", "http.get:API.example.com:8443"} {
		if _, err := e.Grant(host.AnyProg, good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{"http.get:https://x.com", "http.get:x.com/path", "http.get:", "http.get:a@b", "http.get:x.com:notaport"} {
		if _, err := e.Grant(host.AnyProg, bad); err == nil {
			t.Errorf("%s granted", bad)
		}
	}
	gs, _ := e.Ward().List(host.AnyProg)
	if gs[0].Statement != "http.get:*.example.com" || gs[1].Statement != "http.get:api.example.com" || gs[2].Statement != "http.get:api.example.com:8443" {
		t.Fatalf("grants %+v", gs)
	}
}

func TestRevokeBetweenRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	e := acttest.Engine(t, web.New())
	st := "http.get:" + strings.TrimPrefix(srv.URL, "http://")
	acttest.Grant(t, e, st)
	src := `let a = (act "http.get" {url: "` + srv.URL + `"}).body
await {key: "go"}
try { return [a, (act "http.get" {url: "` + srv.URL + `"}).body] } catch err { return [a, err.kind] }`
	_, out := acttest.Run(t, e, src, nil)
	if out.Status != host.Waiting {
		t.Fatalf("got %+v", out)
	}
	e.Ward().Revoke(host.AnyProg, st)
	invs, _ := e.List()
	out, err := e.Send(context.Background(), invs[len(invs)-1].ID, "go", nil)
	if err != nil || acttest.JSON(t, out.Result) != `["ok","denied"]` {
		t.Fatalf("got %+v %v", out, err)
	}
}

// A host granted by name that resolves to an internal address is refused
// (a DNS answer pointing at 127.0.0.1 or the metadata service); an address
// granted as such is reached.
func TestGrantedNameResolvingInternal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	prev := web.LookupIP
	web.LookupIP = func(ctx context.Context, host string) ([]net.IPAddr, error) {
		if host == "intranet.example" {
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
		}
		return prev(ctx, host)
	}
	defer func() { web.LookupIP = prev }()
	e := acttest.Engine(t, web.New())
	acttest.Grant(t, e, "http.get:intranet.example:"+port, "http.get:127.0.0.1:"+port)
	got, _ := acttest.Run(t, e, acttest.Catch(`act "http.get" {url: "http://intranet.example:`+port+`/"}`), nil)
	if !strings.HasPrefix(got, `["denied","host intranet.example resolves to 127.0.0.1`) {
		t.Fatalf("by name: %s", got)
	}
	got, _ = acttest.Run(t, e, acttest.Catch(`(act "http.get" {url: "http://127.0.0.1:`+port+`/"}).body`), nil)
	if got != `"internal"` {
		t.Fatalf("by address: %s", got)
	}
}
