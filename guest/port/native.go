// native.go implements RuntimePort natively, in the host's own process.

package port

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

// Errors a RuntimePort returns for bad requests.
var (
	ErrUnknownProgram = errors.New("program not loaded")
	ErrReply          = errors.New("bad reply")
	ErrFault          = errors.New("machine fault")
)

// maxPrograms bounds the compiled-program cache.
const maxPrograms = 256

// Native runs machines in this process. It is safe for concurrent use.
type Native struct {
	// OnAct, when set, is offered every act as the machine reaches it, and
	// may answer it at once (ok) with an encoded reply; the machine then goes
	// on within the same slice. Otherwise the step ends with an Act result.
	// The answer must not depend on anything but the act: the slicing of a
	// run never changes which acts reach OnAct, or in which order.
	OnAct func(tag string, args []byte, seq uint64) (reply []byte, ok bool)

	// NoReuse makes every Step decode its checkpoint. By default a Step
	// given exactly the checkpoint the previous Step of an invocation
	// returned continues that machine, live, instead of decoding it: the
	// state is the same by construction, and slicing a long computation
	// then costs an encode per slice, not an encode and a decode.
	NoReuse bool

	mu    sync.Mutex
	progs map[[32]byte]*compile.Program
	order [][32]byte // load order, for eviction
	live  map[string]*live
	lives []string // invocations in live, oldest first
}

// live is a machine kept after a Step, with the checkpoint it was written as.
type live struct {
	prog *compile.Program
	cp   []byte // a private copy; nil when left by a lazy Yield
	m    *machine.Machine
	ctx  []byte
}

// maxLive bounds the machines kept live.
const maxLive = 64

// takeLazy returns the live machine a lazy Yield of invocation left.
func (n *Native) takeLazy(invocation string) *live {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.live[invocation]
	if l == nil || l.cp != nil {
		return nil
	}
	n.forget(invocation)
	return l
}

// forget drops invocation's live machine and its place in the order (the
// order must not keep a name twice: keeping one invocation live would then
// evict another's machine). n.mu is held.
func (n *Native) forget(invocation string) {
	delete(n.live, invocation)
	if i := slices.Index(n.lives, invocation); i >= 0 {
		n.lives = slices.Delete(n.lives, i, i+1)
	}
}

