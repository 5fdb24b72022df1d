// limits_test.go holds tool.run to its grant's fuel, to its wall clock
// while it computes, and the host's secrets out of a tool's environment.

package tools_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/host"
)

// A grant says how much fuel a run may ask for: tool.run:NAME the default,
// tool.run:NAME,fuel=N up to N, never more than MaxFuel.
func TestFuelOfTheGrant(t *testing.T) {
	e := engineWith(t, func(a *tools.Adapter) { a.Timeout = 500 * time.Millisecond }, "spin", "wc")
	acttest.Grant(t, e, "tool.run:spin", "tool.run:wc,fuel=1000")
	run := func(expr string) string {
		got, _ := acttest.Run(t, e, acttest.Catch(expr), nil)
		return got
	}
	if got := run(`act "tool.run" {tool: "spin", fuel: 8589934592}`); !strings.Contains(got, `"denied"`) || !strings.Contains(got, "at most 4294967296 fuel (tool.run:spin)") {
		t.Errorf("more than the grant: %s", got)
	}
	// Unasked, a run has the default or less if its grant allows less.
	if got := run(`act "tool.run" {tool: "wc", stdin: "a b c"}`); !strings.Contains(got, `"stop":"fuel"`) || !strings.Contains(got, `"fuel_used":1000`) {
		t.Errorf("wc with a grant of 1000 fuel: %s", got)
	}
	if got := run(`act "tool.run" {tool: "wc", fuel: 1001}`); !strings.Contains(got, `"denied"`) {
		t.Errorf("wc asking past its grant: %s", got)
	}
	acttest.Grant(t, e, "tool.run:spin,fuel=8589934592")
	// Allowed, its clock stops it long before that fuel runs out.
	start := time.Now()
	if got := run(`act "tool.run" {tool: "spin", fuel: 8589934592}`); !strings.Contains(got, `"stop":"timeout"`) || time.Since(start) > time.Minute {
		t.Errorf("spin with 2^33 fuel and 500ms: %s after %s", got, time.Since(start))
	}
}

// Grants are checked and written one way: the default fuel is left out.
func TestFuelGrantStatements(t *testing.T) {
	e := engine(t)
	for in, want := range map[string]string{"tool.run:wc": "tool.run:wc", "tool.run:wc,fuel=4294967296": "tool.run:wc", "tool.run:wc,fuel=100": "tool.run:wc,fuel=100"} {
		if g, err := e.Grant("p", in); err != nil || g.Statement != want {
			t.Errorf("%s: %+v %v", in, g, err)
		}
	}
	for _, bad := range []string{"tool.run:wc,fuel=0", "tool.run:wc,fuel=", "tool.run:wc,fuel=-1", "tool.run:wc,fuel=137438953473", "tool.run:wc,speed=9", "tool.run:,fuel=9", "tool.run:w.c"} {
		if _, err := e.Grant("p", bad); !errors.Is(err, host.ErrBadStatement) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// A tool.env grant of a variable that holds a host secret's value is
// denied at the act, and the secret is not in the reply.
func TestHostSecretNotThroughAnotherName(t *testing.T) {
	e := engine(t, "envsnoop")
	t.Setenv("RUNEHOST_MODEL_KEY", "sk-tooltest-0123456789")
	t.Setenv("TOOLTEST_ALIAS", "sk-tooltest-0123456789")
	acttest.Grant(t, e, "tool.run:envsnoop", "tool.env:TOOLTEST_ALIAS")
	got, _ := acttest.Run(t, e, acttest.Catch(`act "tool.run" {tool: "envsnoop"}`), nil)
	if !strings.HasPrefix(got, `["denied"`) || strings.Contains(got, "sk-tooltest") || !strings.Contains(got, "RUNEHOST_MODEL_KEY") {
		t.Errorf("%s", got)
	}
}
