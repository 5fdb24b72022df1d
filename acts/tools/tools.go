// Package tools holds the act tool.run: an untrusted WASI tool, found by
// name in the host's tool directory, run in its own sandbox (wasmvm/tool).
// A grant names the tool and the most fuel a run may ask for (tool.run:wc
// allows DefaultFuel, tool.run:wc,fuel=N allows N, at most MaxFuel). The tool
// sees only the directories of the prog's fs.read grants (read-only) and
// fs.write grants, each at its guest path (fs.read:./data=/ shows ./data at
// /; without one, at its own path), and only the environment variables of
// its tool.env grants, never the host's own. A mount over a place no grant
// may cover (fs.Place) denies the act.
package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/runehost/runehost/acts/args"
	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/wasmvm/tool"
)

// The tags: the act, and the grant tag of environment variables.
const (
	Tag    = "tool.run"
	EnvTag = "tool.env"
)

// Fuel a run may have: DefaultFuel unless it asks for less, or for more
// that its grant allows; MaxFuel is the most any grant allows (about a
// minute of computation; the wall clock stops a run first).
const (
	DefaultFuel = tool.DefaultFuel
	MaxFuel     = 1 << 37
)

// MaxModule bounds a tool's module file.
const MaxModule = 512 << 20

// Adapter is the tool.run act.
type Adapter struct {
	Dir         string        // where NAME.wasm is found
	CacheDir    string        // compilation cache, as for wasmvm.CompilationCache
	MemoryPages uint32        // per tool; tool.DefaultMemoryPages when 0
	Timeout     time.Duration // per run; tool.DefaultTimeout when 0
	// Grants returns the prog's grants of a tag, for mounts and environment.
	Grants func(inv, tag string) ([]host.Grant, error)
	// Places are the host's own directories no mount may cover, besides
	// fs.SystemPlaces.
	Places []fs.Place
	// Prog returns the prog an invocation runs: a worker kept after a run
	// serves only the same prog's runs (tool.Config.Owner).
	Prog func(inv string) (string, error)
	// Warm, Keep and WithoutLandlock are as for tool.Options: workers
	// ready per tool, workers kept after a run for the next of its kind,
	// and the operator's word to run tools where the kernel has no Landlock.
	Warm, Keep      int
	WithoutLandlock bool

	once   sync.Once
	runner *tool.Runner
	err    error
}

// Limits declares tool.run's limits.
func (a *Adapter) Limits() host.Limits {
	t := a.Timeout
	if t == 0 {
		t = tool.DefaultTimeout
	}
	return host.Limits{Args: 4 << 20, Reply: 2*tool.DefaultOutputCap + 64<<10, Time: t + 10*time.Second}
}

// CheckGrant accepts a tool name, with the most fuel it may have:
// tool.run:wc or tool.run:wc,fuel=N.
func (a *Adapter) CheckGrant(tag, target string) (string, error) {
	if tag != Tag {
		return target, nil
	}
	name, fuel, err := ParseGrant(target)
	if err != nil {
		return "", err
	}
	if fuel == DefaultFuel {
		return name, nil
	}
	return fmt.Sprintf("%s,fuel=%d", name, fuel), nil
}

// parseGrant splits a tool.run target into the tool and the fuel allowed.
func ParseGrant(target string) (string, uint64, error) {
	name, opt, hasOpt := strings.Cut(target, ",")
	if name == "" || strings.ContainsAny(name, "/\\. =") {
		return "", 0, errors.New("want a tool name: tool.run:wc, or tool.run:wc,fuel=N")
	}
	if !hasOpt {
		return name, DefaultFuel, nil
	}
	v, ok := strings.CutPrefix(opt, "fuel=")
	n, err := strconv.ParseUint(v, 10, 64)
	if !ok || err != nil || n == 0 || n > MaxFuel {
		return "", 0, fmt.Errorf("%q: want fuel=N, N from 1 to %d", opt, uint64(MaxFuel))
	}
	return name, n, nil
}

type toolArgs struct {
	name  string
	argv  []string
	stdin []byte
	fuel  uint64
}

