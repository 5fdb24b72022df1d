// Package tool runs untrusted WASI command modules ("tools", wasm32-wasip1,
// any source language) in their own wazero instances: only the granted
// directories, confined and read-only unless write is granted; only the
// granted environment, never the host's own configuration; stdin from the
// caller; stdout and stderr captured up to a cap (the overflow counted, not
// kept); a memory limit; a wall-clock limit that stops computation too; and
// deterministic fuel through the sandbox's rewriter, so that the same tool,
// input and fuel report the same fuel used.
package tool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/runehost/runehost/wasmvm"
	"github.com/runehost/runehost/wasmvm/fuel"
)

// Defaults of a run.
const (
	DefaultFuel        = 1 << 32          // function entries and loop iterations
	DefaultMemoryPages = 1024             // 64 MiB
	DefaultTimeout     = 30 * time.Second // wall clock
	DefaultOutputCap   = 1 << 20          // bytes of stdout, and of stderr, kept
)

// MaxFuel is the most fuel a run may have (hours of computation; the
// wall clock stops it first).
const MaxFuel = 1 << 40

// Safepoint is how often, in fuel, a tool enters the host (about a
// millisecond of a tight loop): the most a stop on the clock waits.
const Safepoint = 1 << 20

// Mount makes a host directory visible to a tool at a guest path.
type Mount struct {
	Host  string
	Guest string // "/" when empty
	Write bool
}

// Config is one run of a tool.
type Config struct {
	Name      string   // argv[0]
	Args      []string // argv[1:]
	Env       []string // KEY=VALUE, the whole environment
	Stdin     []byte
	StdinFrom io.Reader // read instead of Stdin when set (the CLI passes its own)
	// StdinFile, if set, is the tool's stdin as it is: the read end of an
	// os.Pipe, which wazero polls like a real descriptor (a Go guest that
	// reads stdin in a goroutine deadlocks on a plain io.Reader, which
	// wazero reports as always blocking). StdinWriter, its write end, is
	// closed once the run's time is up (or it ended), so a tool waiting on
	// stdin sees its end.
	StdinFile   *os.File
	StdinWriter io.Closer
	Mounts      []Mount
	Fuel        uint64        // DefaultFuel when 0
	Timeout     time.Duration // DefaultTimeout when 0
	OutputCap   int           // DefaultOutputCap when 0
	// Stdout and Stderr, if set, also receive all of the tool's output as
	// it is written (the captured copy alone is capped). A writer with
	// CloseWithError (an io.PipeWriter) is closed with it once the run's
	// time is up, so a write blocked on a reader that went away returns.
	Stdout, Stderr io.Writer
	// StreamOnly keeps no copy of stdout: it only goes to Stdout (a
	// server's replies, read as they come).
	StreamOnly bool
	// Owner is who the run is for (a prog): a worker kept after a run
	// (Options.Keep) serves only runs of the same owner.
	Owner string

	keepNone bool   // a worker's: its host keeps the copies
	probe    string // tests only: a native attack in place of the tool
}

// layers names the worker's confinement that tests switch off, one at a
// time, to show that each of the others holds alone.
type layers struct{ FSCheck, Landlock, Seccomp bool }

// Stop says why a tool stopped.
type Stop string

// The stops.
const (
	Exited      Stop = "exited"  // it exited; see ExitCode
	OutOfFuel   Stop = "fuel"    // its fuel ran out
	OutOfMemory Stop = "memory"  // it hit the memory limit
	TimedOut    Stop = "timeout" // the wall clock ran out
	Trapped     Stop = "trap"    // it trapped otherwise
)

// Result is how a tool ended.
type Result struct {
	Stop     Stop
	ExitCode uint32 // when Exited; 0 is success
	FuelUsed uint64
	Stdout   []byte
	Stderr   []byte
	// StdoutDropped and StderrDropped count the bytes past the cap.
	StdoutDropped, StderrDropped int64
	Detail                       string // what the trap or limit was
}

