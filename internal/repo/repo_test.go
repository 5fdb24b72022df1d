// repo_test.go: every go test the Makefile's suites run names its
// timeout (Go's default of ten minutes a package turned a loaded machine's
// make test red with nothing wrong), and the README says how long the
// suite takes and what to do when a package times out.

package repo

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// suites are the Makefile's targets that run tests for make test,
// test-jetstream and test-long.
var suites = []string{"test-unit", "race", "test-jetstream", "test-long", "bench-check", "unit", "$(FUZZ_SHORT)"}

func TestEveryTestNamesItsTimeout(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipes := map[string][]string{}
	target := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "\t"):
			if target != "" {
				recipes[target] = append(recipes[target], line)
			}
		case strings.Contains(line, ":") && !strings.HasPrefix(line, "#") && !strings.Contains(line, "="):
			target = strings.TrimSpace(line[:strings.Index(line, ":")])
		default:
			target = ""
		}
	}
	runs := regexp.MustCompile(`\$\(GO\) test( |$)|\$\(CURDIR\)/\$<`)
	for _, name := range suites {
		lines, ok := recipes[name]
		if !ok {
			t.Errorf("the Makefile has no target %s", name)
			continue
		}
		n := 0
		for _, l := range lines {
			if !runs.MatchString(l) || strings.Contains(l, " -c ") {
				continue
			}
			n++
			if !strings.Contains(l, "-timeout=") && !strings.Contains(l, "-test.timeout=") {
				t.Errorf("%s runs tests with Go's default timeout: %s", name, strings.TrimSpace(l))
			}
		}
		if n == 0 {
			t.Errorf("%s runs no go test", name)
		}
	}
}