func (a *Adapter) parse(op *host.Operation) (*toolArgs, error) {
	m, err := args.Map(op.Args, Tag, "{tool, args, stdin, fuel}")
	if err != nil {
		return nil, err
	}
	out := &toolArgs{}
	var ok bool
	t, _ := m.Get("tool")
	if out.name, ok = t.(string); !ok || out.name == "" || strings.ContainsAny(out.name, "/\\. ") {
		return nil, args.Errorf("tool.run: tool must be a tool name")
	}
	if v, ok := m.Get("args"); ok {
		l, ok := v.([]any)
		if !ok {
			return nil, args.Errorf("tool.run: args must be a list of strings")
		}
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, args.Errorf("tool.run: args must be a list of strings")
			}
			out.argv = append(out.argv, s)
		}
	}
	if v, ok := m.Get("stdin"); ok {
		s, ok := v.(string)
		if !ok {
			return nil, args.Errorf("tool.run: stdin must be a string")
		}
		out.stdin = []byte(s)
	}
	if v, ok := m.Get("fuel"); ok {
		n, ok := v.(int64)
		if !ok || n <= 0 || n > MaxFuel {
			return nil, args.Errorf("tool.run: fuel must be a positive int, at most %d", int64(MaxFuel))
		}
		out.fuel = uint64(n)
	}
	return out, nil
}

// Authorize allows a granted tool that exists, with no more fuel than a
// grant of it allows; the statement is the grant allowing the most.
func (a *Adapter) Authorize(_ context.Context, op *host.Operation, grants []host.Grant) (string, error) {
	ar, err := a.parse(op)
	if err != nil {
		return "", err
	}
	statement, most := "", uint64(0)
	for _, g := range grants {
		if name, fuel, err := ParseGrant(g.Target()); err == nil && name == ar.name && fuel > most {
			statement, most = g.Statement, fuel
		}
	}
	switch {
	case statement == "":
		return "", fmt.Errorf("tool %s is not granted", ar.name)
	case ar.fuel > most:
		return "", fmt.Errorf("tool %s may have at most %d fuel (%s), not %d", ar.name, most, statement, ar.fuel)
	}
	if _, err := os.Stat(a.path(ar.name)); err != nil {
		return "", fmt.Errorf("tool %s is granted but not installed in %s", ar.name, a.Dir)
	}
	if _, _, err := a.mounts(op.Invocation); err != nil {
		return "", err
	}
	return statement, nil
}

// fuel is what a run has: what it asked for, or DefaultFuel, or less if
// the grant that allowed it allows less.
func fuel(ar *toolArgs, op *host.Operation) uint64 {
	if ar.fuel != 0 {
		return ar.fuel
	}
	f := uint64(DefaultFuel)
	if op.Attempt != nil {
		if _, allowed, err := ParseGrant(host.Grant{Statement: op.Attempt.Grant}.Target()); err == nil {
			f = min(f, allowed)
		}
	}
	return f
}

func (a *Adapter) path(name string) string { return filepath.Join(a.Dir, name+".wasm") }

// Mounts turns fs grants into a tool's mounts.
func Mounts(read, write []host.Grant) []tool.Mount {
	var out []tool.Mount
	for i, gs := range [][]host.Grant{read, write} {
		for _, g := range gs {
			dir, guest := fs.SplitTarget(g.Target())
			if guest == "" {
				guest = dir
			}
			out = append(out, tool.Mount{Host: dir, Guest: guest, Write: i == 1})
		}
	}
	return out
}

func (a *Adapter) mounts(inv string) ([]tool.Mount, []string, error) {
	if a.Grants == nil {
		return nil, nil, nil
	}
	read, err := a.Grants(inv, fs.Read)
	if err != nil {
		return nil, nil, err
	}
	write, err := a.Grants(inv, fs.Write)
	if err != nil {
		return nil, nil, err
	}
	envs, err := a.Grants(inv, EnvTag)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range append(read, write...) {
		dir, _ := fs.SplitTarget(g.Target())
		if err := fs.CheckPlace(dir, a.Places); err != nil {
			return nil, nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("sandbox: the mount %s is refused: %v", g.Statement, err)}
		}
	}
	var env []string
	for _, g := range envs {
		if tool.HostOwn(g.Target()) {
			// A grant recorded before the ward refused it gives nothing.
			return nil, nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("sandbox: the grant %s is refused: the host's own configuration is never given to a tool or an MCP server", g.Statement)}
		}
		if v, ok := os.LookupEnv(g.Target()); ok {
			if err := tool.CheckEnv(g.Target() + "=" + v); err != nil {
				return nil, nil, &checkpoint.Error{Kind: "denied", Msg: fmt.Sprintf("%s: %v", g.Statement, err)}
			}
			env = append(env, g.Target()+"="+v)
		}
	}
	return Mounts(read, write), env, nil
}

// Sandbox returns the mounts and environment a tool of invocation inv is
// given from its prog's fs and tool.env grants (mcp.call's servers get the
// same).
func (a *Adapter) Sandbox(inv string) ([]tool.Mount, []string, error) { return a.mounts(inv) }

