// list_test.go checks the invocation list read a page at a time.

package server

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

// TestEachPages: over more invocations than a page holds, Each gives
// every one once, in the order asked for, filtered by shown status; List
// pages chained by Next give the same ones in the store's order; and an
// error from fn ends Each with that error.
func TestEachPages(t *testing.T) {
	s, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := host.NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	const n = 2*eachPage + 50
	done := 0
	for i := range n {
		id, err := e.NewInvocationID()
		if err != nil {
			t.Fatal(err)
		}
		src := `let ev = await {key: "go"}
return ev`
		if i%7 == 0 {
			src, done = "return 1", done+1
		}
		in, _ := checkpoint.EncodeData(int64(i))
		if _, err := e.Start(context.Background(), id, "p", []byte(src), in, 100_000, 1); err != nil {
			t.Fatal(err)
		}
	}
	svc := &Service{E: e}
	num := func(id string) int { k, _ := strconv.Atoi(strings.TrimPrefix(id, "r")); return k }
	var got []string
	if err := svc.Each(nil, "", func(a, b string) int { return cmp.Compare(num(a), num(b)) }, func(row api.Invocation) error {
		got = append(got, row.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("Each gave %d, want %d", len(got), n)
	}
	for i, id := range got {
		if id != "r"+strconv.Itoa(i+1) {
			t.Fatalf("Each's %dth is %s, want r%d", i, id, i+1)
		}
	}
	completed := 0
	if err := svc.Each([]string{"completed"}, "", nil, func(row api.Invocation) error {
		if row.Status != "completed" {
			t.Errorf("%s is %s", row.ID, row.Status)
		}
		completed++
		return nil
	}); err != nil || completed != done {
		t.Fatalf("completed: %d, want %d (%v)", completed, done, err)
	}
	seen := map[string]bool{}
	prev := ""
	for after := ""; ; {
		l, err := svc.List(nil, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range l.Invocations {
			if seen[row.ID] || row.ID <= prev {
				t.Fatalf("List gave %s again or out of order (after %s)", row.ID, prev)
			}
			seen[row.ID], prev = true, row.ID
		}
		if l.Next == "" {
			break
		}
		after = l.Next
	}
	if len(seen) != n {
		t.Fatalf("List's pages gave %d, want %d", len(seen), n)
	}
	stop := errors.New("stop")
	calls := 0
	if err := svc.Each(nil, "", nil, func(api.Invocation) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Each after fn's error: %v, %d calls", err, calls)
	}
}
