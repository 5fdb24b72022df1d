// slack_test.go: a Slack set-up that cannot work makes `runehost serve
// --slack` exit 2 at start with what to fix, before it reports serving.

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/slack/fakeslack"
)

func TestServedSlackSetupFails(t *testing.T) {
	fake := fakeslack.NewStrict(nil)
	defer fake.Close()
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-test")
	t.Setenv("SLACK_APP_TOKEN", "xoxb-a-bot-token-again")
	t.Setenv("SLACK_API_URL", fake.URL())
	dir := filepath.Join(t.TempDir(), "store")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := realMainContext(ctx, []string{"runehost", "serve", "--store", dir, "--native", "--slack", "--progs", t.TempDir()}, &out, &errb)
	if ctx.Err() != nil {
		t.Fatalf("serve did not stop on a wrong app token:\n%s", errb.String())
	}
	if code != exitUsage || !strings.Contains(errb.String(), "SLACK_APP_TOKEN must be an app-level token (xapp-…) with the connections:write scope") ||
		strings.Contains(errb.String(), `"msg":"serving"`) {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
}