// OK reports whether the tool exited 0.
func (r *Result) OK() bool { return r.Stop == Exited && r.ExitCode == 0 }

// Errors of a run that could not start.
var (
	ErrNotTool = errors.New("not a WASI command module")
	ErrConfig  = errors.New("bad tool configuration")
	ErrHostEnv = errors.New("the host's own configuration is never given to a tool")
)

// Error is a run that could not start: what was wrong, and the sentinel
// (or the cause) it wraps.
type Error struct {
	What string // the part: "fuel", "env", "mount DIR", "compile", ...
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "tool: " + e.What + ": " + e.Err.Error()
	}
	return "tool: " + e.What + ": " + e.Msg
}

// Unwrap returns the sentinel or the cause.
func (e *Error) Unwrap() error { return e.Err }

// Runner compiles and runs tools. By default each run is in a confined
// worker process of its own (worker.go); the worker runs the tool with a
// Runner of its own in-process. Compiled tools are kept, by the hash of
// their bytes, and cached on disk by wazero. It is safe for concurrent use.
type Runner struct {
	rt          wazero.Runtime
	memoryPages uint32
	unmetered   bool // benchmarks only: run tools without fuel
	noInterrupt bool // benchmarks only: no clock on computation
	plainFuel   bool // benchmarks only: the plain check, without safepoints
	premetered  bool // a worker's: its host metered the module

	mu       sync.Mutex
	compiled map[[32]byte]*compiled

	workers *pool // nil: tools run in this process
}

// compiled is a tool compiled, or being compiled under mu.
type compiled struct {
	mu sync.Mutex
	c  wazero.CompiledModule
}

// Options configure a Runner.
type Options struct {
	CacheDir    string // as for wasmvm.CompilationCache
	MemoryPages uint32 // per tool; DefaultMemoryPages when 0
	// Warm is how many workers are kept started for each tool recently
	// run, its module compiled in them, ready for its next run (up to
	// WarmTools tools); 0 starts each worker when its run comes, as a
	// one-off command should.
	Warm int
	// Keep is how many workers are kept, confined as their run left them,
	// for KeepFor after it, each for the next run of the same tool with
	// the same mounts, modes, environment and owner; 0 keeps none, as a
	// one-off command should. A kept worker's next run costs about what a
	// run in this process does; a warm one's first costs a fresh process.
	Keep int
	// WithoutLandlock runs tools where the kernel has no Landlock, the
	// worker then confined by everything but it: the operator's explicit
	// choice (--allow-tools-without-landlock). Without it such a kernel
	// gets ErrNoLandlock.
	WithoutLandlock bool
}

// NewRunner returns a Runner whose tools run in confined workers with at
// most memoryPages of memory (DefaultMemoryPages when 0), none kept warm.
// cacheDir is as for wasmvm.CompilationCache.
func NewRunner(ctx context.Context, cacheDir string, memoryPages uint32) (*Runner, error) {
	return New(ctx, Options{CacheDir: cacheDir, MemoryPages: memoryPages})
}

// New returns a Runner whose tools run in confined worker processes.
func New(ctx context.Context, opts Options) (*Runner, error) {
	if opts.MemoryPages == 0 {
		opts.MemoryPages = DefaultMemoryPages
	}
	p, err := newPool(opts)
	if err != nil {
		return nil, err
	}
	return &Runner{memoryPages: opts.MemoryPages, workers: p}, nil
}

