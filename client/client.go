// Package client is a Go client of runehost's HTTP API (docs/api.md): over
// the Unix socket a server names in its store directory, or over TCP with a
// bearer token. The CLI goes through it whenever a server owns the store.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/events"
)

// DiscoveryFile is the file, in a store's directory, by which a server
// says where it listens.
const DiscoveryFile = "serve.json"

// healthTimeout bounds how long Find waits for a server to answer.
const healthTimeout = time.Second

// Client calls one server.
type Client struct {
	base  string // without a trailing slash
	token string // the bearer token; "" over the socket
	hc    *http.Client
	// Discovery is the server's file, when it was found by one.
	Discovery api.Discovery
}

// Dial returns a client of the server listening on d's Unix socket.
func Dial(d api.Discovery) (*Client, error) {
	if d.Socket == "" {
		return nil, errors.New("client: the server names no socket")
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.Socket)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{base: "http://runehost", hc: &http.Client{Transport: tr}, Discovery: d}, nil
}

// New returns a client of the server at baseURL (http://HOST:PORT) that
// authenticates with token (none when "").
func New(baseURL, token string) *Client {
	for len(baseURL) > 0 && baseURL[len(baseURL)-1] == '/' {
		baseURL = baseURL[:len(baseURL)-1]
	}
	return &Client{base: baseURL, token: token, hc: &http.Client{}}
}

// Find looks for a server of the store in storeDir: the discovery file it
// wrote, and the server answering on its socket within a second. No file,
// or a socket nobody listens on (the file of a server that died), is no
// server: false and no error.
func Find(storeDir string) (*Client, bool, error) {
	b, err := os.ReadFile(filepath.Join(storeDir, DiscoveryFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("client: %v", err)
	}
	var d api.Discovery
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, false, fmt.Errorf("client: %s: %v", filepath.Join(storeDir, DiscoveryFile), err)
	}
	if d.Socket != "" && !filepath.IsAbs(d.Socket) {
		d.Socket = filepath.Join(storeDir, d.Socket)
	}
	c, err := Dial(d)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	if _, err := c.Health(ctx); err != nil {
		if gone(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("client: the server of %s (pid %d) does not answer: %v", storeDir, d.PID, err)
	}
	return c, true, nil
}

// Gone says whether err is that the server is gone: nobody listens on its
// socket any more.
func Gone(err error) bool { return gone(err) }

// gone says whether err is that nobody listens: the socket is missing or
// refuses.
func gone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, os.ErrNotExist)
}

// request sends a request with a JSON body (none when in is nil).
func (c *Client) request(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.hc.Do(req)
}

// do sends a request and decodes its JSON answer into out (unless nil); a
// non-2xx answer is its *api.Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := answerError(resp); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: the answer: %v", method, path, err)
	}
	return nil
}

// answerError is a non-2xx answer as an *api.Error; nil for a 2xx one.
func answerError(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error == nil {
		code := api.CodeInternal
		for _, c := range []string{api.CodeBadRequest, api.CodeUnauthorized, api.CodeNotFound, api.CodeConflict, api.CodeCompile, api.CodeRefused, api.CodeTooLarge, api.CodeUnavailable, api.CodeTooMany} {
			if (&api.Error{Code: c}).Status() == resp.StatusCode {
				code = c
			}
		}
		eb.Error = &api.Error{Code: code, Message: fmt.Sprintf("the server answered %s: %s", resp.Status, bytes.TrimSpace(b))}
	}
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 && eb.Error.RetryAfter == 0 {
		eb.Error.RetryAfter = n
	}
	return eb.Error
}

func invPath(inv string, rest string) string {
	return "/" + api.Version + "/invocations/" + url.PathEscape(inv) + rest
}

// Metrics is the server's metrics in Prometheus's text format (GET /metrics).
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	resp, err := c.request(ctx, "GET", "/metrics", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := answerError(resp); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// Health is the server's health (GET /healthz).
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var h api.Health
	return &h, c.do(ctx, http.MethodGet, "/healthz", nil, &h)
}

// Run admits a prog; the server runs it.
func (c *Client) Run(ctx context.Context, req api.RunRequest) (*api.RunResponse, error) {
	var out api.RunResponse
	return &out, c.do(ctx, http.MethodPost, "/"+api.Version+"/runs", req, &out)
}

