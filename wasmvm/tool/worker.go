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

	"github.com/runehost/runehost/internal/fsallow"
	"github.com/runehost/runehost/wasmvm"
)

// workerArg0 is a worker's argv[0]: a binary that imports this package,
// started with it and nothing else, serves one tool run instead of its main.
const workerArg0 = "runehost-tool-worker"

// WarmTools bounds the tools a Runner keeps warm workers for.
const WarmTools = 8

// KeepFor is how long a worker kept after its run waits for another
// (Options.Keep); maxRuns bounds the runs one worker serves.
const (
	KeepFor = time.Minute
	maxRuns = 1000
)

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

// worker is one child process and the host's end of its control socket.
type worker struct {
	cmd    *exec.Cmd
	ctl    *os.File // the control socket: frames both ways
	sendMu sync.Mutex
	diag   *tail // the worker's own stderr (the Go runtime's last words)
	exited chan struct{}
	err    error // how it exited, once exited is closed

	seq      uint64 // runs sent to it
	reusable bool   // its last run ended as a run may before another
	kind     string // while kept: what it was confined for
	keptAt   time.Time
	expire   *time.Timer
	gen      uint64 // its keepings, counted: an expiry is only its own keeping's
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
	if err := w.send(prepareMsg{Module: metered, CacheDir: cache, MemoryPages: p.opts.MemoryPages, Off: p.off, CPU: p.cpu}); err != nil {
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
	diagR, diagW, err := os.Pipe()
	if err != nil {
		ctl.Close()
		ctlChild.Close()
		return nil, &Error{What: "worker", Err: err}
	}
	w := &worker{ctl: ctl, exited: make(chan struct{}), diag: &tail{max: 4 << 10}}
	w.cmd = &exec.Cmd{
		Path: p.exe, Args: []string{workerArg0},
		Env: []string{}, // not nil: nil would hand it ours
		Dir: "/",
		// Its stdin and stdout are /dev/null: a run's come with the run.
		// Its stderr is for the Go runtime's last words.
		Stderr:      diagW,
		ExtraFiles:  []*os.File{ctlChild},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}, // a terminal's ^C is the host's to pass on
	}
	err = w.cmd.Start()
	ctlChild.Close()
	diagW.Close()
	if err != nil {
		ctl.Close()
		diagR.Close()
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

// kill ends the worker and releases the host's end.
func (w *worker) kill() {
	w.cmd.Process.Kill()
	<-w.exited
	w.ctl.Close()
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

// run runs a tool in a worker to its end: a worker kept from a run of the
// same confinement, a warm one, or one started now.
func (p *pool) run(ctx context.Context, module []byte, cfg Config) (*Result, error) {
	key := sha256.Sum256(module) // once a run: 2-3 MB of a Go tool is a millisecond and more
	// The host reads the mount table for every run: a kept worker's
	// Landlock keeps it from reading it itself.
	for _, m := range cfg.Mounts {
		if p.off.FSCheck {
			break // tests only
		}
		if err := fsallow.CheckTree(m.Host); err != nil {
			return nil, &Error{What: "mount " + m.Host, Err: err}
		}
	}
	kind := p.kindOf(key, cfg)
	var closeIn func() // the caller's StdinWriter, closed once
	if cfg.StdinWriter != nil {
		closeIn = sync.OnceFunc(func() { cfg.StdinWriter.Close() })
		defer closeIn()
	}
	fresh := false
	for {
		w, kept, err := p.take(ctx, key, kind, module, fresh)
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
		res, begun, err := p.runIn(ctx, w, cfg, closeIn)
		if !kept {
			// Its successor starts once this run is over: beside it, the
			// two shared the cores and the run took half as long again
			// (59 ms p50 against 34, BENCHMARKS.md).
			p.refill(key, module)
		}
		if kept && !begun {
			// A kept worker that did not begin the run (a mount replaced
			// since its Landlock was set, or it died since): nothing of the
			// run was taken, and a new worker says why, or runs it. The
			// others kept for it were confined alike.
			w.kill()
			p.dropKind(kind)
			fresh = true
			continue
		}
		var werr *wireErr
		if errors.As(err, &werr) {
			err = werr.error()
		}
		if err == nil && w.reusable {
			p.keep(w, kind)
		} else {
			w.kill()
		}
		return res, err
	}
}

// sendBound is how long a send to a worker may wait for it to read.
const sendBound = backstop

// runIn runs a tool in a worker. begun says the worker began the run:
// before that, nothing of the run's input was taken. An error that is a
// *wireErr is the worker's: it could not begin the run.
func (p *pool) runIn(ctx context.Context, w *worker, cfg Config, closeIn func()) (_ *Result, begun bool, _ error) {
	w.reusable = false
	pipes, theirs, err := newRunPipes()
	if err != nil {
		return nil, false, &Error{What: "worker", Err: err}
	}
	defer pipes.close()
	w.seq++
	err = w.sendRun(runMsgOf(cfg, w.seq), theirs)
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		return nil, false, w.failed("sending the run", err)
	}
	// The host keeps the copies of the output, and stops taking it a
	// little after the worker's own clock would have stopped the tool.
	outCtx, outCancel := context.WithTimeout(ctx, cfg.Timeout+time.Second)
	defer outCancel()
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
	}{{stdout, pipes[1]}, {stderr, pipes[2]}} {
		// Its end closed once copied: a tool still writing after its
		// time is up gets EPIPE, not a wait for the backstop.
		copies.Go(func() { io.Copy(c.to, c.from); c.from.Close() })
	}
	// The caller's cancel is passed on; the worker's answer is waited for
	// until its clock and the backstop ran out.
	seq := w.seq
	stopCancel := context.AfterFunc(ctx, func() {
		why := cancelled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = deadline
		}
		w.send(toWorker{Stop: &stopMsg{Seq: seq, Why: why}})
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
	if rerr == nil && res.Begun {
		begun = true
		if closeIn != nil {
			// Closed once the run's time is up, and when it is over.
			context.AfterFunc(outCtx, closeIn)
		}
		go func() {
			var in io.Reader = bytes.NewReader(cfg.Stdin)
			switch {
			case cfg.StdinFile != nil:
				in = cfg.StdinFile
			case cfg.StdinFrom != nil:
				in = cfg.StdinFrom
			}
			io.Copy(pipes[0], in)
			pipes[0].Close()
		}()
		res = resultMsg{}
		rerr = w.receive(waitCtx, &res)
	}
	if rerr == nil && res.EndStdin && begun {
		pipes[0].Close()
		res = resultMsg{}
		rerr = w.receive(waitCtx, &res)
	}
	switch {
	case rerr != nil:
	case res.Begun || res.EndStdin:
		rerr = errors.New("it said what it had said already, or out of turn")
	case res.Err == nil && !begun:
		rerr = errors.New("it answered a run it had not begun")
	}
	if rerr != nil {
		w.cmd.Process.Kill()
		<-w.exited
		pipes.close()
		copies.Wait()
		return w.died(cfg, stdout, stderr, waitCtx.Err() != nil), begun, nil
	}
	if res.Err != nil {
		return nil, begun, res.Err
	}
	// The worker closed its ends of the output as it answered; one that
	// keeps them open is not waited for past the run's time.
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-outCtx.Done():
		pipes.close()
		<-copied
	}
	if outCtx.Err() != nil || waitCtx.Err() != nil {
		res.Retire = true
	}
	out, err := res.result(cfg)
	if err != nil {
		return nil, true, w.failed("answering", err)
	}
	w.reusable = !res.Retire
	out.Stdout, out.Stderr, out.StdoutDropped, out.StderrDropped = stdout.buf.Bytes(), stderr.buf.Bytes(), stdout.dropped, stderr.dropped
	return out, true, nil
}

// runPipes are the host's ends of a run's stdin, stdout and stderr.
type runPipes [3]*os.File

// newRunPipes makes a run's pipes: the host's ends, and the worker's.
func newRunPipes() (mine runPipes, theirs [3]*os.File, err error) {
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			mine.close()
			for _, f := range theirs {
				if f != nil {
					f.Close()
				}
			}
			return mine, theirs, err
		}
		if i == 0 {
			mine[i], theirs[i] = w, r
		} else {
			mine[i], theirs[i] = r, w
		}
	}
	return mine, theirs, nil
}

func (rp *runPipes) close() {
	for _, f := range rp {
		if f != nil {
			f.Close()
		}
	}
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
