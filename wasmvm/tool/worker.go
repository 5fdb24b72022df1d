// worker.go holds the host's side of the workers: each tool runs in a child
// process, the runehost binary re-executed (workerArg0), confined before any
// byte of the tool runs (worker_main.go, confine_linux.go). The host keeps
// the secrets, the store and the grants; a worker gets the module, its
// mounts and its fuel, and hands back the exit, the fuel used and its output.

package tool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/wasmvm"
)

// workerArg0 is a worker's argv[0]: a binary that imports this package,
// started with it and nothing else, serves one tool run instead of its main.
const workerArg0 = "runehost-tool-worker"

// WarmTools bounds the tools a Runner keeps warm workers for.
const WarmTools = 8

// backstop is how long past its clock a worker may take to answer before
// it is killed: its own clock stops the tool; this stops the worker.
const backstop = 5 * time.Second

// ErrNoLandlock is a kernel without Landlock, where tools run only with the
// operator's explicit choice (Options.WithoutLandlock).
var ErrNoLandlock = errors.New("this kernel has no Landlock, so a tool's worker cannot be confined to its mounts; " +
	"tools are refused unless the operator accepts the risk (--allow-tools-without-landlock)")

// ErrWorker is a worker that failed: it could not start, or answered what
// a worker does not.
var ErrWorker = errors.New("the tool's worker failed")

// pool starts workers and keeps some warm: started, the tool compiled,
// waiting for a run. A worker serves one run and exits.
type pool struct {
	opts Options
	exe  string
	off  layers // tests only: confinement switched off

	mu      sync.Mutex
	warm    map[[32]byte]*warmSet
	metered map[[32]byte][]byte // tools metered once, by the hash of their bytes
	closed  bool
}

// warmSet is the warm workers of one tool.
type warmSet struct {
	module  []byte
	ready   []*worker
	filling int
	used    time.Time
}

func newPool(opts Options) (*pool, error) {
	if err := confinable(opts.WithoutLandlock); err != nil {
		return nil, err
	}
	return &pool{opts: opts, exe: "/proc/self/exe", warm: map[[32]byte]*warmSet{}, metered: map[[32]byte][]byte{}}, nil
}

// close stops the warm workers.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, s := range p.warm {
		for _, w := range s.ready {
			w.kill()
		}
	}
	p.warm = map[[32]byte]*warmSet{}
}

// take returns a worker with the module compiled: a warm one, or one
// started now; and starts its successor when the pool keeps them warm.
func (p *pool) take(ctx context.Context, key [32]byte, module []byte) (*worker, error) {
	var w *worker
	p.mu.Lock()
	if s := p.warm[key]; s != nil {
		s.used = time.Now()
		for len(s.ready) > 0 && w == nil {
			w, s.ready = s.ready[0], s.ready[1:]
			if !w.alive() {
				w = nil
			}
		}
	}
	p.mu.Unlock()
	if w != nil {
		return w, nil
	}
	return p.start(ctx, key, module)
}

// refill starts warm workers for a tool until it has opts.Warm, in the
// background, and forgets the least recently used tool past WarmTools.
func (p *pool) refill(key [32]byte, module []byte) {
	if p.opts.Warm <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	s := p.warm[key]
	if s == nil {
		s = &warmSet{module: module}
		p.warm[key] = s
		if len(p.warm) > WarmTools {
			p.evictLocked(key)
		}
	}
	s.used = time.Now()
	for ; len(s.ready)+s.filling < p.opts.Warm; s.filling++ {
		go func() {
			w, err := p.start(context.Background(), key, s.module)
			p.mu.Lock()
			defer p.mu.Unlock()
			s.filling--
			switch {
			case err != nil:
			case p.closed || p.warm[key] != s:
				w.kill()
			default:
				s.ready = append(s.ready, w)
			}
		}()
	}
}

// evictLocked drops the warm workers of the tool used longest ago.
func (p *pool) evictLocked(keep [32]byte) {
	var oldest [32]byte
	var when time.Time
	for k, s := range p.warm {
		if k != keep && (when.IsZero() || s.used.Before(when)) {
			oldest, when = k, s.used
		}
	}
	for _, w := range p.warm[oldest].ready {
		w.kill()
	}
	delete(p.warm, oldest)
}

// worker is one child process and the host's ends of its descriptors.
type worker struct {
	cmd    *exec.Cmd
	ctl    *os.File // the control socket: frames both ways
	stdin  *os.File // the tool's stdin, write end
	stdout *os.File // the tool's stdout, read end
	stderr *os.File // the tool's stderr, read end
	diag   *tail    // the worker's own stderr (the Go runtime's last words)
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// meter returns the module metered, once per tool: a worker compiles it
// as it is (its fuel rewriting is most of the cost of a worker's start).
func (p *pool) meter(key [32]byte, module []byte) ([]byte, error) {
	p.mu.Lock()
	m, ok := p.metered[key]
	p.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := meter(module, false)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.metered) >= 2*WarmTools {
		clear(p.metered)
	}
	p.metered[key] = m
	p.mu.Unlock()
	return m, nil
}

