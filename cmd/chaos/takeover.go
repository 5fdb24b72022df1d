// takeover.go times what a host kill costs the trees that host drove: from
// the kill to the next act of one of them, done by the host that took it
// over (the next act of any tree comes sooner: the other hosts go on).

package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/store/jetstream"
)

// orphans are the roots the host p drives that have acts left to do.
func (h *harness) orphans(p *proc) map[string]bool {
	if h.st == nil || p.hostName == "" {
		return nil
	}
	drivers, err := host.Drivers(h.st)
	if err != nil {
		h.say("claims: %v", err)
		return nil
	}
	es, _ := h.journal.Entries()
	done := map[string]int{}
	for _, en := range es {
		inv, _, _ := strings.Cut(en.Op, "#")
		done[inv]++
	}
	out := map[string]bool{}
	for root, by := range drivers {
		if by == p.hostName && done[root] < acts && !isRevoked(root+"#1", h.revoked) {
			out[root] = true
		}
	}
	return out
}

// waitTakeover waits (a while) for an act of one of roots after entry
// before, and notes how long after the kill it came.
func (h *harness) waitTakeover(roots map[string]bool, before int, killed time.Time) {
	if len(roots) == 0 {
		return
	}
	for time.Since(killed) < 2*time.Minute {
		if h.tookOver(roots, before) {
			const kind = "host kill, the next act of one of its trees was done"
			h.recovery[kind] = append(h.recovery[kind], time.Since(killed))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tookOver says whether an act of one of roots was done after entry before.
func (h *harness) tookOver(roots map[string]bool, before int) bool {
	es, _ := h.journal.Entries()
	for _, en := range es[min(before, len(es)):] {
		if inv, _, _ := strings.Cut(en.Op, "#"); roots[inv] {
			return true
		}
	}
	return false
}

// openClaims opens the stream to read its claims, as one more process
// that drives nothing (no engine: no beat, no claim of its own).
func (h *harness) openClaims() {
	s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: h.urls, Replicas: 3, Shared: true})
	if err != nil {
		h.say("the stream's claims cannot be read: %v", err)
		return
	}
	h.st = s
}

// dead waits (a second at most) until the process pid has stopped running
// after a SIGKILL: gone, or a zombie not yet reaped.
func dead(pid int) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if _, after, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(after, "Z") {
			return
		}
	}
}
