// partition.go holds the partitions the harness makes (-partitions): a
// host or a node cut off from the others for a while, running all along.

package main

import (
	"context"
	"time"

	"github.com/runehost/runehost/client"
	"github.com/runehost/runehost/host"
)

// cutHost cuts p off past its claims, while it goes on running: the other
// hosts take its trees over, and what it had in hand, its commits refused
// by the fence, must not land. Its health then says how many it refused.
func (h *harness) cutHost(p *proc) {
	before := h.fencedOf(p)
	orphans := h.orphans(p)
	h.say("cut %s off (it drives %d trees with acts to do)", p.name, len(orphans))
	check(h.net.cut(p.ns))
	cut := time.Now()
	h.kills["host cut"]++
	d := h.claim*3/2 + time.Duration(h.rng.Intn(500))*time.Millisecond // past its claims
	for seen := len(orphans) == 0; time.Since(cut) < d; time.Sleep(50 * time.Millisecond) {
		if !seen && h.claimedElsewhere(orphans, p.hostName) { // not an act: the cut host's own in flight go on landing
			const kind = "host cut, another host claimed one of its trees"
			h.recovery[kind] = append(h.recovery[kind], time.Since(cut))
			seen = true
		}
	}
	check(h.net.heal(p.ns))
	h.say("%s back", p.name)
	for deadline := time.Now().Add(h.claim + 2*time.Second); ; time.Sleep(100 * time.Millisecond) {
		if n := h.fencedOf(p); n > before || time.Now().After(deadline) {
			h.fenced += max(0, n-before)
			return
		}
	}
}

// cutNode cuts p off for a few seconds: a minority of one, which stalls
// while the other two go on, and catches up once back.
func (h *harness) cutNode(p *proc) {
	h.say("cut %s off", p.name)
	before := h.entries()
	check(h.net.cut(p.ns))
	cut := time.Now()
	h.kills["node cut"]++
	d := 1500*time.Millisecond + time.Duration(h.rng.Intn(2500))*time.Millisecond
	for time.Since(cut) < d {
		if before >= 0 && h.entries() > before {
			const kind = "node cut, the next act was done"
			h.recovery[kind] = append(h.recovery[kind], time.Since(cut))
			before = -1
		}
		time.Sleep(10 * time.Millisecond)
	}
	check(h.net.heal(p.ns))
	h.say("%s back", p.name)
}

// claimedElsewhere says whether another host than by claimed one of roots.
func (h *harness) claimedElsewhere(roots map[string]bool, by string) bool {
	drivers, err := host.Drivers(h.st)
	if err != nil {
		return false
	}
	for root := range roots {
		if d, ok := drivers[root]; ok && d != by {
			return true
		}
	}
	return false
}

// fencedOf is what p's health counts of commits its fence refused (0 when
// it does not answer).
func (h *harness) fencedOf(p *proc) int64 {
	c, ok, _ := client.Find(p.dir)
	if !ok {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hl, err := c.Health(ctx)
	if err != nil {
		return 0
	}
	return hl.Fenced
}
