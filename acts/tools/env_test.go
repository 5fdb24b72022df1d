// env_test.go: a tool.env grant whose variable holds a host secret, in any
// encoding and anywhere in its value, denies tool.run, naming the host
// variable and never the secret; an innocent value reaches the tool.

package tools_test

import (
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/internal/testtools"
)

func TestHostSecretInAnyEncodingDenied(t *testing.T) {
	e := engine(t, "envsnoop")
	for _, s := range testtools.HostSecrets {
		t.Setenv(s.Name, s.Value)
	}
	acttest.Grant(t, e, "tool.run:envsnoop", "tool.env:TOOLTEST_CARRIER")
	run := `act "tool.run" {tool: "envsnoop", args: ["TOOLTEST_CARRIER"]}`
	for _, s := range testtools.HostSecrets {
		for _, h := range testtools.Hide(s.Value) {
			t.Setenv("TOOLTEST_CARRIER", h.Value)
			got, _ := acttest.Run(t, e, acttest.Catch(run), nil)
			if !strings.HasPrefix(got, `["denied"`) || !strings.Contains(got, "TOOLTEST_CARRIER holds the value of "+s.Name+" (") || strings.Contains(strings.ToLower(got), strings.ToLower(s.Value)) {
				t.Errorf("%s %s: %s", s.Name, h.Case, got)
			}
		}
	}
	for _, v := range testtools.Innocent {
		t.Setenv("TOOLTEST_CARRIER", v)
		got, _ := acttest.Run(t, e, acttest.Catch(run), nil)
		if !strings.Contains(got, `"ok":true`) || !strings.Contains(got, "found TOOLTEST_CARRIER=") {
			t.Errorf("%q: %s", v, got)
		}
	}
}
