// check_test.go checks the harness's reading of a store and its rules: a
// record the host reports as damaged (beside the rest, since the store's
// fault handling) is a store that does not read, as it was when the host
// failed on it; an act goes back from unresolved to proposed only when the
// ledger reopened it, whatever reconciling adapter it is of.

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/crashtest"
	"github.com/runehost/runehost/store"
)

func TestReadReportsDamagedRecords(t *testing.T) {
	for _, rec := range []string{"cp", "inv", "grant"} {
		t.Run(rec, func(t *testing.T) {
			dir := t.TempDir()
			h := &harness{r: &round{store: filepath.Join(dir, "store"), world: crashtest.Journal{Path: filepath.Join(dir, "journal")}}}
			s, err := store.Open(store.Options{Dir: h.r.store})
			if err != nil {
				t.Fatal(err)
			}
			e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Grant("*", "test.record"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Start(context.Background(), "r1", "p", []byte(`return await {key: "go"}`), nil, 100_000, 1); err != nil {
				t.Fatal(err)
			}
			key := map[string]store.Key{"cp": store.K("cp", "r1"), "inv": store.K("inv", "r1"), "grant": store.K("grant", "*", "test.record")}[rec]
			if err := s.Update(store.Synced, func(tx *store.Tx) error { return tx.PutRaw(key, []byte{0xff, 0x00}) }); err != nil {
				t.Fatal(err)
			}
			s.Close()
			v, err := h.read()
			if err == nil || !strings.Contains(err.Error(), "damaged") {
				t.Fatalf("a store with a damaged %s record read as %v, %v", rec, v, err)
			}
		})
	}
}

func TestCheckAllowsReopenOnly(t *testing.T) {
	for _, how := range []string{"reopened", "rewritten"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			h := &harness{perKind: map[string]*kindStats{}}
			h.r = &round{store: filepath.Join(dir, "store"), world: crashtest.Journal{Path: filepath.Join(dir, "journal")},
				seen: map[string]*seen{}, granted: map[string]bool{}, revoked: map[string]bool{}, sent: map[string]bool{},
				settled: map[string]bool{}, reported: map[string]bool{}, reconciled: map[string]bool{}, reopened: map[string]bool{},
				collected: map[string]bool{}, dumped: true}
			s, err := store.Open(store.Options{Dir: h.r.store})
			if err != nil {
				t.Fatal(err)
			}
			e, _, err := host.Open(s, port.NewNative(), func() int64 { return time.Now().UnixMilli() })
			if err != nil {
				t.Fatal(err)
			}
			// The prog stops at its spawn, attempted by a process that died.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := e.Start(ctx, "r1", "p", []byte(`let k = act "spawn" {steps: 1000, input: 1}
return 1`), nil, 100_000, 1); err == nil {
				t.Fatal("a cancelled start ran")
			}
			id := host.OpID{Invocation: "r1", Ordinal: 1}
			l := host.NewLedger(s)
			if _, err := l.Propose(host.Operation{Invocation: "r1", Ordinal: 1, Tag: host.SpawnTag, Args: []byte{0xa0}}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Attempt(id, host.Attempt{Executor: host.SpawnTag, Generation: 1, Contract: "lookup"}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if h.check("open", result{}); h.viol != 0 {
				t.Fatalf("%d violations before", h.viol)
			}
			if op := h.r.seen["r1"].acts[1]; op.phase != host.Unresolved {
				t.Fatalf("the attempt of a dead process is %s", op.phase)
			}
			if s, err = store.Open(store.Options{Dir: h.r.store}); err != nil {
				t.Fatal(err)
			}
			if how == "reopened" {
				_, err = host.NewLedger(s).Reopen(id)
			} else { // back to proposed, not by the ledger's reopen
				err = s.Update(store.Synced, func(tx *store.Tx) error {
					return tx.Put(store.K("op", "r1", uint64(1)), host.Operation{Invocation: "r1", Ordinal: 1, Tag: host.SpawnTag, Args: []byte{0xa0}, Phase: host.Proposed})
				})
			}
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			h.check("resume r1", result{})
			if want := map[string]int{"reopened": 0, "rewritten": 1}[how]; h.viol != want {
				t.Fatalf("an act %s from unresolved to proposed: %d violations, want %d", how, h.viol, want)
			}
		})
	}
}
