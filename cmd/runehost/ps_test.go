// ps_test.go: ids in their numeric order.

package main

import (
	"slices"
	"testing"
)

func TestNaturalCompare(t *testing.T) {
	ids := []string{"r10", "r2", "r10.2", "r1", "r10.10", "r10.1", "r19", "r9"}
	slices.SortFunc(ids, naturalCompare)
	want := []string{"r1", "r2", "r9", "r10", "r10.1", "r10.2", "r10.10", "r19"}
	if !slices.Equal(ids, want) {
		t.Fatalf("sorted %q, want %q", ids, want)
	}
}