// start starts a worker and compiles the module in it.
func (p *pool) start(ctx context.Context, key [32]byte, module []byte) (*worker, error) {
	metered, err := p.meter(key, module)
	if err != nil {
		return nil, err
	}
	w, err := p.spawn()
	if err != nil {
		return nil, err
	}
	cache := wasmvm.CacheDirOf(p.opts.CacheDir)
	if cache == "" {
		cache = "off"
	}
	if err := w.send(prepareMsg{Module: metered, CacheDir: cache, MemoryPages: p.opts.MemoryPages, Off: p.off}); err != nil {
		return nil, w.failed("sending the tool", err)
	}
	var ready readyMsg
	if err := w.receive(ctx, &ready); err != nil {
		return nil, w.failed("starting", err)
	}
	if ready.Err != nil {
		w.kill()
		return nil, ready.Err.error()
	}
	return w, nil
}

func (p *pool) spawn() (*worker, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &Error{What: "worker", Err: err}
	}
	unix.SetNonblock(fds[0], true)
	ctl, ctlChild := os.NewFile(uintptr(fds[0]), "worker control"), os.NewFile(uintptr(fds[1]), "control")
	var mine, theirs []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func(childReads bool) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		if childReads {
			mine, theirs = append(mine, w), append(theirs, r)
			return w, nil
		}
		mine, theirs = append(mine, r), append(theirs, w)
		return r, nil
	}
	w := &worker{ctl: ctl, exited: make(chan struct{}), diag: &tail{max: 4 << 10}}
	mine, theirs = append(mine, ctl), append(theirs, ctlChild)
	var diagR *os.File
	for _, f := range []struct {
		to    **os.File
		reads bool
	}{{&w.stdin, true}, {&w.stdout, false}, {&w.stderr, false}, {&diagR, false}} {
		if *f.to, err = pipe(f.reads); err != nil {
			closeAll(mine)
			closeAll(theirs)
			return nil, &Error{What: "worker", Err: err}
		}
	}
	// theirs: control, stdin, stdout, stderr, diagnostics.
	w.cmd = &exec.Cmd{
		Path: p.exe, Args: []string{workerArg0},
		Env: []string{}, // not nil: nil would hand it ours
		Dir: "/",
		// The worker's own stderr is for the Go runtime's last words; the
		// tool's goes to descriptor 4.
		Stdin: theirs[1], Stdout: theirs[2], Stderr: theirs[4],
		ExtraFiles:  []*os.File{theirs[0], theirs[3]},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}, // a terminal's ^C is the host's to pass on
	}
	err = w.cmd.Start()
	closeAll(theirs)
	if err != nil {
		closeAll(mine)
		return nil, &Error{What: "worker", Msg: "it could not start: " + err.Error(), Err: ErrWorker}
	}
	diagDone := make(chan struct{})
	go func() { io.Copy(w.diag, diagR); diagR.Close(); close(diagDone) }()
	go func() {
		err := w.cmd.Wait()
		<-diagDone
		w.err = err
		close(w.exited)
	}()
	return w, nil
}

// alive reports whether the worker has not exited.
func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill ends the worker and releases the host's ends.
func (w *worker) kill() {
	w.cmd.Process.Kill()
	<-w.exited
	for _, f := range []*os.File{w.ctl, w.stdin, w.stdout, w.stderr} {
		f.Close()
	}
}

// failed kills the worker and says what it was doing, with the Go
// runtime's last words when it died.
func (w *worker) failed(doing string, err error) error {
	w.kill()
	msg := doing + ": " + err.Error()
	if last := w.diag.lastLine(); last != "" {
		msg += " (" + last + ")"
	}
	return &Error{What: "worker", Msg: msg, Err: ErrWorker}
}

