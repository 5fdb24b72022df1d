// Package web holds the HTTP acts: http.get and http.post. A grant names a
// host (http.get:api.example.com, any subdomain with *.example.com, a port
// with api.example.com:8443); the act's URL is checked after parsing, and so
// is every redirect before it is followed, so the host that answers is always
// a granted one. Each request carries the operation's idempotency key.
package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runehost/runehost/acts/args"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
)

// The tags.
const (
	Get  = "http.get"
	Post = "http.post"
)

// Limits of the HTTP acts.
const (
	MaxBody      = 8 << 20 // bytes of a response body
	MaxRedirects = 5
	Timeout      = 30 * time.Second
)

// IdempotencyHeader carries the operation's id, so that a server can tell a
// repeated request from a new one.
const IdempotencyHeader = "Idempotency-Key"

// Adapter is one HTTP act.
type Adapter struct {
	Tag    string
	Client *http.Client // its CheckRedirect is replaced; http.DefaultTransport without proxies when nil
}

// New returns the adapters of the two tags.
func New() map[string]host.Adapter {
	return map[string]host.Adapter{Get: &Adapter{Tag: Get}, Post: &Adapter{Tag: Post}}
}

// Limits declares the HTTP acts' limits.
func (a *Adapter) Limits() host.Limits {
	return host.Limits{Args: 1 << 20, Reply: MaxBody + 64<<10, Time: Timeout}
}

// CheckGrant accepts a host name, *.domain or either with a port.
func (a *Adapter) CheckGrant(_, target string) (string, error) {
	t := strings.ToLower(target)
	h, port, err := net.SplitHostPort(t)
	if err != nil {
		h, port = t, ""
	}
	name := strings.TrimPrefix(h, "*.")
	if name == "" || strings.ContainsAny(name, "/@?#*[] ") || strings.Contains(t, "://") {
		return "", fmt.Errorf("want a host: %s:api.example.com, %s:*.example.com or %s:host:port", a.Tag, a.Tag, a.Tag)
	}
	if port != "" {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return "", fmt.Errorf("bad port %q", port)
		}
	}
	return t, nil
}

// Allowed returns the grant among grants (of http.get or http.post) that
// covers u's scheme, host and port, if any: the web ward's host rule, which
// mcp.call's remote servers go through too.
func Allowed(u *url.URL, grants []host.Grant) (string, bool) { return allowed(u, grants) }

// DialGranted dials addr as the HTTP acts do: a host named by a grant must
// not resolve to an internal address (see dialGranted).
func DialGranted(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	return dialGranted(ctx, d, network, addr)
}

// allowed returns the grant that covers u, if any.
func allowed(u *url.URL, grants []host.Grant) (string, bool) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	name := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, g := range grants {
		t := g.Target()
		gh, gp, err := net.SplitHostPort(t)
		if err != nil {
			gh, gp = t, ""
		}
		if gp != "" && gp != port || gp == "" && port != map[string]string{"http": "80", "https": "443"}[u.Scheme] {
			continue
		}
		if gh == name || strings.HasPrefix(gh, "*.") && strings.HasSuffix(name, gh[1:]) && len(name) > len(gh)-1 {
			return g.Statement, true
		}
	}
	return "", false
}

type webArgs struct {
	url         *url.URL
	headers     map[string]string
	body        []byte
	contentType string
}

func (a *Adapter) args(op *host.Operation) (*webArgs, error) {
	m, err := args.Map(op.Args, a.Tag, "{url, headers, body}")
	if err != nil {
		return nil, err
	}
	raw, _ := m.Get("url")
	s, ok := raw.(string)
	if !ok {
		return nil, args.Errorf("%s: url must be a string", a.Tag)
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, args.Errorf("%s: bad url %q", a.Tag, s)
	}
	out := &webArgs{url: u, headers: map[string]string{}}
	if h, ok := m.Get("headers"); ok {
		hm, ok := h.(*checkpoint.Map)
		if !ok {
			return nil, args.Errorf("%s: headers must be a map of strings", a.Tag)
		}
		for i, k := range hm.Keys {
			v := hm.Values[i]
			ks, kok := k.(string)
			vs, vok := v.(string)
			if !kok || !vok {
				return nil, args.Errorf("%s: headers must be a map of strings", a.Tag)
			}
			if strings.EqualFold(ks, "host") || strings.EqualFold(ks, IdempotencyHeader) {
				return nil, args.Errorf("%s: header %s is the host's to set", a.Tag, ks)
			}
			out.headers[ks] = vs
		}
	}
	if b, ok := m.Get("body"); ok && a.Tag == Post {
		switch b := b.(type) {
		case string:
			out.body, out.contentType = []byte(b), "text/plain; charset=utf-8"
		default:
			j, err := checkpoint.DataToJSON(b)
			if err != nil {
				return nil, args.Errorf("%s: body: %v", a.Tag, err)
			}
			out.body, out.contentType = j, "application/json"
		}
	}
	return out, nil
}

func deniedErr(format string, args ...any) error {
	return &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf(format, args...)}
}

// Authorize returns the grant that covers the act's URL.
func (a *Adapter) Authorize(_ context.Context, op *host.Operation, grants []host.Grant) (string, error) {
	ar, err := a.args(op)
	if err != nil {
		return "", err
	}
	if st, ok := allowed(ar.url, grants); ok {
		return st, nil
	}
	return "", fmt.Errorf("%s %s: host %s is not granted", a.Tag, redact(ar.url), ar.url.Host)
}

