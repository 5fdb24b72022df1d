// crashtest_test.go checks the journal and the reconciling adapter's lookup.

package crashtest

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
)

func op(t *testing.T, inv string, ord uint64, n int64) *host.Operation {
	m := &checkpoint.Map{}
	m.Set("n", n)
	m.Set("pad", int64(3))
	b, err := checkpoint.EncodeData(m)
	if err != nil {
		t.Fatal(err)
	}
	return &host.Operation{Invocation: inv, Ordinal: ord, Tag: LookupTag, Args: b}
}

func TestLookupFindsOnlyWhatHappened(t *testing.T) {
	j := Journal{Path: filepath.Join(t.TempDir(), "journal")}
	a := looker{recorder{j: j}}
	done, other := op(t, "r1", 2, 5), op(t, "r1", 3, 5)
	if _, found, err := a.Lookup(context.Background(), done); found || err != nil {
		t.Fatalf("before the effect: found %v, %v", found, err)
	}
	// Not found is never to happen: that attempt's effect, late (a host
	// stopped in it), is refused; the attempt made again lands.
	if _, err := a.Do(context.Background(), done); !errors.Is(err, ErrJournal) {
		t.Fatalf("a voided attempt's effect: %v", err)
	}
	done.Reopened = 1
	got, err := a.Do(context.Background(), done)
	if err != nil {
		t.Fatal(err)
	}
	again, found, err := a.Lookup(context.Background(), done)
	if !found || err != nil {
		t.Fatalf("after the effect: found %v, %v", found, err)
	}
	m1, m2 := got.(*checkpoint.Map), again.(*checkpoint.Map)
	if v1, _ := m1.Get("v"); v1 != int64(10) {
		t.Fatalf("reply %v", v1)
	}
	if p1, _ := m1.Get("pad"); p1 != "yyy" {
		t.Fatalf("pad %v", p1)
	}
	b1, _ := checkpoint.EncodeData(m1)
	b2, _ := checkpoint.EncodeData(m2)
	if string(b1) != string(b2) {
		t.Fatal("the lookup's reply is not the effect's")
	}
	if _, found, _ := a.Lookup(context.Background(), other); found {
		t.Fatal("another operation was found")
	}
	es, err := j.Entries()
	if err != nil || len(es) != 1 || es[0] != (Entry{Op: "r1#2", Tag: LookupTag, N: 5}) {
		t.Fatalf("journal %v, %v", es, err)
	}
}

func TestBadArguments(t *testing.T) {
	a := recorder{j: Journal{Path: filepath.Join(t.TempDir(), "journal")}}
	b, _ := checkpoint.EncodeData("n")
	_, err := a.Do(context.Background(), &host.Operation{Invocation: "r1", Ordinal: 1, Tag: RecordTag, Args: b})
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrArgs) || e.Op != "r1#1" {
		t.Fatalf("got %v", err)
	}
}
