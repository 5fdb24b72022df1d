// verify.go holds the checks the chaos harness makes once every invocation
// ended, reading the store itself (as one more host that drives nothing)
// and the journal.

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/store/jetstream"
)

// verify reports every violation and returns how many there were.
func (h *harness) verify(ids []string, want map[string]int64, all int, revoked []string, revokedAt int64) int {
	viol := 0
	bad := func(format string, args ...any) {
		viol++
		fmt.Printf("chaos: VIOLATION: "+format+"\n", args...)
	}
	s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: h.urls, Replicas: 3, Shared: true})
	check(err)
	defer s.Close()
	e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
	check(err)
	defer e.StopClaims()
	entries, err := h.journal.Entries()
	check(err)
	done, effects := map[string]int{}, 0
	for _, en := range entries {
		done[en.Op]++
		if !isRevoked(en.Op, revoked) {
			effects++
		}
	}
	for _, id := range ids {
		st, err := e.State(id)
		if err != nil {
			bad("%s: %v", id, err)
			continue
		}
		if st.Status != host.Completed {
			bad("%s ended %s, not completed", id, st.Status)
		} else if v, err := checkpoint.DecodeData(st.Result); err != nil || v != want[id] {
			bad("%s: result %v, an uninterrupted run gives %d", id, v, want[id])
		}
		for ord := 1; ord <= acts; ord++ {
			if n := done[fmt.Sprintf("%s#%d", id, ord)]; n != 1 {
				bad("%s: act %d done %d times", id, ord, n)
			}
		}
		in, err := e.Inspect(id)
		if err != nil {
			bad("%s: inspect: %v", id, err)
			continue
		}
		for _, d := range in.Damage {
			bad("%s: damaged: %s", id, d)
		}
		if len(in.Operations) != acts {
			bad("%s: %d operations in the ledger, want %d", id, len(in.Operations), acts)
		}
		for _, op := range in.Operations {
			if op.Phase != host.Consumed || op.Outcome == nil {
				bad("%s: act %d is %s, its outcome %v", id, op.Ordinal, op.Phase, op.Outcome != nil)
			}
		}
		a := in.Allowance
		if a.Held != 0 || a.Lent != 0 || a.Charged > a.Limit {
			bad("%s: allowance %+v not settled within its limit", id, a)
		}
		evs, err := e.Events(id, 1, 0)
		if err != nil {
			bad("%s: events: %v", id, err)
			continue
		}
		results := map[string]int{}
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				bad("%s: event %d has seq %d: skipped or repeated", id, i+1, ev.Seq)
				break
			}
			if ev.ToolResult != nil {
				results[ev.ToolResult.CallID]++
			}
		}
		for call, n := range results {
			if n != 1 {
				bad("%s: the outcome of %s logged %d times", id, call, n)
			}
		}
	}
	if len(ids) == all && effects != all*acts {
		bad("the journal holds %d effects of the invocations, want %d", effects, all*acts)
	}
	h.verifyRevoked(e, revoked, revokedAt, bad)
	return viol
}

// isRevoked reports whether op (INV#ORD) is an act of a revoked invocation.
func isRevoked(op string, revoked []string) bool {
	inv, _, _ := strings.Cut(op, "#")
	for _, id := range revoked {
		if inv == id {
			return true
		}
	}
	return false
}
