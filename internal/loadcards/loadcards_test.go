// loadcards_test.go is the short, seeded run of the load harness in `make
// test`, and its check that a budget over the limit is caught.

package loadcards

import "testing"

func TestShortLoad(t *testing.T) {
	res, err := Compare(12, 50, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) > 0 || res.RefusedTerminal != 0 || res.Closed != 12 || res.MaxPerMinute > 50 {
		t.Fatalf("%+v", res.Violations)
	}
}

// A budget above Slack's limit draws 429s; the harness says so.
func TestOverBudgetCaught(t *testing.T) {
	over, err := RunWith(30, 20, 200, 7)
	if err != nil {
		t.Fatal(err)
	}
	free, _ := RunWith(30, 0, 200, 7)
	if len(over.Edits) == len(free.Edits) && over.RefusedTerminal == 0 {
		t.Fatalf("a budget at 200/min against a limit of 20 went unnoticed: %d edits either way", len(over.Edits))
	}
}
