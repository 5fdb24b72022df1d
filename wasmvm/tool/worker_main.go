// worker_main.go holds the worker's side: a binary that imports this package
// and is started as workerArg0 compiles one tool, then serves its runs (0
// and 1 are /dev/null, 2 the worker's own stderr, 3 the control socket; each
// run's stdin, stdout and stderr come with it on the socket), confined
// before the first run's tool runs and kept so for every later one.

package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == workerArg0 {
		os.Exit(serveWorker())
	}
}

// testProbe, set by this package's tests alone, is a native attack the
// worker runs in place of the tool once confined: what a tool that broke
// out of wasm could do.
var testProbe func(probe string) string

// testFSCheckOff switches the file-system check off in a worker, for the
// tests that show the other layers hold without it.
var testFSCheckOff func() func()

func serveWorker() int {
	// A write to a reader that went away fails instead of killing us.
	signal.Ignore(syscall.SIGPIPE)
	closeInherited()
	unix.SetNonblock(3, true)
	ctl := os.NewFile(3, "control")
	in, err := newCtlReader(ctl)
	if err == nil {
		err = limit()
	}
	if err != nil {
		writeFrame(ctl, readyMsg{Err: wireErrOf(&Error{What: "confine", Msg: err.Error(), Err: ErrWorker})})
		return 1
	}
	var pm prepareMsg
	if err := readFrame(in, &pm, maxToWorker); err != nil {
		fmt.Fprintln(os.Stderr, "worker: reading the tool:", err)
		return 1
	}
	ctx := context.Background()
	r, err := newRunner(ctx, pm.CacheDir, pm.MemoryPages, false)
	var c wazero.CompiledModule
	if err == nil {
		r.premetered = true
		c, err = r.compile(ctx, pm.Module)
	}
	pm.Module = nil
	if err != nil {
		writeFrame(ctl, readyMsg{Err: wireErrOf(err)})
		return 1
	}
	s := &served{r: r, c: c, ctl: ctl, off: pm.Off, cpu: pm.CPU}
	if !testing.Testing() {
		s.off, s.cpu = layers{}, 0
	}
	// Compiling made garbage: collect it now, while the worker waits, and
	// let the first run go without the collector, up to a bound.
	runtime.GC()
	debug.FreeOSMemory()
	debug.SetMemoryLimit(int64(r.memoryPages)*65536 + 256<<20)
	debug.SetGCPercent(-1)
	if err := writeFrame(ctl, readyMsg{}); err != nil {
		return 1
	}
	for rm := range s.runs(in) {
		res := s.serve(rm)
		s.stop(rm.Seq, context.Canceled, false)
		for _, fd := range rm.fds {
			unix.Close(fd) // its stdout and stderr end here, which the host waits for
		}
		if err := s.answer(res); err != nil || res.Retire {
			return 0
		}
		if s.served == 1 {
			debug.SetGCPercent(100) // later runs collect as the host would
		}
	}
	return 0
}

// served is a worker's state across its runs.
type served struct {
	ctl      *os.File
	ctlMu    sync.Mutex
	r        *Runner
	c        wazero.CompiledModule
	off      layers // tests only
	cpu      uint64 // tests only: each run's CPU seconds
	confined bool   // by the first run: later ones are confined alike
	served   int

	mu     sync.Mutex
	seq    uint64 // the run under way
	cancel context.CancelCauseFunc
}

// answer writes a message to the host.
func (s *served) answer(m resultMsg) error {
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	return writeFrame(s.ctl, m)
}

// errHostGone is a run's cancel when the host closed the control socket.
var errHostGone = fmt.Errorf("the host went away")

// runs reads the host's messages: each run, with its three descriptors and
// a context its stop cancels. The channel closes when the host goes away.
func (s *served) runs(in *ctlReader) <-chan *runMsg {
	ch := make(chan *runMsg)
	go func() {
		defer close(ch)
		for {
			var m toWorker
			if err := readFrame(in, &m, maxToWorker); err != nil {
				s.stop(0, errHostGone, true)
				if !errors.Is(err, io.EOF) {
					fmt.Fprintln(os.Stderr, "worker: reading the host:", err)
				}
				return
			}
			switch {
			case m.Run != nil:
				fds, ok := in.take(3)
				if !ok {
					fmt.Fprintln(os.Stderr, "worker: a run without its descriptors")
					return
				}
				rm := m.Run
				rm.fds = fds
				var ctx context.Context
				ctx, cancel := context.WithCancelCause(context.Background())
				s.mu.Lock()
				s.seq, s.cancel = rm.Seq, cancel
				s.mu.Unlock()
				rm.ctx = ctx
				ch <- rm
			case m.Stop != nil:
				why := errCancelled
				if m.Stop.Why == deadline {
					why = errDeadline
				}
				s.stop(m.Stop.Seq, why, false)
			}
		}
	}()
	return ch
}

