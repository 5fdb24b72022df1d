// memo_test.go: the memo of short inputs changes no answer and stays bounded.

package redact

import (
	"fmt"
	"testing"
)

func TestMemoSameAnswers(t *testing.T) {
	r := New("q7Zx-k2Lm-9wPa-4tRe")
	inputs := []string{
		"plain text", `{"api_key": "abcd1234efgh5678"}`, "token=ghp_0123456789abcdefghijABCDEFGHIJ012345",
		"the key is q7Zx-k2Lm-9wPa-4tRe", "Authorization: Bearer abc.def.ghi", "password: hunter2hunter2",
	}
	for round := 0; round < 2; round++ { // the second round answers from the memo
		for _, in := range inputs {
			if got, want := r.String(in), r.redact(in); got != want {
				t.Fatalf("round %d: %q: memo gave %q, want %q", round, in, got, want)
			}
		}
	}
	if other := Default.String(inputs[3]); other == r.String(inputs[3]) {
		t.Fatalf("a redactor without the secret answered as one with it: %q", other)
	}
	for i := range 3 * memoEntries {
		r.String(fmt.Sprint("line ", i))
	}
	if n := len(r.memo); n > memoEntries {
		t.Fatalf("the memo holds %d entries, more than %d", n, memoEntries)
	}
}