// redact drops a URL's user info and query from messages.
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery = nil, ""
	return c.String()
}

func (a *Adapter) client(grants []host.Grant) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	c := http.Client{Transport: &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialGranted(ctx, dialer, network, addr)
		}}}
	if a.Client != nil {
		c = *a.Client
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= MaxRedirects {
			return deniedErr("more than %d redirects", MaxRedirects)
		}
		if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return deniedErr("redirect from https to %s refused", req.URL.Scheme)
		}
		if _, ok := allowed(req.URL, grants); !ok {
			return deniedErr("redirect to %s: host %s is not granted", redact(req.URL), req.URL.Host)
		}
		return nil
	}
	return &c
}

// dialGranted connects to a granted host. A host granted by name must not
// resolve to a loopback, private or link-local address (a DNS answer
// pointing at 127.0.0.1 or the cloud's metadata service): only a grant that
// names such an address, or localhost, reaches one. The address checked is
// the address dialled, so a second DNS answer cannot slip in between.
func dialGranted(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	hostName, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(hostName); ip != nil || strings.EqualFold(hostName, "localhost") {
		return d.DialContext(ctx, network, addr) // granted as an address: as it says
	}
	ips, err := LookupIP(ctx, hostName)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if internal(ip.IP) {
			return nil, deniedErr("host %s resolves to %s, an internal address; grant the address itself to reach it", hostName, ip.IP)
		}
	}
	var last error
	for _, ip := range ips {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.IP.String(), port))
		if err == nil {
			return conn, nil
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("host %s has no address", hostName)
	}
	return nil, last
}

// LookupIP resolves a host name (a variable, for tests).
var LookupIP = net.DefaultResolver.LookupIPAddr

// internal reports whether ip is loopback, private, link-local or otherwise
// not on the internet.
func internal(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	a = a.Unmap()
	// An IPv4 address carried inside IPv6 (NAT64, 6to4) is judged as itself.
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(a):
			a = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return true
	}
	for _, p := range notInternet {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var (
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	notInternet = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),     // this network
		netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT, some clouds' metadata
		netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
		netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
		netip.MustParsePrefix("240.0.0.0/4"),   // reserved
		netip.MustParsePrefix("fec0::/10"),     // site-local
		netip.MustParsePrefix("2001::/32"),     // Teredo
	}
)

// Do sends the request and reads the response, up to MaxBody.
func (a *Adapter) Do(ctx context.Context, op *host.Operation) (any, error) {
	ar, err := a.args(op)
	if err != nil {
		return nil, err
	}
	method := http.MethodGet
	var body io.Reader
	if a.Tag == Post {
		method, body = http.MethodPost, bytes.NewReader(ar.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, ar.url.String(), body)
	if err != nil {
		return nil, args.Errorf("%s: %v", a.Tag, err)
	}
	for k, v := range ar.headers {
		req.Header.Set(k, v)
	}
	if a.Tag == Post && req.Header.Get("Content-Type") == "" && ar.contentType != "" {
		req.Header.Set("Content-Type", ar.contentType)
	}
	req.Header.Set(IdempotencyHeader, fmt.Sprintf("runehost-%s-%d", op.Invocation, op.Ordinal))
	resp, err := a.client(op.Grants).Do(req)
	if err != nil {
		var ce *checkpoint.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("%s %s: %v", a.Tag, redact(ar.url), err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, &checkpoint.Error{Kind: "failed", Msg: fmt.Sprintf("%s %s: reading the body: %v", a.Tag, redact(ar.url), err)}
	}
	if len(b) > MaxBody {
		return nil, &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("%s %s: body over %d bytes", a.Tag, redact(ar.url), MaxBody)}
	}
	m := &checkpoint.Map{}
	m.Set("status", int64(resp.StatusCode))
	m.Set("url", redact(resp.Request.URL))
	h := &checkpoint.Map{}
	for _, k := range []string{"Content-Type", "Content-Length", "Location", "Etag", "Last-Modified"} {
		if v := resp.Header.Get(k); v != "" {
			h.Set(strings.ToLower(k), v)
		}
	}
	m.Set("headers", h)
	if utf8.Valid(b) {
		m.Set("body", string(b))
	} else {
		m.Set("body_base64", base64.StdEncoding.EncodeToString(b))
	}
	return m, nil
}

// Lookup reconciles an attempt cut short by a crash: a GET is safe to send
// again, so it is reopened; a POST may have taken effect and stays unknown
// (the server saw its idempotency key, and an operator can ask it).
func (a *Adapter) Lookup(context.Context, *host.Operation) (any, bool, error) {
	if a.Tag == Get {
		return nil, false, nil
	}
	return nil, false, errors.New("a POST cannot be looked up")
}

// Suggest names the host to grant for op, with its port when it has one.
func (a *Adapter) Suggest(op *host.Operation) string {
	ar, err := a.args(op)
	if err != nil {
		return ""
	}
	return a.Tag + ":" + strings.ToLower(ar.url.Host)
}

var (
	_ host.Reconciler   = (*Adapter)(nil)
	_ host.Authorizer   = (*Adapter)(nil)
	_ host.GrantChecker = (*Adapter)(nil)
	_ host.Limited      = (*Adapter)(nil)
	_ host.Suggester    = (*Adapter)(nil)
)