// take returns the live machine for exactly this checkpoint, if there is
// one. It compares bytes rather than decoding: there are few live machines,
// and checkpoints of different invocations differ within their first bytes.
func (n *Native) take(p *compile.Program, cp []byte) (*live, string) {
	if n.NoReuse {
		return nil, ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for inv, l := range n.live {
		if l.prog == p && len(l.cp) == len(cp) && bytes.Equal(l.cp, cp) {
			n.forget(inv) // the machine is about to change
			return l, inv
		}
	}
	return nil, ""
}

func (n *Native) keep(invocation string, l *live) {
	if n.NoReuse && l.cp != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.live == nil {
		n.live = make(map[string]*live)
	}
	if _, ok := n.live[invocation]; !ok {
		if len(n.lives) >= maxLive {
			delete(n.live, n.lives[0])
			n.lives = n.lives[1:]
		}
		n.lives = append(n.lives, invocation)
	}
	n.live[invocation] = l
}

// NewNative returns a native RuntimePort.
func NewNative() *Native { return &Native{progs: make(map[[32]byte]*compile.Program)} }

var _ RuntimePort = (*Native)(nil)

func (n *Native) load(source []byte) (*compile.Program, error) {
	h := compile.HashSource(source)
	n.mu.Lock()
	p, ok := n.progs[h]
	n.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compile.Compile(source)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.progs[h]; !ok {
		if len(n.order) >= maxPrograms {
			delete(n.progs, n.order[0])
			n.order = n.order[1:]
		}
		n.progs[h] = p
		n.order = append(n.order, h)
	}
	return p, nil
}

// Load implements RuntimePort.
func (n *Native) Load(_ context.Context, source []byte) (Info, error) {
	p, err := n.load(source)
	if err != nil {
		return Info{}, err
	}
	return Info{Hash: p.Hash, ActTags: append([]string(nil), p.ActTags...)}, nil
}

// Start implements RuntimePort.
func (n *Native) Start(_ context.Context, in Input) ([]byte, error) {
	p, err := n.load(in.Source)
	if err != nil {
		return nil, err
	}
	input, err := decodeOptional(in.Input, "input")
	if err != nil {
		return nil, err
	}
	state, err := decodeOptional(in.State, "state")
	if err != nil {
		return nil, err
	}
	m, err := machine.New(p, machine.Config{Input: input, State: state, Limit: in.Limit, Seed: in.Seed})
	if err != nil {
		return nil, err
	}
	b, _, err := encodeMachine(m, in.Invocation, in.Context)
	return b, err
}

// verifyEncoding, when set (by this package's tests), has every checkpoint
// encoded both ways, directly and through Snapshot, and is called with any
// difference. A panic would be taken for a machine fault.
var verifyEncoding func(diff string)

// encodeMachine writes m's checkpoint.
func encodeMachine(m *machine.Machine, invocation string, appCtx []byte) ([]byte, *checkpoint.Header, error) {
	b, h, err := m.Checkpoint(invocation, appCtx)
	if verifyEncoding != nil {
		var want []byte
		cp, serr := m.Snapshot()
		if serr == nil {
			cp.Header.Invocation, cp.Header.Context = invocation, appCtx
			want, serr = checkpoint.Encode(cp)
		}
		if (err == nil) != (serr == nil) || !bytes.Equal(b, want) {
			verifyEncoding(fmt.Sprintf("machine.Checkpoint differs from Encode(Snapshot): %v / %v\n%x\n%x", err, serr, b, want))
		}
	}
	return b, h, err
}

func decodeOptional(b []byte, what string) (any, error) {
	if len(b) == 0 { // none, as on the wire, where empty and nil are one
		return nil, nil
	}
	v, err := checkpoint.DecodeData(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// Step implements RuntimePort.
func (n *Native) Step(_ context.Context, req Request) (res *Result, err error) {
	if req.Checkpoint == nil {
		return n.step(nil, req)
	}
	h, err := checkpoint.DecodeHeader(req.Checkpoint)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	p := n.progs[[32]byte(h.Program)]
	n.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("%w: %x", ErrUnknownProgram, h.Program[:8])
	}
	return n.step(p, req)
}

// StepProgram advances a checkpoint of p by one slice. It is the whole of
// Step once the program is known, shared by every RuntimePort.
func StepProgram(p *compile.Program, req Request) (res *Result, err error) {
	return (&Native{NoReuse: true}).step(p, req)
}

func (n *Native) step(p *compile.Program, req Request) (res *Result, err error) {
	defer func() {
		// A backstop: validation should make this unreachable.
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("%w: %v", ErrFault, r)
		}
	}()
	onAct := n.OnAct
	var m *machine.Machine
	var invocation string
	var appCtx []byte
	if req.Checkpoint == nil {
		l := n.takeLazy(req.Invocation)
		if l == nil {
			return nil, fmt.Errorf("%w: no live machine for invocation %q", ErrExpired, req.Invocation)
		}
		p, m, invocation, appCtx = l.prog, l.m, req.Invocation, l.ctx
	} else if l, inv := n.take(p, req.Checkpoint); l != nil {
		m, invocation, appCtx = l.m, inv, l.ctx
	} else {
		sc := scratches.Get().(*checkpoint.Scratch)
		cp, err := checkpoint.DecodeInto(req.Checkpoint, checkpoint.Expect{Semantics: compile.Version, Program: p.Hash[:]}, sc)
		if err == nil {
			m, err = machine.Restore(p, cp) // keeps nothing of the scratch
		}
		scratches.Put(sc)
		if err != nil {
			return nil, err
		}
		invocation, appCtx = cp.Header.Invocation, cp.Header.Context
	}
	if len(req.Reply) == 0 {
		req.Reply = nil // an empty reply is none, as on the wire
	}
	switch m.Status() {
	case checkpoint.Acting, checkpoint.Awaiting:
		if !m.Settled() {
			// The suspension is not reported until its steps are paid.
			if req.Reply != nil {
				return nil, fmt.Errorf("%w: the machine has not yet reported its suspension", ErrReply)
			}
			break
		}
		if req.Reply == nil {
			return nil, fmt.Errorf("%w: the machine is suspended at %s and needs a reply", ErrReply, m.Status())
		}
		r, err := checkpoint.DecodeReply(req.Reply)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrReply, err)
		}
		if err := m.Resume(r); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrReply, err)
		}
	default:
		if req.Reply != nil {
			return nil, fmt.Errorf("%w: the machine is %s and takes no reply", ErrReply, m.Status())
		}
	}
	slice := req.Slice
	if slice == 0 {
		slice = DefaultSlice
	}
	m.SetClock(req.Clock)
	var emits []machine.Emit
	if req.Slices > 1 {
		emits, err = runSlices(m, slice, req.Steps(), onAct)
	} else {
		emits, err = runSlice(m, slice, onAct)
	}
	if err != nil {
		return nil, err
	}
	if req.Lazy && (m.Status() == checkpoint.Runnable || !m.Settled()) {
		if len(emits) == 0 {
			// A lazy Yield: no checkpoint; the machine stays live.
			n.keep(invocation, &live{prog: p, m: m, ctx: appCtx})
			return &Result{Kind: Yield, Used: m.Used()}, nil
		}
		// A slice that emitted carries its checkpoint even when lazy: the
		// host logs each event with the state that produced it, once.
	}
	b, h, err := encodeMachine(m, invocation, appCtx)
	var large *checkpoint.SizeError
	if errors.As(err, &large) {
		// What the machine holds cannot be kept: the prog fails with a limit
		// error of its own, its values let go, and that is its checkpoint.
		m.Abandon(&checkpoint.Error{Kind: machine.KindLimit, Msg: large.Error()})
		b, h, err = encodeMachine(m, invocation, appCtx)
	}
	if err != nil {
		return nil, err
	}
	res = resultOf(m, h, b, emits)
	if res.Kind != Done && res.Kind != Error {
		n.keep(invocation, &live{prog: p, cp: bytes.Clone(b), m: m, ctx: appCtx})
	}
	return res, nil
}

