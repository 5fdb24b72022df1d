// Package wasmvm runs the Rune machine inside a WebAssembly sandbox: the
// guest module (guest/wasm, embedded as guest.wasm) in wazero, behind the
// same port.RuntimePort the native machine implements.
//
// One module is compiled per Runtime (through wazero's on-disk compilation
// cache), and a pool of warm instances serves calls, so resuming a parked
// invocation pays for no instantiation. Each instance has a memory limit and
// a fuel budget per call (injected by package fuel) that stops a guest that
// never returns. Any failed call discards its instance; the caller resumes
// from its last checkpoint. Every answer of the guest is untrusted input:
// it is decoded strictly and checked against the request before it is
// returned.
package wasmvm

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/port"
)

//go:embed guest.wasm
var guestWasm []byte

// Defaults.
const (
	DefaultMemoryLimitPages = 8192     // 512 MiB
	DefaultFuel             = 1 << 32  // per call; see docs/sandbox.md
	DefaultPoolSize         = 4        // warm idle instances
	maxSources              = 256      // programs whose source the runtime keeps
	maxStderr               = 16 << 10 // guest stderr kept for error messages
)

// Errors; a *GuestError wraps one of them.
var (
	ErrTrap    = errors.New("guest trapped")
	ErrFuel    = errors.New("guest ran out of fuel")
	ErrMemory  = errors.New("guest ran out of memory")
	ErrAnswer  = port.ErrGuest
	ErrClosed  = errors.New("runtime closed")
	errNoFuel  = errors.New("guest module exports no fuel global")
	errExports = errors.New("guest module lacks the buf and call exports")
)

// GuestError says which call into the guest failed, and how.
type GuestError struct {
	Op     string
	Err    error  // ErrTrap, ErrFuel, ErrMemory or ErrAnswer
	Detail string // the trap, or what was wrong with the answer
	Stderr string // the tail of what the guest wrote to stderr
}

func (e *GuestError) Error() string {
	s := fmt.Sprintf("sandbox %s: %v", e.Op, e.Err)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Stderr != "" {
		s += " (guest stderr: " + e.Stderr + ")"
	}
	return s
}

func (e *GuestError) Unwrap() error { return e.Err }

// Config configures a Runtime.
type Config struct {
	// CacheDir holds wazero's compilation cache. "" means the user cache
	// directory (runehost/wazero under os.UserCacheDir); "off" disables it.
	CacheDir string
	// MemoryLimitPages bounds each instance's memory, in 64 KiB pages.
	MemoryLimitPages uint32
	// PoolSize is how many warm idle instances are kept.
	PoolSize int
	// Fuel is the fuel of one call into the guest.
	Fuel int64
	// OnAct, if set, is offered each act as the guest reaches it; it may
	// answer at once with an encoded reply (ok), and the machine goes on in
	// the same step. Otherwise the step ends with an Act result.
	OnAct func(ctx context.Context, tag string, args []byte, seq uint64) (reply []byte, ok bool)
	// Module replaces the embedded guest (for tests with fake guests). It
	// must already be metered.
	Module []byte
	// Interpret runs every prog in the guest's interpreter, never as
	// compiled code (guest/wasmgen).
	Interpret bool
	// Profile counts where compiled code hands back to the interpreter
	// (HandBacks), at some cost to every entry into compiled code.
	Profile bool

	unmetered bool        // benchmarks only: accept a module without fuel
	jitSkip   func() bool // tests: true makes compiled code hand back at once
	jitSync   bool        // tests: compile at the first bind, and wait for it
}

// Runtime is a RuntimePort over the sandboxed guest. It is safe for
// concurrent use; each call takes an instance of its own.
type Runtime struct {
	cfg      Config
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	pool     []*instance // idle, most recently used last

	mu        sync.Mutex
	idle      *sync.Cond // an instance came back to the pool, or was discarded
	sources   map[[32]byte][]byte
	order     [][32]byte
	closed    bool
	lazy      map[string]*lazyMachine // live machines left by lazy Yields
	jit       map[[32]byte]*jitCode   // compiled progs, by program hash
	jitOrder  [][32]byte
	jitStarts map[[32]byte]int              // runs started, of programs not compiled
	handBacks map[handBackKey]int           // Config.Profile's counts
	profiled  map[[32]byte]*compile.Program // the programs they name

	compiling sync.WaitGroup // compiles of progs under way
	calls     atomic.Int64   // calls running, each on an instance of its own
	jitEnters atomic.Int64   // entries into compiled code (tests)
}

