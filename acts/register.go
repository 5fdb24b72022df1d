// register.go holds Register: every act family on one engine, with the
// places no grant may cover and the host's secrets.

package acts

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runehost/runehost/acts/approval"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/mcp"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/acts/web"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm"
	"github.com/runehost/runehost/wasmvm/tool"
)

// Config is the host's configuration of the acts.
type Config struct {
	ToolDir   string                    // where tool.run finds NAME.wasm
	CacheDir  string                    // the sandbox's compilation cache
	Endpoints map[string]model.Endpoint // model.chat's endpoints
	MCP       map[string]mcp.Remote     // mcp.call's remote servers (its WASI ones are in ToolDir/mcp)
	// ToolsWithoutLandlock runs tools on a kernel without Landlock, their
	// workers confined by everything else: the operator's acceptance of
	// the risk (RUNEHOST_ALLOW_TOOLS_WITHOUT_LANDLOCK=1, or the flag).
	ToolsWithoutLandlock bool
	// EnvSecrets are the values of the host's environment variables whose
	// name marks a secret (SLACK_BOT_TOKEN, RUNEHOST_MODEL_KEY, *_PASSWORD...).
	EnvSecrets []string
}

// FromEnv reads the configuration from the environment: RUNEHOST_TOOLS
// (default ./tools), RUNEHOST_CACHE_DIR, the model endpoints (see
// model.FromEnv), the remote MCP servers (mcp.FromEnv) and the secrets among
// the environment's values.
func FromEnv() Config {
	dir := os.Getenv("RUNEHOST_TOOLS")
	if dir == "" {
		dir = "tools"
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Config{ToolDir: dir, CacheDir: os.Getenv("RUNEHOST_CACHE_DIR"), Endpoints: model.FromEnv(), MCP: mcp.FromEnv(), EnvSecrets: EnvSecrets(os.Environ()),
		ToolsWithoutLandlock: ToolsWithoutLandlock()}
}

// AllowWithoutLandlock is the environment variable by which the operator
// runs tools on a kernel without Landlock.
const AllowWithoutLandlock = "RUNEHOST_ALLOW_TOOLS_WITHOUT_LANDLOCK"

// ToolsWithoutLandlock reports whether the operator said so.
func ToolsWithoutLandlock() bool {
	v, _ := strconv.ParseBool(os.Getenv(AllowWithoutLandlock))
	return v
}

// EnvSecrets returns the values of environ (NAME=VALUE) that hold a host
// secret (tool.HostSecret, the rule tool.env is refused by too): what the
// redactor would take out of NAME=VALUE in a text, a strong name's
// (DB_PASSWORD) always, a weak one's (KEY, TOKEN) when the value is shaped
// like a secret, and the host's own keys (RUNEHOST_MODEL_KEY) whatever
// their shape.
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && tool.HostSecret(k, v) {
			out = append(out, v)
		}
	}
	return out
}

// Secrets are the host's own secrets: the model endpoints' and the remote
// MCP servers' keys and the
// secret values of its environment. They are taken out of every act's
// reply and error, and redacted wherever they appear, in every encoding
// the redactor knows.
func (c Config) Secrets() []string {
	out := slices.Clone(c.EnvSecrets)
	for _, e := range c.Endpoints {
		if e.Key != "" {
			out = append(out, e.Key)
		}
	}
	for _, r := range c.MCP {
		if r.Key != "" {
			out = append(out, r.Key)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Places are the host's own directories no grant may cover: the store's
// (when it is on disk) and the compilation cache.
func (c Config) Places(storeDir string) []fs.Place {
	var out []fs.Place
	if storeDir != "" {
		out = append(out, fs.Place{Dir: storeDir, What: "the store directory"})
	}
	if d := wasmvm.CacheDirOf(c.CacheDir); d != "" {
		out = append(out, fs.Place{Dir: d, What: "the compilation cache"})
	}
	return out
}

// Register gives an engine every act family, and returns what must be
// closed with it.
func Register(e *host.Engine, cfg Config) (closer func()) {
	storeDir := ""
	if e.Store != nil {
		storeDir = e.Store.Dir()
	}
	places := cfg.Places(storeDir)
	for tag, a := range fs.New(places...) {
		e.Adapters[tag] = a
	}
	for tag, a := range web.New() {
		e.Adapters[tag] = a
	}
	e.Adapters[model.Tag] = &model.Adapter{Endpoints: cfg.Endpoints}
	e.Adapters[approval.Tag] = approval.Adapter{}
	t := &tools.Adapter{Dir: cfg.ToolDir, CacheDir: cfg.CacheDir, Grants: e.GrantsFor, Prog: e.ProgOf, Places: places, Warm: 1, Keep: tool.WarmTools, WithoutLandlock: cfg.ToolsWithoutLandlock}
	e.Adapters[tools.Tag] = t
	for tag, a := range mcp.New(&mcp.Servers{Tools: t, Remote: cfg.MCP}) {
		e.Adapters[tag] = a
	}
	e.StatementTags = map[string]bool{tools.EnvTag: true}
	return func() { t.Close(context.Background()) }
}