// runSlice runs one slice, offering the acts reached on the way to onAct.
func runSlice(m *machine.Machine, slice uint64, onAct func(string, []byte, uint64) ([]byte, bool)) ([]machine.Emit, error) {
	end := m.Used() + slice
	if end < m.Used() {
		end = ^uint64(0)
	}
	m.Run(slice)
	var emits []machine.Emit
	for onAct != nil && m.Status() == checkpoint.Acting && m.Settled() && m.Used() < end {
		emits = append(emits, m.TakeEmits()...)
		ok, err := offer(m, onAct)
		if err != nil || !ok {
			return emits, err
		}
		m.Run(end - m.Used())
	}
	return append(emits, m.TakeEmits()...), nil
}

// runSlices runs the slices of steps steps, each of slice, as runSlice
// one after another would while each ended Runnable and emitted nothing,
// in one machine run where nothing happens at a boundary.
func runSlices(m *machine.Machine, slice, steps uint64, onAct func(string, []byte, uint64) ([]byte, bool)) ([]machine.Emit, error) {
	from := m.Used()
	end := from + steps
	if end < from {
		end = ^uint64(0)
	}
	m.RunSlices(from, slice, end)
	var emits []machine.Emit
	for onAct != nil && m.Status() == checkpoint.Acting && m.Settled() {
		// The act's slice: offered as runSlice offers it, within its
		// slice and not at its end.
		u := m.Used()
		sliceEnd := from + (u-from+slice-1)/slice*slice
		if u >= sliceEnd || sliceEnd < from {
			break
		}
		emits = append(emits, m.TakeEmits()...)
		ok, err := offer(m, onAct)
		if err != nil || !ok {
			return emits, err
		}
		if len(emits) > 0 {
			end = min(end, sliceEnd) // its slice ends the run, as it emitted
		}
		m.RunSlices(from, slice, end)
	}
	return append(emits, m.TakeEmits()...), nil
}

// offer gives the act the machine is suspended at to onAct and resumes it
// with the reply, if onAct answers.
func offer(m *machine.Machine, onAct func(string, []byte, uint64) ([]byte, bool)) (bool, error) {
	args, err := m.Pending()
	if err != nil {
		return false, err
	}
	enc, err := checkpoint.EncodeData(args)
	if err != nil {
		return false, err
	}
	replyBytes, ok := onAct(m.Tag(), enc, m.Seq())
	if !ok {
		return false, nil
	}
	r, err := checkpoint.DecodeReply(replyBytes)
	if err != nil {
		return false, fmt.Errorf("%w: act reply: %v", ErrReply, err)
	}
	if err := m.Resume(r); err != nil {
		return false, fmt.Errorf("%w: %v", ErrReply, err)
	}
	return true, nil
}

// scratches are reused to decode checkpoints: a resume allocates only what
// the restored machine keeps.
var scratches = sync.Pool{New: func() any { return new(checkpoint.Scratch) }}

func resultOf(m *machine.Machine, h *checkpoint.Header, cp []byte, emits []machine.Emit) *Result {
	r := &Result{Kind: Yield, Used: h.Used, Checkpoint: cp, Emits: append(emits, m.TakeEmits()...)}
	if !m.Settled() {
		return r
	}
	switch h.Status {
	case checkpoint.Done:
		r.Kind, r.Result = Done, h.Result
	case checkpoint.Failed:
		r.Kind, r.Err = Error, h.Error
	case checkpoint.Acting:
		r.Kind, r.Tag, r.Args, r.Seq = Act, h.Pending.Tag, h.Pending.Args, h.Pending.Seq
	case checkpoint.Awaiting:
		r.Kind, r.Args, r.Seq = Event, h.Pending.Args, h.Pending.Seq
		if sel, err := checkpoint.DecodeData(h.Pending.Args); err == nil {
			if mp, ok := sel.(*checkpoint.Map); ok {
				if k, ok := mp.Get("key"); ok {
					r.Tag, _ = k.(string)
				}
			}
		}
	}
	return r
}