// Pool says how many calls run now, each on an instance, and how many
// warm instances wait idle (for metrics).
func (r *Runtime) Pool() (busy, idle int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.calls.Load()), len(r.pool)
}

// lazyMachine is where a lazy Yield left an invocation: the instance that
// holds its machine, and the header its last checkpoint would have had.
type lazyMachine struct {
	in   *instance
	prev checkpoint.Header
}

var _ port.RuntimePort = (*Runtime)(nil)

// New compiles the guest and returns a Runtime with an empty pool.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.Fuel <= 0 {
		cfg.Fuel = DefaultFuel
	}
	module := cfg.Module
	if module == nil {
		module = guestWasm
	}
	rc := wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(cfg.MemoryLimitPages).WithCloseOnContextDone(false)
	if cache, err := CompilationCache(cfg.CacheDir); err != nil {
		return nil, err
	} else if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := &Runtime{cfg: cfg, rt: wazero.NewRuntimeWithConfig(ctx, rc), sources: make(map[[32]byte][]byte), jit: make(map[[32]byte]*jitCode), jitStarts: make(map[[32]byte]int)}
	r.idle = sync.NewCond(&r.mu)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.rt); err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasmvm: wasi: %w", err)
	}
	if err := r.hostModule(ctx); err != nil {
		r.rt.Close(ctx)
		return nil, err
	}
	if err := r.jitModule(ctx); err != nil {
		r.rt.Close(ctx)
		return nil, err
	}
	compiled, err := r.rt.CompileModule(ctx, module)
	if err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasmvm: compile guest: %w", err)
	}
	if _, ok := compiled.ExportedFunctions()["call"]; !ok {
		r.rt.Close(ctx)
		return nil, errExports
	}
	r.compiled = compiled
	return r, nil
}

// CompilationCache opens wazero's on-disk compilation cache: dir, or (for "")
// runehost/wazero under the user cache directory; "off" (or no cache
// directory at all) gives nil, compiling every time.
func CompilationCache(dir string) (wazero.CompilationCache, error) {
	if dir = CacheDirOf(dir); dir == "" {
		return nil, nil // off, or no cache directory: compile every time
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wasmvm: compilation cache %s: %w", dir, err)
	}
	return cache, nil
}

// CacheDirOf is the directory CompilationCache(dir) keeps the cache in: dir,
// or (for "") runehost/wazero under the user cache directory; "" for "off"
// or when there is no user cache directory.
func CacheDirOf(dir string) string {
	switch dir {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "runehost", "wazero")
	}
	return dir
}

// Close releases every instance and the compiled module.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.idle.Broadcast()
	r.mu.Unlock()
	r.compiling.Wait() // a compile's module belongs to rt
	return r.rt.Close(ctx)
}

// Warm instantiates instances until n are idle in the pool (at most the pool size).
func (r *Runtime) Warm(ctx context.Context, n int) error {
	var fresh []*instance
	r.mu.Lock()
	have := len(r.pool)
	r.mu.Unlock()
	for i := have; i < n && i < r.cfg.PoolSize; i++ {
		in, err := r.instantiate(ctx)
		if err != nil {
			return err
		}
		fresh = append(fresh, in)
	}
	for _, in := range fresh {
		r.put(in)
	}
	return nil
}

func (r *Runtime) remember(hash [32]byte, source []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sources[hash]; ok {
		return
	}
	if len(r.order) >= maxSources {
		delete(r.sources, r.order[0])
		r.order = r.order[1:]
	}
	r.sources[hash] = bytes.Clone(source)
	r.order = append(r.order, hash)
}

func (r *Runtime) source(hash [32]byte) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sources[hash]
}

// Load implements port.RuntimePort: the guest compiles the source (so the
// errors are the machine's own), and the runtime keeps it for later steps.
func (r *Runtime) Load(ctx context.Context, source []byte) (port.Info, error) {
	r.calls.Add(1)
	defer r.calls.Add(-1)
	hash := compile.HashSource(source)
	var info port.Info
	err := r.with(ctx, func(in *instance) error {
		var err error
		info, err = in.load(ctx, hash, source)
		return err
	})
	if err == nil {
		r.remember(hash, source)
	}
	return info, err
}