// stop cancels the run numbered seq (any run, if all) with why.
func (s *served) stop(seq uint64, why error, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil && (all || s.seq == seq) {
		s.cancel(why)
	}
}

var (
	errCancelled = fmt.Errorf("cancelled")
	errDeadline  = fmt.Errorf("past its deadline")
)

// serve runs one run to its answer: the first confines the worker.
func (s *served) serve(rm *runMsg) resultMsg {
	s.served++
	fail := func(err error) resultMsg { return resultMsg{Err: wireErrOf(err)} }
	confineErr := func(err error) resultMsg {
		return resultMsg{Err: wireErrOf(&Error{What: "confine", Msg: err.Error(), Err: ErrWorker}), Retire: true}
	}
	unix.SetNonblock(rm.fds[0], true) // polled by wazero, as a server's stdin must be
	stdin, stdout, stderr := os.NewFile(uintptr(rm.fds[0]), "stdin"), os.NewFile(uintptr(rm.fds[1]), "stdout"), os.NewFile(uintptr(rm.fds[2]), "stderr")
	rm.fds = nil
	defer stdin.Close()
	defer stdout.Close()
	defer stderr.Close()
	if !testing.Testing() {
		rm.Probe = ""
	}
	cfg := Config{Name: rm.Name, Args: rm.Args, Env: rm.Env, Mounts: rm.Mounts, Fuel: rm.Fuel, Timeout: rm.Timeout,
		StdinFile: stdin, Stdout: stdout, Stderr: stderr, keepNone: true,
	}
	if err := cfg.check(); err != nil {
		return fail(err)
	}
	cpu := uint64(2*cfg.Timeout.Seconds()) + 10
	if s.cpu > 0 {
		cpu = s.cpu
	}
	last, err := limitCPU(cpu)
	if err != nil {
		return confineErr(err)
	}
	first := !s.confined
	if first {
		if err := limitSpace(s.r.memoryPages); err != nil {
			return confineErr(err)
		}
		if s.off.FSCheck && testFSCheckOff != nil {
			testFSCheckOff() // for the worker's life: it serves only runs with this switch
		}
	}
	// Once confined, the mount table is out of reach (Landlock): the host
	// checked it for this run.
	fsc, release, err := openMountsChecked(cfg.Mounts, first)
	if err != nil {
		return fail(err)
	}
	defer release()
	if first {
		// Landlock first: it reaches every thread through libpsx, whose
		// signals and /proc reads the filter then refuses.
		if err := confine(cfg.Mounts, s.off); err != nil {
			return confineErr(err)
		}
		if err := filter(s.off); err != nil {
			return confineErr(err)
		}
		s.confined = true
	}
	// Begun: from here the host gives the tool its stdin.
	if err := s.answer(resultMsg{Begun: true}); err != nil {
		return resultMsg{Err: wireErrOf(err), Retire: true}
	}
	if rm.Probe != "" && testProbe != nil {
		return resultMsg{Stop: Exited, Detail: testProbe(rm.Probe), Retire: true}
	}
	// Once the run's time is up or it is stopped, the host ends its stdin:
	// a tool blocked reading it is woken so, whatever the host reads it from.
	ctx, cancel := context.WithTimeout(rm.ctx, cfg.Timeout)
	defer cancel()
	ended := make(chan struct{})
	endStdin := context.AfterFunc(ctx, func() {
		defer close(ended)
		s.answer(resultMsg{EndStdin: true})
	})
	res, err := s.r.runMounted(ctx, s.c, cfg, fsc)
	stopped := !endStdin() // the host was asked to end its stdin
	if stopped {
		<-ended // before the answer
	}
	if err == nil && stopped && res.Stop == Exited {
		// It exited on the end of its stdin, which came because it was
		// stopped: as a run in process ends then (its context is done).
		res.Stop, res.ExitCode, res.Detail = TimedOut, 0, fmt.Sprintf("still running after %s", cfg.Timeout)
		if errors.Is(ctx.Err(), context.Canceled) {
			res.Detail = "cancelled"
		}
	}
	if err != nil {
		return fail(err)
	}
	if res.Stop == TimedOut && context.Cause(ctx) == errDeadline {
		res.Detail = fmt.Sprintf("still running after %s", cfg.Timeout)
	}
	return resultMsg{Stop: res.Stop, ExitCode: res.ExitCode, FuelUsed: res.FuelUsed, Detail: cutDetail(res.Detail),
		Retire: last || res.Stop == OutOfMemory}
}

// cutDetail bounds a detail as the host accepts it: a trap's is wazero's
// message with the whole wasm stack, which a deep one makes long.
func cutDetail(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= maxDetail {
		return s
	}
	const more = "\n\t... (cut)"
	s = s[:maxDetail-len(more)]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + more
}
