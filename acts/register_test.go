// register_test.go: the host's environment secrets follow the redactor's
// rule for assignments, and take the host's own keys whatever their shape.

package acts

import (
	"slices"
	"testing"

	"github.com/runehost/runehost/acts/mcp"
)

func TestEnvSecrets(t *testing.T) {
	got := EnvSecrets([]string{
		"GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a", "DB_PASSWORD=hunter2",
		"MAX_TOKENS=4096", "SORT_KEY=created_at", "KEY=9f2Kx81Lq0Zp7wRt", "PATH=/usr/bin", "EMPTY_SECRET=",
		"PWD=/work/main", "OLDPWD=/tmp", // the working directory is no secret
		"GOOGLE_APPLICATION_CREDENTIALS=/home/ada/.config/gcloud/key.json", "AWS_SECRET_ACCESS_KEY=/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"RUNEHOST_MODEL_KEY=localmodelkey", "RUNEHOST_MODEL_MAX_TOKENS=4096", // the host's own key, whatever its shape
	})
	want := []string{"ghp_16C7e42F292c6912E7710c838347Ae178B4a", "hunter2", "9f2Kx81Lq0Zp7wRt", "/K7MDENG/bPxRfiCYEXAMPLEKEY", "localmodelkey"}
	if !slices.Equal(got, want) {
		t.Fatalf("EnvSecrets = %q, want %q", got, want)
	}
}

// A remote MCP server's key is one of the host's secrets.
func TestMCPKeyIsASecret(t *testing.T) {
	c := Config{MCP: map[string]mcp.Remote{"far": {URL: "https://x/mcp", Key: "k-far"}, "open": {URL: "https://y/mcp"}}}
	if got := c.Secrets(); !slices.Equal(got, []string{"k-far"}) {
		t.Errorf("Secrets = %q", got)
	}
}