// Start implements port.RuntimePort.
func (r *Runtime) Start(ctx context.Context, input port.Input) ([]byte, error) {
	r.calls.Add(1)
	defer r.calls.Add(-1)
	hash := compile.HashSource(input.Source)
	var cp []byte
	err := r.with(ctx, func(in *instance) error {
		call, err := port.EncodeCall(port.OpStart, input)
		if err != nil {
			return err
		}
		v, err := in.request(ctx, "start", port.OpStart, call)
		if err != nil {
			return err
		}
		cp = v.([]byte)
		if err := checkStart(cp, hash, input); err != nil {
			return in.bad("start", err)
		}
		in.loaded[hash] = true
		return nil
	})
	if err == nil {
		r.remember(hash, input.Source)
	}
	return cp, err
}

// Step implements port.RuntimePort.
func (r *Runtime) Step(ctx context.Context, req port.Request) (*port.Result, error) {
	r.calls.Add(1)
	defer r.calls.Add(-1)
	if req.Checkpoint == nil {
		return r.continueLazy(ctx, req)
	}
	h, err := checkpoint.DecodeHeader(req.Checkpoint)
	if err != nil {
		return nil, err
	}
	hash := [32]byte(h.Program)
	source := r.source(hash)
	if source == nil {
		return nil, fmt.Errorf("%w: %x", port.ErrUnknownProgram, hash[:8])
	}
	if req.Slice == 0 {
		req.Slice = port.DefaultSlice
	}
	call, err := port.EncodeCall(port.OpStep, req)
	if err != nil {
		return nil, err
	}
	var res *port.Result
	err = r.with(ctx, func(in *instance) error {
		for attempt := 0; ; attempt++ {
			if !in.loaded[hash] {
				if _, err := in.load(ctx, hash, source); err != nil {
					return err
				}
			}
			v, err := in.request(ctx, "step", port.OpStep, call)
			if errors.Is(err, port.ErrUnknownProgram) && attempt == 0 {
				delete(in.loaded, hash) // the guest evicted it; load it again
				continue
			}
			if err != nil {
				return err
			}
			res = v.(*port.Result)
			if err := checkStep(h, req, res); err != nil {
				return in.bad("step", err)
			}
			r.noteLazy(in, h, res)
			return nil
		}
	})
	if errors.Is(err, ErrMemory) {
		return r.outOfMemory(req, h)
	}
	return res, err
}

// outOfMemory is the answer to a step whose machine outgrew the instance's
// memory: the prog fails with a limit error, charged the whole slice (how
// far it got is unknown: all its slices), and its checkpoint says so. The instance is gone;
// the next call gets a fresh one.
func (r *Runtime) outOfMemory(req port.Request, h *checkpoint.Header) (*port.Result, error) {
	e := &checkpoint.Error{Kind: machine.KindLimit, Msg: fmt.Sprintf("memory: the prog needs more than the sandbox's %d MiB", uint64(r.cfg.MemoryLimitPages)*65536>>20)}
	cp, err := checkpoint.Fail(req.Checkpoint, e, h.Used+req.Steps())
	if err != nil {
		return nil, fmt.Errorf("wasmvm: out of memory, and the checkpoint cannot say so: %w", err)
	}
	fh, err := checkpoint.DecodeHeader(cp)
	if err != nil {
		return nil, err
	}
	return &port.Result{Kind: port.Error, Used: fh.Used, Checkpoint: cp, Err: e}, nil
}

// noteLazy records where a lazy Yield left its invocation, or forgets it.
func (r *Runtime) noteLazy(in *instance, prev *checkpoint.Header, res *port.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.lazy[prev.Invocation]; old != nil {
		old.in.lives--
		delete(r.lazy, prev.Invocation)
	}
	if res.Checkpoint != nil {
		return
	}
	if r.lazy == nil {
		r.lazy = make(map[string]*lazyMachine)
	}
	h := *prev
	h.Used = res.Used
	r.lazy[prev.Invocation] = &lazyMachine{in: in, prev: h}
	in.lives++
}

