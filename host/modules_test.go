// modules_test.go: a prog with imports runs from the source set it was
// admitted with, and a changed import is refused as a changed source is.

package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runehost/runehost/guest/modules"
)

// importing is a prog that imports lib/a.rune, whose k() gives k.
func importing(k string) []byte {
	return modules.Encode(&modules.Set{Main: "p.rune", Files: map[string][]byte{
		"p.rune":     []byte("import \"lib/a.rune\" as a\nlet v = await {key: \"go\"}\nreturn a.k() + v\n"),
		"lib/a.rune": []byte("fn k() { return " + k + " }\n"),
	}})
}

func TestImportsBoundToTheRun(t *testing.T) {
	s := memStore(t)
	e := engine(t, s, 1)
	v1 := importing("10")
	out, err := e.Start(context.Background(), "r1", "p", v1, nil, 100_000, 1)
	if err != nil || out.Status != Waiting {
		t.Fatalf("start: %+v %v", out, err)
	}
	cp := mustCP(t, e, "r1")

	// A checkpoint refuses a source set whose import changed, with a clear error.
	_, err = e.Migrate("r1", cp, importing("20"), true)
	if !errors.Is(err, ErrBadReplacement) || !strings.Contains(err.Error(), "one of its modules changed") {
		t.Fatalf("a changed import: %v", err)
	}
	if _, err := e.Migrate("r1", cp, v1, true); err != nil {
		t.Fatalf("the same set: %v", err)
	}

	// After a restart (a runtime that has loaded nothing) the run goes on
	// with the set it was admitted with, from the store.
	e2 := engine(t, s, 2)
	out, err = e2.Send(context.Background(), "r1", "go", data(t, int64(5)))
	if err != nil || out.Status != Completed || porttestJSON(t, out.Result) != "15" {
		t.Fatalf("after a restart: %+v %v", out, err)
	}
}
