// worker_wire.go holds what the host and a worker say on the control
// socket: CBOR messages, each framed by its length, bounded on both sides;
// a run's three descriptors go with it (SCM_RIGHTS).

package tool

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/fxamacker/cbor/v2"
	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/internal/fsallow"
)

// prepareMsg is a worker's first message: the tool to compile.
type prepareMsg struct {
	Module      []byte
	CacheDir    string // resolved: the worker has no environment to find one
	MemoryPages uint32
	Off         layers // tests only: the worker honours it only in a test binary
	CPU         uint64 // tests only: each run's CPU seconds, if not 0
}

// readyMsg answers prepareMsg.
type readyMsg struct {
	Err *wireErr
}

// toWorker is each message after prepareMsg: a run, or the stop of one.
type toWorker struct {
	Run  *runMsg
	Stop *stopMsg
}

// runMsg is a run, its stdin, stdout and stderr sent with it.
type runMsg struct {
	Seq     uint64 // the worker's runs, counted from 1
	Name    string
	Args    []string
	Env     []string
	Mounts  []Mount
	Fuel    uint64
	Timeout time.Duration
	Probe   string // tests only: an attack run natively in the confined worker

	fds []int           // the worker's: stdin, stdout, stderr
	ctx context.Context // the worker's: cancelled by its stop
}

// stopMsg is the caller's cancel of run Seq, passed on.
type stopMsg struct {
	Seq uint64
	Why byte // cancelled or deadline
}

func runMsgOf(cfg Config, seq uint64) runMsg {
	return runMsg{Seq: seq, Name: cfg.Name, Args: cfg.Args, Env: cfg.Env, Mounts: cfg.Mounts, Fuel: cfg.Fuel, Timeout: cfg.Timeout, Probe: cfg.probe}
}

// resultMsg is how the run ended; Err is a run that could not start.
// EndStdin, alone, comes before it: the run's time is up or it was
// stopped, and a tool waiting on stdin is to see its end (a read blocked
// in the kernel ends only so).
// Begun, alone, comes first: the worker is confined and its mounts open,
// and the tool is about to run (the host then gives it its stdin).
type resultMsg struct {
	Begun    bool
	EndStdin bool
	Stop     Stop
	ExitCode uint32
	FuelUsed uint64
	Detail   string
	Err      *wireErr
	Retire   bool // the worker serves no other run
}

// wireErr is an *Error across the socket, its sentinel by name.
type wireErr struct {
	What, Msg, Sentinel string
}

var sentinels = map[string]error{"config": ErrConfig, "not-tool": ErrNotTool, "host-env": ErrHostEnv, "worker": ErrWorker, "no-landlock": ErrNoLandlock,
	"not-ordinary": fsallow.ErrNotOrdinary}

func wireErrOf(err error) *wireErr {
	var e *Error
	if !errors.As(err, &e) {
		return &wireErr{What: "worker", Msg: err.Error()}
	}
	out := &wireErr{What: e.What, Msg: e.Msg}
	for name, s := range sentinels {
		if errors.Is(e.Err, s) {
			out.Sentinel = name
		}
	}
	if out.Msg == "" && e.Err != nil {
		out.Msg = e.Err.Error()
	}
	return out
}

// Error is the message alone: a worker's answer that a run could not
// begin, before error() makes it an *Error.
func (w *wireErr) Error() string { return cut(w.What) + ": " + cut(w.Msg) }

func (w *wireErr) error() error {
	what, msg := cut(w.What), w.Msg
	if len(msg) > maxDetail {
		msg = msg[:maxDetail]
	}
	e := &Error{What: what, Msg: msg, Err: sentinels[w.Sentinel]}
	if e.Err == nil {
		e.Err = errors.New(msg)
	}
	return e
}

// Frame bounds: a worker reads a module as large as a tool may be; the host
// reads answers of a few fields.
const (
	maxToWorker   = 1 << 30
	maxFromWorker = 64 << 10
)

var decMode, _ = cbor.DecOptions{MaxArrayElements: 1 << 16, MaxMapPairs: 64, MaxNestedLevels: 8}.DecMode()

func writeFrame(w io.Writer, v any) error {
	b, err := frame(v)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

func frame(v any) ([]byte, error) {
	b, err := cbor.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), nil
}

func readFrame(r io.Reader, v any, limit int) error {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(head[:])
	if int64(n) > int64(limit) {
		return fmt.Errorf("a message of %d bytes, over %d", n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return decMode.Unmarshal(b, v)
}

// send writes a message to the worker.
func (w *worker) send(v any) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	// A worker that does not read is not waited for past the bound.
	w.ctl.SetWriteDeadline(time.Now().Add(sendBound))
	defer w.ctl.SetWriteDeadline(time.Time{})
	return writeFrame(w.ctl, v)
}

// sendRun writes a run to the worker, its descriptors with it.
func (w *worker) sendRun(m runMsg, files [3]*os.File) error {
	b, err := frame(toWorker{Run: &m})
	if err != nil {
		return err
	}
	rc, err := w.ctl.SyscallConn()
	if err != nil {
		return err
	}
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	w.ctl.SetWriteDeadline(time.Now().Add(sendBound))
	defer w.ctl.SetWriteDeadline(time.Time{})
	rights := unix.UnixRights(int(files[0].Fd()), int(files[1].Fd()), int(files[2].Fd()))
	var n int
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), b, rights, nil, 0)
		return serr != unix.EAGAIN
	})
	runtime.KeepAlive(files)
	if err == nil {
		err = serr
	}
	if err == nil && n < len(b) {
		_, err = w.ctl.Write(b[n:])
	}
	return err
}

// ctlReader is a worker's end of the control socket: it reads frames, and
// keeps the descriptors that came with them.
type ctlReader struct {
	rc  syscall.RawConn
	oob []byte
	fds []int
}

func newCtlReader(ctl *os.File) (*ctlReader, error) {
	rc, err := ctl.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &ctlReader{rc: rc, oob: make([]byte, unix.CmsgSpace(4*4))}, nil
}

func (c *ctlReader) Read(p []byte) (int, error) {
	var n, oobn int
	var err error
	if rerr := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, err = unix.Recvmsg(int(fd), p, c.oob, recvFlags)
		return err != unix.EAGAIN
	}); rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, err
	}
	if oobn > 0 {
		msgs, _ := unix.ParseSocketControlMessage(c.oob[:oobn])
		for i := range msgs {
			fds, _ := unix.ParseUnixRights(&msgs[i])
			c.fds = append(c.fds, fds...)
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// take returns the n descriptors received first.
func (c *ctlReader) take(n int) ([]int, bool) {
	if len(c.fds) < n {
		return nil, false
	}
	fds := c.fds[:n:n]
	c.fds = c.fds[n:]
	return fds, true
}

// receive reads the worker's answer, until ctx is done.
func (w *worker) receive(ctx context.Context, v any) error {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { w.ctl.SetReadDeadline(time.Unix(1, 0)); close(fired) })
	err := readFrame(w.ctl, v, maxFromWorker)
	if !stop() {
		// The deadline was set as the answer came: the next receive
		// must not find it.
		<-fired
		w.ctl.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("it ended without an answer")
	}
	return err
}