// newRunner returns a Runner that runs tools in this process: the
// worker's own, and the benchmarks' baseline.
func newRunner(ctx context.Context, cacheDir string, memoryPages uint32, closeOnDone bool) (*Runner, error) {
	if memoryPages == 0 {
		memoryPages = DefaultMemoryPages
	}
	// wazero's own stop on the clock checks a context at every loop header
	// and costs 9x on a tool (docs/BENCHMARKS.md): the clock stops a
	// computing tool through its fuel counter instead (interrupt), and a
	// tool blocked in a read or write at once.
	rc := wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(memoryPages).WithCloseOnContextDone(closeOnDone)
	cache, err := wasmvm.CompilationCache(cacheDir)
	if err != nil {
		return nil, err
	}
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, &Error{What: "wasi", Err: err}
	}
	return &Runner{rt: rt, memoryPages: memoryPages, compiled: map[[32]byte]*compiled{}}, nil
}

// Close releases the runner's compiled tools, and stops its idle workers.
func (r *Runner) Close(ctx context.Context) error {
	if r.workers != nil {
		r.workers.close()
		return nil
	}
	return r.rt.Close(ctx)
}

// compile meters and compiles a tool in this process, or returns it
// compiled already.
func (r *Runner) compile(ctx context.Context, module []byte) (wazero.CompiledModule, error) {
	key := sha256.Sum256(module)
	r.mu.Lock()
	e, ok := r.compiled[key]
	if !ok {
		e = &compiled{}
		r.compiled[key] = e
	}
	r.mu.Unlock()
	// One compile per module at a time: wazero keys compiled code by the
	// module's hash, so closing a second copy of it would free the first's.
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c != nil {
		return e.c, nil
	}
	metered := module
	if !r.premetered {
		m, err := meter(module, r.plainFuel)
		if err != nil {
			return nil, err
		}
		metered = m
	}
	if r.unmetered {
		metered = module
	}
	c, err := r.rt.CompileModule(ctx, metered)
	if err != nil {
		return nil, &Error{What: "compile", Err: err}
	}
	if _, ok := c.ExportedFunctions()["_start"]; !ok {
		c.Close(ctx)
		return nil, &Error{What: "compile", Msg: "it exports no _start: " + ErrNotTool.Error(), Err: ErrNotTool}
	}
	e.c = c
	return c, nil
}

// meter rewrites a tool to meter itself: the tools' fuel, with safepoints
// (plain: the Rune guest's check, for benchmarks).
func meter(module []byte, plain bool) ([]byte, error) {
	opts := fuel.Options{Safepoint: Safepoint}
	if plain {
		opts = fuel.Options{}
	}
	metered, err := fuel.InjectWith(module, opts)
	if err != nil {
		return nil, &Error{What: "meter", Err: err}
	}
	return metered, nil
}

// Run runs a tool to its end. The error is for a run that could not start
// (a bad module, a mount that is not a directory); how the tool itself
// ended, limits included, is in the Result.
func (r *Runner) Run(ctx context.Context, module []byte, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if r.workers != nil {
		return r.workers.run(ctx, module, cfg)
	}
	c, err := r.compile(ctx, module)
	if err != nil {
		return nil, err
	}
	fsc, release, err := openMounts(cfg.Mounts)
	if err != nil {
		return nil, err
	}
	defer release()
	return r.runMounted(ctx, c, cfg, fsc)
}