// Owner is who an invocation's runs are for: its prog, or the invocation
// itself where the adapter cannot tell.
func (a *Adapter) Owner(inv string) string {
	if a.Prog != nil {
		if p, err := a.Prog(inv); err == nil {
			return "prog " + p
		}
	}
	return "invocation " + inv
}

// Runner returns the adapter's sandbox, made on first use.
func (a *Adapter) Runner() (*tool.Runner, error) {
	a.once.Do(func() {
		a.runner, a.err = tool.New(context.Background(), tool.Options{CacheDir: a.CacheDir, MemoryPages: a.MemoryPages, Warm: a.Warm, Keep: a.Keep, WithoutLandlock: a.WithoutLandlock})
	})
	return a.runner, a.err
}

func (a *Adapter) readModule(name string) ([]byte, error) { return ReadModule(a.path(name)) }

// ReadModule reads a module file: a regular file, not too large, opened
// without blocking (a pipe named wc.wasm would wait for a writer).
func ReadModule(path string) ([]byte, error) {
	f, err := fs.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxModule+1))
	if err == nil && len(b) > MaxModule {
		err = fmt.Errorf("module over %d bytes", MaxModule)
	}
	return b, err
}

// Do runs the tool.
func (a *Adapter) Do(ctx context.Context, op *host.Operation) (any, error) {
	ar, err := a.parse(op)
	if err != nil {
		return nil, err
	}
	runner, err := a.Runner()
	if err != nil {
		return nil, err
	}
	module, err := a.readModule(ar.name)
	if err != nil {
		return nil, &checkpoint.Error{Kind: "not_found", Msg: fmt.Sprintf("tool %s: %v", ar.name, err)}
	}
	mounts, env, err := a.mounts(op.Invocation)
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(ctx, module, tool.Config{Name: ar.name, Args: ar.argv, Stdin: ar.stdin, Env: env, Mounts: mounts, Fuel: fuel(ar, op), Timeout: a.Timeout,
		Owner: a.Owner(op.Invocation)})
	if err != nil {
		return nil, &checkpoint.Error{Kind: "failed", Msg: err.Error()}
	}
	return Reply(res), nil
}

// Reply is a tool's result as the prog sees it.
func Reply(res *tool.Result) *checkpoint.Map {
	m := &checkpoint.Map{}
	m.Set("ok", res.OK())
	m.Set("stop", string(res.Stop))
	m.Set("exit_code", int64(res.ExitCode))
	m.Set("fuel_used", int64(res.FuelUsed))
	for _, o := range []struct {
		name    string
		b       []byte
		dropped int64
	}{{"stdout", res.Stdout, res.StdoutDropped}, {"stderr", res.Stderr, res.StderrDropped}} {
		if utf8.Valid(o.b) {
			m.Set(o.name, string(o.b))
		} else {
			m.Set(o.name+"_base64", base64.StdEncoding.EncodeToString(o.b))
		}
		m.Set(o.name+"_dropped", o.dropped)
	}
	if res.Detail != "" {
		m.Set("detail", res.Detail)
	}
	return m
}

// Lookup: a tool that could write nothing can run again to the same effect
// (its fuel is deterministic), so an attempt cut short is reopened; one that
// could write stays unknown.
func (a *Adapter) Lookup(_ context.Context, op *host.Operation) (any, bool, error) {
	mounts, _, err := a.mounts(op.Invocation)
	if err != nil {
		return nil, false, err
	}
	for _, m := range mounts {
		if m.Write {
			return nil, false, errors.New("the tool could write: its effect is unknown")
		}
	}
	return nil, false, nil
}

// Suggest names the tool to grant for op, with the fuel it asks for when
// that is more than a grant allows by default.
func (a *Adapter) Suggest(op *host.Operation) string {
	ar, err := a.parse(op)
	if err != nil {
		return ""
	}
	if ar.fuel > DefaultFuel {
		return fmt.Sprintf("%s:%s,fuel=%d", Tag, ar.name, ar.fuel)
	}
	return Tag + ":" + ar.name
}

// Close releases the compiled tools.
func (a *Adapter) Close(ctx context.Context) error {
	if a.runner != nil {
		return a.runner.Close(ctx)
	}
	return nil
}

var (
	_ host.Reconciler   = (*Adapter)(nil)
	_ host.Authorizer   = (*Adapter)(nil)
	_ host.GrantChecker = (*Adapter)(nil)
	_ host.Limited      = (*Adapter)(nil)
	_ host.Suggester    = (*Adapter)(nil)
)
