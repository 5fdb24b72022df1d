// worker_main.go holds the worker's side: a binary that imports this package
// and is started as workerArg0 serves one tool run on its descriptors (0-2
// the tool's stdin, stdout and the worker's own stderr, 3 the control
// socket, 4 the tool's stderr), confined before the tool runs, then exits.

package tool

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"

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
	toolErr := os.NewFile(4, "stderr")
	unix.SetNonblock(0, true) // polled by wazero, as a server's stdin must be
	stdin := os.NewFile(0, "stdin")
	answer := func(m resultMsg) int {
		if err := writeFrame(ctl, m); err != nil {
			return 1
		}
		return 0
	}
	fail := func(err error) int { return answer(resultMsg{Err: wireErrOf(err)}) }
	if err := limit(); err != nil {
		return fail(&Error{What: "confine", Msg: err.Error(), Err: ErrWorker})
	}
	var pm prepareMsg
	if err := readFrame(ctl, &pm, maxToWorker); err != nil {
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
	off := pm.Off
	if !testing.Testing() {
		off = layers{}
	}
	if err != nil {
		writeFrame(ctl, readyMsg{Err: wireErrOf(err)})
		return 1
	}
	// Compiling made garbage: collect it now, while the worker waits, and
	// let the run go without the collector, up to a bound (a worker serves
	// one run and exits).
	runtime.GC()
	debug.FreeOSMemory()
	debug.SetMemoryLimit(int64(r.memoryPages)*65536 + 256<<20)
	debug.SetGCPercent(-1)
	if err := writeFrame(ctl, readyMsg{}); err != nil {
		return 1
	}
	var rm runMsg
	if err := readFrame(ctl, &rm, maxToWorker); err != nil {
		fmt.Fprintln(os.Stderr, "worker: reading the run:", err)
		return 1
	}
	if !testing.Testing() {
		rm.Probe = ""
	}
	cfg := Config{Name: rm.Name, Args: rm.Args, Env: rm.Env, Mounts: rm.Mounts, Fuel: rm.Fuel, Timeout: rm.Timeout,
		StdinFile: stdin, Stdout: os.Stdout, Stderr: toolErr, keepNone: true}
	if err := cfg.check(); err != nil {
		return fail(err)
	}
	if err := limitRun(r.memoryPages, cfg.Timeout.Seconds()); err != nil {
		return fail(&Error{What: "confine", Msg: err.Error(), Err: ErrWorker})
	}
	if off.FSCheck && testFSCheckOff != nil {
		defer testFSCheckOff()()
	}
	fsc, release, err := openMounts(cfg.Mounts)
	if err != nil {
		return fail(err)
	}
	defer release()
	// Landlock first: it reaches every thread through libpsx, whose
	// signals and /proc reads the filter then refuses.
	if err := confine(cfg.Mounts, off); err != nil {
		return fail(&Error{What: "confine", Msg: err.Error(), Err: ErrWorker})
	}
	if err := filter(off); err != nil {
		return fail(&Error{What: "confine", Msg: err.Error(), Err: ErrWorker})
	}
	// The host's word, or its going away, stops the run.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	why := make(chan byte, 1)
	go func() {
		b := []byte{cancelled}
		ctl.Read(b)
		why <- b[0]
		cancel()
	}()
	if rm.Probe != "" && testProbe != nil {
		return answer(resultMsg{Stop: Exited, Detail: testProbe(rm.Probe)})
	}
	res, err := r.runMounted(runCtx, c, cfg, fsc)
	if err != nil {
		return fail(err)
	}
	select {
	case b := <-why:
		if b == deadline && res.Stop == TimedOut {
			res.Detail = fmt.Sprintf("still running after %s", cfg.Timeout)
		}
	default:
	}
	return answer(resultMsg{Stop: res.Stop, ExitCode: res.ExitCode, FuelUsed: res.FuelUsed, Detail: res.Detail})
}