// check fills in a run's defaults and refuses what no run may have.
func (cfg *Config) check() error {
	if cfg.Fuel == 0 {
		cfg.Fuel = DefaultFuel
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.OutputCap == 0 {
		cfg.OutputCap = DefaultOutputCap
	}
	if cfg.Name == "" {
		cfg.Name = "tool"
	}
	if cfg.Fuel > MaxFuel {
		return &Error{What: "fuel", Msg: fmt.Sprintf("%d is more than the most a run may have, %d", cfg.Fuel, uint64(MaxFuel)), Err: ErrConfig}
	}
	for _, kv := range cfg.Env {
		if err := CheckEnv(kv); err != nil {
			return err
		}
	}
	return nil
}

// openMounts opens a run's mounts; release closes them.
func openMounts(mounts []Mount) (wazero.FSConfig, func(), error) {
	return openMountsChecked(mounts, true)
}

// openMountsChecked opens a run's mounts, each checked against the mount
// table if checkTree (a confined worker cannot read it: its host did).
func openMountsChecked(mounts []Mount, checkTree bool) (wazero.FSConfig, func(), error) {
	fsc := wazero.NewFSConfig()
	var opened []func()
	release := func() {
		for _, f := range opened {
			f()
		}
	}
	for _, m := range mounts {
		guest := m.Guest
		if guest == "" {
			guest = "/"
		}
		cfs, rel, err := newMount(m.Host, m.Write, checkTree)
		if err != nil {
			release()
			return nil, nil, &Error{What: "mount " + m.Host, Err: err}
		}
		opened = append(opened, rel)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(cfs, guest)
	}
	return fsc, release, nil
}

// runMounted runs a compiled tool in this process with its mounts open.
func (r *Runner) runMounted(ctx context.Context, compiled wazero.CompiledModule, cfg Config, fsc wazero.FSConfig) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	stdin := stoppable(ctx, cfg)
	stdout := &capped{max: cfg.OutputCap, also: cfg.Stdout, ctx: ctx}
	if cfg.StreamOnly || cfg.keepNone {
		stdout.max = 0
	}
	stderr := &capped{max: cfg.OutputCap, also: cfg.Stderr, ctx: ctx}
	if cfg.keepNone {
		stderr.max = 0
	}
	for _, w := range []io.Writer{cfg.Stdout, cfg.Stderr} {
		if c, ok := w.(interface{ CloseWithError(error) error }); ok {
			defer context.AfterFunc(ctx, func() { c.CloseWithError(errStopped) })()
		}
	}
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions().
		WithArgs(append([]string{cfg.Name}, cfg.Args...)...).
		WithStdin(stdin).WithStdout(stdout).WithStderr(stderr).
		WithFSConfig(fsc)
	for _, kv := range cfg.Env {
		k, v, _ := cutEnv(kv)
		mc = mc.WithEnv(k, v)
	}
	mod, err := r.rt.InstantiateModule(ctx, compiled, mc)
	if err != nil {
		return nil, &Error{What: "instantiate", Err: err}
	}
	defer mod.Close(context.Background())
	g, ok := mod.ExportedGlobal(fuel.ExportName).(api.MutableGlobal)
	if !ok && !r.unmetered {
		return nil, &Error{What: "meter", Msg: "the metered module has no fuel global", Err: ErrConfig}
	}
	if ok {
		g.Set(cfg.Fuel)
	}
	var clock *interrupt
	if ok && !r.noInterrupt {
		clock = interruptOnDone(ctx, g)
	}
	_, callErr := mod.ExportedFunction("_start").Call(ctx)
	left := int64(cfg.Fuel)
	if clock.stop() {
		left = clock.left // the count before the clock zeroed it
	} else if ok {
		left = int64(g.Get())
	}
	if callErr == nil && ctx.Err() != nil {
		callErr = ctx.Err() // it exited on the error its read or write got
	}
	res := &Result{Stop: Exited, Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(), StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped}
	res.FuelUsed = cfg.Fuel - uint64(max(left, 0))
	var exit *sys.ExitError
	switch {
	case callErr == nil:
	case ctx.Err() != nil:
		res.Stop, res.Detail = TimedOut, fmt.Sprintf("still running after %s", cfg.Timeout)
		if errors.Is(ctx.Err(), context.Canceled) {
			res.Detail = "cancelled"
		}
	case left < 0:
		res.Stop, res.FuelUsed, res.Detail = OutOfFuel, cfg.Fuel, fmt.Sprintf("ran out of its %d fuel", cfg.Fuel)
	case errors.As(callErr, &exit):
		res.ExitCode = exit.ExitCode()
		if res.ExitCode != 0 && memorySize(mod) >= (r.memoryPages-1)*65536 {
			res.Stop, res.Detail = OutOfMemory, fmt.Sprintf("exited %d at its memory limit of %d MiB", res.ExitCode, r.memoryPages/16)
		}
	default:
		res.Stop, res.Detail = Trapped, callErr.Error()
		if memorySize(mod) >= (r.memoryPages-1)*65536 {
			res.Stop = OutOfMemory
		}
	}
	return res, nil
}

