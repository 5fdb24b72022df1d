// check_test.go checks the harness's reading of a store: a record the host
// reports as damaged (beside the rest, since the store's fault handling) is
// a store that does not read, as it was when the host failed on it.

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
