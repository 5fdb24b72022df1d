// register.go holds Register: every act family on one engine.

package acts

import (
	"context"
	"os"
	"path/filepath"

	"github.com/runehost/runehost/acts/approval"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/acts/tools"
	"github.com/runehost/runehost/acts/web"
	"github.com/runehost/runehost/host"
)

// Config is the host's configuration of the acts.
type Config struct {
	ToolDir   string                    // where tool.run finds NAME.wasm
	CacheDir  string                    // the sandbox's compilation cache
	Endpoints map[string]model.Endpoint // model.chat's endpoints
}

// FromEnv reads the configuration from the environment: RUNEHOST_TOOLS
// (default ./tools), RUNEHOST_CACHE_DIR and the model endpoints (see
// model.FromEnv).
func FromEnv() Config {
	dir := os.Getenv("RUNEHOST_TOOLS")
	if dir == "" {
		dir = "tools"
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Config{ToolDir: dir, CacheDir: os.Getenv("RUNEHOST_CACHE_DIR"), Endpoints: model.FromEnv()}
}

// Secrets are the host's own secrets in the configuration: the model
// endpoints' keys. They are redacted wherever they appear.
func (c Config) Secrets() []string {
	var out []string
	for _, e := range c.Endpoints {
		if e.Key != "" {
			out = append(out, e.Key)
		}
	}
	return out
}

// Register gives an engine every act family, and returns what must be
// closed with it.
func Register(e *host.Engine, cfg Config) (closer func()) {
	for tag, a := range fs.New() {
		e.Adapters[tag] = a
	}
	for tag, a := range web.New() {
		e.Adapters[tag] = a
	}
	e.Adapters[model.Tag] = &model.Adapter{Endpoints: cfg.Endpoints}
	e.Adapters[approval.Tag] = approval.Adapter{}
	t := &tools.Adapter{Dir: cfg.ToolDir, CacheDir: cfg.CacheDir, Grants: e.GrantsFor}
	e.Adapters[tools.Tag] = t
	return func() { t.Close(context.Background()) }
}