// List is a page of invocations after after (from the first when ""), at
// most limit of them (all when 0), whose status is in statuses (any when
// empty).
func (c *Client) List(ctx context.Context, statuses []string, after string, limit int) (*api.List, error) {
	q := url.Values{}
	for _, s := range statuses {
		q.Add("status", s)
	}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/" + api.Version + "/invocations"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out api.List
	return &out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// Inspect is an invocation's records.
func (c *Client) Inspect(ctx context.Context, inv string) (*api.Inspection, error) {
	var out api.Inspection
	return &out, c.do(ctx, http.MethodGet, invPath(inv, ""), nil, &out)
}

// Checkpoint is an invocation's stored checkpoint, as stored.
func (c *Client) Checkpoint(ctx context.Context, inv string) ([]byte, error) {
	resp, err := c.request(ctx, http.MethodGet, invPath(inv, "/checkpoint"), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := answerError(resp); err != nil {
		return nil, err
	}
	return io.ReadAll(resp.Body)
}

// State is where an invocation stands.
func (c *Client) State(ctx context.Context, inv string) (*api.RunState, error) {
	var out api.RunState
	return &out, c.do(ctx, http.MethodGet, invPath(inv, "/state"), nil, &out)
}

// Events returns up to limit events of inv from seq from (all when limit
// is 0).
func (c *Client) Events(ctx context.Context, inv string, from uint64, limit int) ([]events.Event, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := invPath(inv, "/events")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []events.Event
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// Send delivers an event; the answer's Cursor is the tree's stream before
// the delivery.
func (c *Client) Send(ctx context.Context, inv string, req api.Send) (*api.RunState, error) {
	var out api.RunState
	return &out, c.do(ctx, http.MethodPost, invPath(inv, "/send"), req, &out)
}

// Resume makes an invocation runnable again.
func (c *Client) Resume(ctx context.Context, inv string) (*api.RunState, error) {
	var out api.RunState
	return &out, c.do(ctx, http.MethodPost, invPath(inv, "/resume"), struct{}{}, &out)
}

// Cancel stops an invocation that has not ended.
func (c *Client) Cancel(ctx context.Context, inv string) (*api.RunState, error) {
	var out api.RunState
	return &out, c.do(ctx, http.MethodPost, invPath(inv, "/cancel"), struct{}{}, &out)
}

// Resolve settles an act of unknown outcome.
func (c *Client) Resolve(ctx context.Context, inv string, ordinal uint64, req api.Resolve) (*api.RunState, error) {
	var out api.RunState
	return &out, c.do(ctx, http.MethodPost, invPath(inv, "/acts/"+strconv.FormatUint(ordinal, 10)+"/resolve"), req, &out)
}

// Grants lists the grants of prog (all when "").
func (c *Client) Grants(ctx context.Context, prog string) ([]api.Grant, error) {
	path := "/" + api.Version + "/grants"
	if prog != "" {
		path += "?" + url.Values{"prog": {prog}}.Encode()
	}
	var out []api.Grant
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// Grant grants statements to a prog, stopping at the first refused.
func (c *Client) Grant(ctx context.Context, req api.GrantRequest) ([]api.Grant, error) {
	var out []api.Grant
	err := c.do(ctx, http.MethodPost, "/"+api.Version+"/grants", req, &out)
	return out, err
}

// Revoke takes statements back from a prog, stopping at the first it does
// not hold.
func (c *Client) Revoke(ctx context.Context, req api.GrantRequest) (*api.Revoked, error) {
	var out api.Revoked
	return &out, c.do(ctx, http.MethodPost, "/"+api.Version+"/grants/revoke", req, &out)
}

// CreateLink makes a capability link to a run's page.
func (c *Client) CreateLink(ctx context.Context, run string, req api.LinkRequest) (*api.Link, error) {
	var out api.Link
	return &out, c.do(ctx, http.MethodPost, invPath(run, "/links"), req, &out)
}

// Links lists a run's links.
func (c *Client) Links(ctx context.Context, run string) ([]api.Link, error) {
	var out []api.Link
	err := c.do(ctx, http.MethodGet, invPath(run, "/links"), nil, &out)
	return out, err
}

// RevokeLinks revokes a run's link id, or all its links when id is "", and
// says how many it revoked.
func (c *Client) RevokeLinks(ctx context.Context, run, id string) (int, error) {
	var out struct {
		Revoked int `json:"revoked"`
	}
	err := c.do(ctx, http.MethodPost, invPath(run, "/links/revoke"), map[string]string{"id": id}, &out)
	return out.Revoked, err
}