// memorySize is a tool's memory in bytes, 0 for a module without one
// (wazero then gives a nil *MemoryInstance inside a non-nil api.Memory).
func memorySize(mod api.Module) uint32 {
	m := mod.Memory()
	if m == nil || reflect.ValueOf(m).IsNil() {
		return 0
	}
	return m.Size()
}

// interrupt stops a computing tool when its context is done: the injected
// fuel counter doubles as the interrupt. wazero's compiled code reads the
// counter from the instance's memory at every function entry and loop
// header (wazevo's getWasmGlobalValue loads it again in any block with more
// than one predecessor), so a zero the host stores traps at the next check.
// The tool's own read-modify-write can overwrite a store, so the host
// stores zero in bursts, every 250µs, until the call returns. Go cannot
// preempt wasm code, so a tool that never calls the host would keep the
// timer (and the garbage collector, which waits for every goroutine) from
// running at all: the tools' metering enters the host every Safepoint units
// (fuel.Options). wazero's WithCloseOnContextDone checks a flag at every
// loop header instead and costs 9x (docs/BENCHMARKS.md).
type interrupt struct {
	cancel func() bool
	done   chan struct{} // closed when the call returned
	ended  chan struct{} // closed when the zeroing stopped
	fired  bool
	left   int64 // the count when the clock first zeroed it
}

func interruptOnDone(ctx context.Context, g api.MutableGlobal) *interrupt {
	it := &interrupt{done: make(chan struct{}), ended: make(chan struct{})}
	it.cancel = context.AfterFunc(ctx, func() {
		defer close(it.ended)
		it.fired, it.left = true, int64(g.Get())
		tick := time.NewTicker(250 * time.Microsecond)
		defer tick.Stop()
		for {
			for range 64 { // longer than a loop round: one store outlives its stale write
				g.Set(0)
			}
			select {
			case <-it.done:
				return
			case <-tick.C:
			}
		}
	})
	return it
}

// stop ends the zeroing once the call returned, and reports whether the
// clock stopped the tool (then left is its count before).
func (it *interrupt) stop() bool {
	if it == nil || it.cancel() {
		return false
	}
	close(it.done)
	<-it.ended
	return it.fired
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// errStopped is what a tool's reads and writes get once its time is up.
var errStopped = errors.New("the tool's time is up")

// stoppable returns the tool's stdin, which fails once ctx is done, even
// in the middle of a read that blocks.
func stoppable(ctx context.Context, cfg Config) io.Reader {
	if cfg.StdinFile != nil {
		if cfg.StdinWriter != nil {
			context.AfterFunc(ctx, func() { cfg.StdinWriter.Close() })
		}
		return cfg.StdinFile
	}
	if cfg.StdinFrom == nil {
		return &ctxReader{ctx: ctx, r: bytes.NewReader(cfg.Stdin)}
	}
	pr, pw := io.Pipe()
	go func() { _, err := io.Copy(pw, cfg.StdinFrom); pw.CloseWithError(err) }()
	context.AfterFunc(ctx, func() { pr.CloseWithError(errStopped) })
	return pr
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, errStopped
	}
	return c.r.Read(p)
}

// capped keeps the first max bytes written to it and counts the rest;
// once ctx is done, writes fail.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int64
	also    io.Writer
	ctx     context.Context
}

func (c *capped) Write(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, errStopped
	}
	keep := min(len(p), c.max-c.buf.Len())
	if keep > 0 {
		c.buf.Write(p[:keep])
	}
	if c.also != nil {
		c.also.Write(p)
	}
	c.dropped += int64(len(p) - keep)
	return len(p), nil
}
