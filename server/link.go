// link.go holds the Service's capability links of run pages: make, list
// and revoke them (server/links keeps them), for the CLI without a server;
// the server's handlers keep them through Config.Links.

package server

import (
	"strings"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/server/links"
)

// MaxLinkTTL bounds a link's life: a capability should not outlive its use.
const MaxLinkTTL = 366 * 24 * time.Hour

func (s *Service) links() *links.Links { return links.New(s.E.Store, s.Clock) }

// CreateLink makes a link to run's page; its Token is shown only now, and
// its URL when the Service has a BaseURL.
func (s *Service) CreateLink(run string, req api.LinkRequest) (*api.Link, error) {
	ttl := links.DefaultTTL
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > MaxLinkTTL {
			return nil, api.Errorf(api.CodeBadRequest, "link: ttl %q: want a positive duration of at most %v", req.TTL, MaxLinkTTL)
		}
		ttl = d
	}
	if _, err := s.E.Inspect(run); err != nil {
		return nil, engineError(err)
	}
	token, l, err := s.links().Create(run, ttl)
	if err != nil {
		return nil, engineError(err)
	}
	out := apiLink(l)
	out.Token = token
	if s.BaseURL != "" {
		out.URL = strings.TrimRight(s.BaseURL, "/") + "/r/" + token
	}
	return &out, nil
}

// Links lists run's links, oldest first.
func (s *Service) Links(run string) ([]api.Link, error) {
	ls, err := s.links().List(run)
	if err != nil {
		return nil, engineError(err)
	}
	out := []api.Link{}
	for _, l := range ls {
		out = append(out, apiLink(l))
	}
	return out, nil
}

// RevokeLinks revokes run's link id, or all its links when id is "", and
// says how many it revoked.
func (s *Service) RevokeLinks(run, id string) (int, error) {
	n, err := s.links().Revoke(run, id)
	return n, engineError(err)
}