// run runs a tool in a worker to its end.
func (p *pool) run(ctx context.Context, module []byte, cfg Config) (*Result, error) {
	key := sha256.Sum256(module) // once a run: 2-3 MB of a Go tool is a millisecond and more
	w, err := p.take(ctx, key, module)
	if err != nil && ctx.Err() != nil {
		// Stopped before the tool began, as a run in process would be.
		res := &Result{Stop: TimedOut, Detail: "cancelled"}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.Detail = fmt.Sprintf("still running after %s", cfg.Timeout)
		}
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	defer w.kill()
	// Its successor starts once this run is over: beside it, the two
	// shared the cores and the run took half as long again (59 ms p50
	// against 34, BENCHMARKS.md).
	defer p.refill(key, module)
	if err := w.send(runMsgOf(cfg)); err != nil {
		return nil, w.failed("sending the run", err)
	}
	// The host keeps the copies of the output, and stops taking it a
	// little after the worker's own clock would have stopped the tool.
	outCtx, outCancel := context.WithTimeout(ctx, cfg.Timeout+time.Second)
	defer outCancel()
	if cfg.StdinWriter != nil {
		stopIn := context.AfterFunc(outCtx, func() { cfg.StdinWriter.Close() })
		defer stopIn()
	}
	stdout := &capped{max: cfg.OutputCap, also: cfg.Stdout, ctx: outCtx}
	if cfg.StreamOnly {
		stdout.max = 0
	}
	stderr := &capped{max: cfg.OutputCap, also: cfg.Stderr, ctx: outCtx}
	for _, wr := range []io.Writer{cfg.Stdout, cfg.Stderr} {
		if c, ok := wr.(interface{ CloseWithError(error) error }); ok {
			defer context.AfterFunc(outCtx, func() { c.CloseWithError(errStopped) })()
		}
	}
	var copies sync.WaitGroup
	for _, c := range []struct {
		to   io.Writer
		from *os.File
	}{{stdout, w.stdout}, {stderr, w.stderr}} {
		copies.Go(func() { io.Copy(c.to, c.from); c.from.Close() })
	}
	go func() {
		var in io.Reader = bytes.NewReader(cfg.Stdin)
		switch {
		case cfg.StdinFile != nil:
			in = cfg.StdinFile
		case cfg.StdinFrom != nil:
			in = cfg.StdinFrom
		}
		io.Copy(w.stdin, in)
		w.stdin.Close()
	}()
	// The caller's cancel is passed on; the worker's answer is waited for
	// until its clock and the backstop ran out.
	stopCancel := context.AfterFunc(ctx, func() {
		why := cancelled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = deadline
		}
		w.ctl.Write([]byte{why})
	})
	defer stopCancel()
	waitCtx, waitCancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout+backstop)
	defer waitCancel()
	if ctx.Done() != nil {
		// A cancelled run is answered at once, or the backstop ends it.
		stop := context.AfterFunc(ctx, func() {
			time.AfterFunc(backstop, waitCancel)
		})
		defer stop()
	}
	var res resultMsg
	rerr := w.receive(waitCtx, &res)
	if rerr != nil {
		w.cmd.Process.Kill()
	}
	<-w.exited
	copies.Wait()
	if rerr != nil {
		return w.died(cfg, stdout, stderr, waitCtx.Err() != nil), nil
	}
	if res.Err != nil {
		return nil, res.Err.error()
	}
	out, err := res.result(cfg)
	if err != nil {
		return nil, w.failed("answering", err)
	}
	out.Stdout, out.Stderr, out.StdoutDropped, out.StderrDropped = stdout.buf.Bytes(), stderr.buf.Bytes(), stdout.dropped, stderr.dropped
	return out, nil
}

// died is the result of a worker that gave no answer: killed on the
// backstop, or dead by itself (a limit of its own, or a system call its
// filter refused).
func (w *worker) died(cfg Config, stdout, stderr *capped, killed bool) *Result {
	res := &Result{Stop: Trapped, FuelUsed: cfg.Fuel, Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(),
		StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped}
	how := "exited"
	if w.err != nil {
		how = w.err.Error()
	}
	res.Detail = "the worker died (" + how + ")"
	if killed {
		res.Stop, res.Detail = TimedOut, fmt.Sprintf("still running %s after its %s; the worker was killed", backstop, cfg.Timeout)
	}
	last := w.diag.lastLine()
	if strings.Contains(last, "out of memory") {
		res.Stop = OutOfMemory
	}
	if last != "" {
		res.Detail += ": " + last
	}
	return res
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = slices.Clone(t.b[len(t.b)-t.max:])
	}
	return len(p), nil
}

// lastLine is the first line of the last paragraph written (a Go panic's
// headline), valid UTF-8, at most 200 bytes.
func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime:") {
			s = l
			break
		}
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return strings.ToValidUTF8(s, "?")
}

// The reasons a run is stopped by its caller, as the worker is told.
const (
	cancelled byte = 'c'
	deadline  byte = 'd'
)

// result checks a worker's answer: it ran untrusted code, so nothing it
// says is taken on trust beyond what a tool's result may say.
func (m *resultMsg) result(cfg Config) (*Result, error) {
	switch m.Stop {
	case Exited, OutOfFuel, OutOfMemory, TimedOut, Trapped:
	default:
		return nil, fmt.Errorf("a stop %q", cut(m.Stop))
	}
	if m.FuelUsed > cfg.Fuel {
		return nil, fmt.Errorf("%d fuel used of %d", m.FuelUsed, cfg.Fuel)
	}
	if m.Stop != Exited && m.Stop != OutOfMemory && m.ExitCode != 0 {
		return nil, fmt.Errorf("an exit code %d with stop %s", m.ExitCode, m.Stop)
	}
	if len(m.Detail) > maxDetail || !utf8.ValidString(m.Detail) {
		return nil, errors.New("a detail longer than a detail may be, or not UTF-8")
	}
	return &Result{Stop: m.Stop, ExitCode: m.ExitCode, FuelUsed: m.FuelUsed, Detail: m.Detail}, nil
}

// maxDetail bounds a result's detail from a worker.
const maxDetail = 4 << 10

func cut[S ~string](s S) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(string(s), "?")
}
