// worker_wire.go holds what the host and a worker say on the control
// socket: CBOR messages, each framed by its length, bounded on both sides.

package tool

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/internal/fsallow"
)

// prepareMsg starts a worker's run: the tool to compile.
type prepareMsg struct {
	Module      []byte
	CacheDir    string // resolved: the worker has no environment to find one
	MemoryPages uint32
	Off         layers // tests only: the worker honours it only in a test binary
}

// readyMsg answers prepareMsg.
type readyMsg struct {
	Err *wireErr
}

// runMsg is the run itself, once the tool is compiled.
type runMsg struct {
	Name    string
	Args    []string
	Env     []string
	Mounts  []Mount
	Fuel    uint64
	Timeout time.Duration
	Probe   string // tests only: an attack run natively in the confined worker
}

func runMsgOf(cfg Config) runMsg {
	return runMsg{Name: cfg.Name, Args: cfg.Args, Env: cfg.Env, Mounts: cfg.Mounts, Fuel: cfg.Fuel, Timeout: cfg.Timeout, Probe: cfg.probe}
}

// resultMsg is how the run ended; Err is a run that could not start.
type resultMsg struct {
	Stop     Stop
	ExitCode uint32
	FuelUsed uint64
	Detail   string
	Err      *wireErr
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
	b, err := cbor.Marshal(v)
	if err != nil {
		return err
	}
	head := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	_, err = w.Write(append(head, b...))
	return err
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
func (w *worker) send(v any) error { return writeFrame(w.ctl, v) }

// receive reads the worker's answer, until ctx is done.
func (w *worker) receive(ctx context.Context, v any) error {
	stop := context.AfterFunc(ctx, func() { w.ctl.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	err := readFrame(w.ctl, v, maxFromWorker)
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("it ended without an answer")
	}
	return err
}
