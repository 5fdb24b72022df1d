// revoke.go holds the harness's revoke: a few invocations act on a grant of
// their own scope until it is revoked, through any live host, in the middle
// of the chaos; no act may be allowed after the revoke returned, whichever
// host drives it and whatever it kept of the grants.

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/client"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/crashtest"
)

// revokedScope is the scope whose grant is revoked: progs rv/N.
const revokedScope = "rv"

// revokedActs bounds a revoked invocation's acts, should the revoke never
// reach it (the red run): it ends, and verify says it was never denied.
const revokedActs = 400

// admitRevoked grants the test act to the scope and admits n invocations
// that act on it until denied.
func (h *harness) admitRevoked(n int) []string {
	ctx := context.Background()
	if _, err := h.live().Grant(ctx, api.GrantRequest{Prog: revokedScope + "/*", Statements: []string{crashtest.LookupTag}}); err != nil {
		check(err)
	}
	src := fmt.Sprintf("var n = 0\nwhile n < %d {\n  try { act %q {n: n} } catch err { return [n, err.kind] }\n  n += 1\n}\nreturn [n, \"never denied\"]", revokedActs, crashtest.LookupTag)
	var ids []string
	for j := range n {
		c, _, err := client.Find(h.hosts[j%3].dir)
		check(err)
		r, err := c.Run(ctx, api.RunRequest{Prog: fmt.Sprintf("%s/%d", revokedScope, j), Source: src, Limit: 1 << 30})
		check(err)
		ids = append(ids, r.Invocation)
	}
	return ids
}

// revoke revokes the scope's grant through the first host (another, should
// it be down), trying again past a kill, and returns when it was done (unix ms, once the revoke returned).
func (h *harness) revoke() int64 {
	for {
		c, ok, _ := client.Find(h.hosts[0].dir) // one host: the others learn of it only from the store
		if !ok {
			c = h.live()
		}
		_, err := c.Revoke(context.Background(), api.GrantRequest{Prog: revokedScope + "/*", Statements: []string{crashtest.LookupTag}})
		if err == nil {
			h.say("revoked %s/* %s", revokedScope, crashtest.LookupTag)
			return time.Now().UnixMilli()
		}
		h.say("revoke: %v; again", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// verifyRevoked checks the revoked invocations: each ended denied, and
// every attempt its ledger allowed was made before the revoke returned.
func (h *harness) verifyRevoked(e *host.Engine, ids []string, revokedAt int64, bad func(string, ...any)) {
	for _, id := range ids {
		st, err := e.State(id)
		if err != nil || st.Status != host.Completed {
			bad("%s (revoked): %v %v", id, st, err)
			continue
		}
		v, err := checkpoint.DecodeData(st.Result)
		if l, ok := v.([]any); err != nil || !ok || len(l) != 2 || l[1] != "denied" {
			bad("%s (revoked): result %v, want [N, \"denied\"]", id, v)
		}
		in, err := e.Inspect(id)
		if err != nil {
			bad("%s (revoked): inspect: %v", id, err)
			continue
		}
		for _, op := range in.Operations {
			if a := op.Attempt; a != nil && a.Executor != "ward" && a.At > revokedAt {
				bad("%s (revoked): act %d allowed at %d, %d ms after the revoke returned", id, op.Ordinal, a.At, a.At-revokedAt)
			}
		}
	}
}