// continueLazy steps the live machine of req.Invocation on the instance
// that holds it, waiting for that instance if another call has it (it is
// busy for one call; invocations share instances).
func (r *Runtime) continueLazy(ctx context.Context, req port.Request) (*port.Result, error) {
	r.mu.Lock()
	lm := r.lazy[req.Invocation]
	if lm != nil {
		delete(r.lazy, req.Invocation)
		lm.in.lives--
	}
	var in *instance
	for lm != nil && !lm.in.closed && !r.closed && ctx.Err() == nil {
		if i := slices.Index(r.pool, lm.in); i >= 0 {
			in = lm.in
			r.pool = slices.Delete(r.pool, i, i+1)
			break
		}
		r.idle.Wait()
	}
	r.mu.Unlock()
	if in == nil {
		return nil, fmt.Errorf("%w: invocation %q (resume from its last checkpoint)", port.ErrExpired, req.Invocation)
	}
	if req.Slice == 0 {
		req.Slice = port.DefaultSlice
	}
	call, err := port.EncodeCall(port.OpStep, req)
	if err != nil {
		r.put(in)
		return nil, err
	}
	var res *port.Result
	err = r.withInstance(ctx, in, func(in *instance) error {
		v, err := in.request(ctx, "step", port.OpStep, call)
		if err != nil {
			return err
		}
		res = v.(*port.Result)
		if err := checkStep(&lm.prev, req, res); err != nil {
			return in.bad("step", err)
		}
		r.noteLazy(in, &lm.prev, res)
		return nil
	})
	if errors.Is(err, ErrMemory) {
		// No checkpoint to fail: the host resumes from its last one, and the
		// same slices run out of memory again, this time with a checkpoint.
		return nil, fmt.Errorf("%w: invocation %q ran out of memory (%v)", port.ErrExpired, req.Invocation, err)
	}
	return res, err
}

// with runs f on a pooled instance, returning the instance to the pool
// unless the guest misbehaved.
func (r *Runtime) with(ctx context.Context, f func(*instance) error) error {
	in, err := r.get(ctx)
	if err != nil {
		return err
	}
	return r.withInstance(ctx, in, f)
}

func (r *Runtime) withInstance(ctx context.Context, in *instance, f func(*instance) error) error {
	err := f(in)
	var ge *GuestError
	if errors.As(err, &ge) {
		r.discard(in)
		return err
	}
	r.put(in)
	return err
}

// get takes an idle instance: the most recently used one that holds no
// other invocation's live machine, else the most recently used one. A
// driver stepping one invocation slice after slice keeps finding the
// instance that holds its machine live, and leaves others' alone.
func (r *Runtime) get(ctx context.Context) (*instance, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if n := len(r.pool); n > 0 {
		i := n - 1
		for j := n - 1; j >= 0; j-- {
			if r.pool[j].lives == 0 {
				i = j
				break
			}
		}
		in := r.pool[i]
		r.pool = slices.Delete(r.pool, i, i+1)
		r.mu.Unlock()
		return in, nil
	}
	r.mu.Unlock()
	return r.instantiate(ctx)
}

// put returns an instance to the pool. A full pool lets go of an instance
// that holds no live machine rather than one that does; one that has bound
// as many compiled progs as it may, or whose memory grew past a bound, is
// let go once it holds none.
func (r *Runtime) put(in *instance) {
	r.mu.Lock()
	defer r.idle.Broadcast()
	keep := !r.closed && (in.lives > 0 || !in.full && !r.bloated(in))
	if keep && len(r.pool) < r.cfg.PoolSize {
		r.pool = append(r.pool, in)
		r.mu.Unlock()
		return
	}
	if keep && in.lives > 0 {
		for i, idle := range r.pool {
			if idle.lives == 0 {
				r.pool[i] = in
				in = idle
				break
			}
		}
	}
	in.closed = true
	r.mu.Unlock()
	in.close(context.Background()) // closed, or the pool is full
}

// bloated says an instance's memory grew past an eighth of its limit. A
// wasm memory never shrinks, and what grew it stays in the guest's Go
// heap: a collection that begins inside a long call cannot finish its mark
// before the call returns (its workers run only when the guest yields), and
// all the call allocates meanwhile is marked live. A whole-slice run of a
// prog holding 40 KB of strings had a cycle count 91 MB live and set the
// next goal at 182 MB; the next such run grew the memory to 341 MiB; a
// third, in slices of 1000 steps, then had a cycle mark 300 MB and needed
// more than 512 MiB (gctrace; TestRunsLimitsOwn). Let go once it holds no
// live machine, such an instance lends no run another's heap: the next run
// starts afresh, and its limits are its own.
func (r *Runtime) bloated(in *instance) bool {
	return uint64(in.mem.Size()) > uint64(r.cfg.MemoryLimitPages)*65536/8
}

// discard closes an instance that misbehaved; its live machines are gone.
func (r *Runtime) discard(in *instance) {
	r.mu.Lock()
	in.closed = true
	r.idle.Broadcast()
	r.mu.Unlock()
	in.close(context.Background())
}
