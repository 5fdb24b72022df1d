// Package machine is the Rune virtual machine: a stack machine whose whole
// state is plain data, run in bounded slices of steps.
//
// Calls push frames rather than recursing in Go, values come from a closed
// set (value.go), and iterators are heap objects, so the machine can stop at
// any instruction boundary and be written out as a checkpoint (snapshot.go).
package machine

import (
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

// Machine is one running prog.
type Machine struct {
	prog   *compile.Program
	consts []Value

	globals  []Value
	stack    []Value
	sp       int
	frames   []frame
	handlers []handler

	steps uint64 // charged, including work not yet reported
	used  uint64 // reported: steps reported to the host so far
	limit uint64
	clock int64
	rng   uint64
	seq   uint64

	status  checkpoint.Status
	pending Value // act arguments or await selector, while suspended
	tag     string
	result  Value
	failure *checkpoint.Error

	emits []Emit // produced during the current Run

	jit       Compiled // the program's compiled code, if any
	jitLooked bool     // whether Compiler answered for good
	pool      pool     // what compiled code allocates from

	// RunSlices' grid: slices of gridLen steps from gridFrom; stopAt, when
	// not 0, is where the run ends (the end of the slice an emit was in).
	gridFrom, gridLen, stopAt uint64
}

// pool is memory compiled code takes new lists and iterators from, each
// slice used up to its length: the guest's Go allocator costs a
// microsecond an object in wasm, a bump of a length a few nanoseconds. Go
// allocates the slabs, where no compiled code runs (refill); an object
// taken keeps its slab alive, so slabs are small: 6 KiB of lists and
// 24 KiB of values (measured: a quarter of that made bintrees 2.3 times
// slower, refilled four times as often). Natively it stays empty.
type pool struct {
	lists []listObj
	vals  []Value
	maps  []mapObj
	iters []iterObj
	bytes []byte // strings' bytes
}

// Slab sizes of the pool; PoolListMax is the longest list compiled code
// makes from it, PoolRangeMax the longest range, PoolStrMax the longest
// string.
const (
	poolLists    = 256
	poolVals     = 1024
	poolMaps     = 64
	poolIters    = 32
	poolBytes    = 8192
	PoolListMax  = 16
	PoolRangeMax = 256
	PoolStrMax   = 1024
)

// refill gives the pool new slabs where it could not serve one more object.
func (m *Machine) refill() {
	p := &m.pool
	if len(p.lists) == cap(p.lists) {
		p.lists = make([]listObj, 0, poolLists)
	}
	if cap(p.vals)-len(p.vals) < PoolRangeMax {
		p.vals = make([]Value, 0, poolVals)
	}
	if len(p.maps) == cap(p.maps) {
		p.maps = make([]mapObj, 0, poolMaps)
	}
	if len(p.iters) == cap(p.iters) {
		p.iters = make([]iterObj, 0, poolIters)
	}
	if cap(p.bytes)-len(p.bytes) < PoolStrMax {
		p.bytes = make([]byte, 0, poolBytes)
	}
}

type frame struct {
	fn      *compile.Funcode
	closure *closureObj // nil for the entry function
	pc      int
	base    int
}

type handler struct {
	frame, pc, sp int
}

// Emit is an event a prog emitted with emit() or log().
type Emit struct {
	Kind string
	Data []byte // data value (checkpoint.EncodeData)
}

// Config starts a machine.
type Config struct {
	Input, State any    // data values bound to input and state
	Limit        uint64 // step limit; 0 means DefaultLimit
	Seed         uint64 // PRNG seed chosen by the host for the invocation
}

// DefaultLimit is the step limit when none is given.
const DefaultLimit = 100_000_000

// New starts the entry function of prog.
func New(prog *compile.Program, cfg Config) (*Machine, error) {
	m := newMachine(prog)
	m.limit = cfg.Limit
	if m.limit == 0 {
		m.limit = DefaultLimit
	}
	m.rng = cfg.Seed
	in, err := m.fromData(cfg.Input, 0)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	st, err := m.fromData(cfg.State, 0)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	m.globals[0], m.globals[1] = in, st
	entry := prog.Funcs[0]
	m.ensureStack(len(entry.Locals) + entry.MaxStack)
	m.sp = len(entry.Locals)
	m.frames = append(m.frames, frame{fn: entry})
	return m, nil
}

func newMachine(prog *compile.Program) *Machine {
	m := &Machine{prog: prog, consts: make([]Value, len(prog.Consts)), globals: make([]Value, len(prog.Globals))}
	for i, c := range prog.Consts {
		switch c.Kind {
		case compile.ConstInt:
			m.consts[i] = intValue(c.Int)
		case compile.ConstFloat:
			m.consts[i] = floatValue(c.Float)
		case compile.ConstString:
			m.consts[i] = strValue(c.Str)
		}
	}
	for i := range m.globals {
		m.globals[i] = undef
	}
	return m
}

func (m *Machine) ensureStack(n int) {
	if n > len(m.stack) {
		size := 2 * len(m.stack)
		if size < n {
			size = n
		}
		if size < 64 {
			size = 64
		}
		s := make([]Value, size)
		copy(s, m.stack[:m.sp])
		m.stack = s
	}
}

// Program returns the program the machine runs.
func (m *Machine) Program() *compile.Program { return m.prog }

// Status returns where the machine stands.
func (m *Machine) Status() checkpoint.Status { return m.status }

// Used returns the cumulative steps reported so far.
func (m *Machine) Used() uint64 { return m.used }

// Steps returns the cumulative steps charged, which may run ahead of Used
// when one instruction's work overran the slice; the difference is paid
// from the next slices before any instruction runs.
func (m *Machine) Steps() uint64 { return m.steps }

// Settled reports whether every charged step has been reported.
func (m *Machine) Settled() bool { return m.used == m.steps }

// Seq returns the number of suspensions so far.
func (m *Machine) Seq() uint64 { return m.seq }

// Tag returns the act tag while suspended at an act.
func (m *Machine) Tag() string { return m.tag }

// Pending returns the act arguments or await selector as a data value.
func (m *Machine) Pending() (any, error) { return dataResult(m.toData(m.pending, 0)) }

// Result returns the result of a Done machine as a data value.
func (m *Machine) Result() (any, error) { return dataResult(m.toData(m.result, 0)) }

func dataResult(d any, err *rtError) (any, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Failure returns the error that ended a Failed machine.
func (m *Machine) Failure() *checkpoint.Error { return m.failure }

// SetClock sets the host clock for the next slice.
func (m *Machine) SetClock(ms int64) { m.clock = ms }

// TakeEmits returns and clears what was emitted since the last call.
func (m *Machine) TakeEmits() []Emit {
	e := m.emits
	m.emits = nil
	return e
}

// Resume delivers the reply to the act or await the machine is suspended at.
func (m *Machine) Resume(r checkpoint.Reply) error {
	if m.status != checkpoint.Acting && m.status != checkpoint.Awaiting {
		return fmt.Errorf("machine is %s, not suspended", m.status)
	}
	var v Value
	if r.Err != nil {
		e := &errorObj{kind: r.Err.Kind, msg: r.Err.Msg, pos: m.position()}
		if e.kind == "" {
			return fmt.Errorf("reply error without a kind")
		}
		if e.kind == KindSteps || e.kind == KindFault {
			return fmt.Errorf("reply error kind %q is reserved for the machine", e.kind)
		}
		if r.Err.Data != nil {
			d, err := checkpoint.DecodeData(r.Err.Data)
			if err != nil {
				return fmt.Errorf("reply error data: %w", err)
			}
			if e.data, err = m.fromData(d, 0); err != nil {
				return fmt.Errorf("reply error data: %w", err)
			}
		}
		v = errorValue(e)
	} else {
		var err error
		if v, err = m.fromData(r.Value, 0); err != nil {
			return fmt.Errorf("reply: %w", err)
		}
	}
	m.status = checkpoint.Runnable
	m.pending = nilValue
	m.tag = ""
	if r.Err != nil {
		m.raise(v)
		return nil
	}
	m.push(v)
	return nil
}

func (m *Machine) push(v Value) {
	m.ensureStack(m.sp + 1)
	m.stack[m.sp] = v
	m.sp++
}

// position is the source position of the instruction just executed.
func (m *Machine) position() string {
	if len(m.frames) == 0 {
		return ""
	}
	fr := &m.frames[len(m.frames)-1]
	return fr.fn.Where(fr.pc - 1)
}

// Run executes at most budget steps beyond Used, stopping early at an act,
// an await, the end of the prog, or an uncaught error.
func (m *Machine) Run(budget uint64) {
	end := m.used + budget
	if end < m.used || end > m.limit {
		end = m.limit
	}
	if m.status == checkpoint.Runnable && m.steps < end {
		m.exec(end)
	}
	end = m.capped(end)
	if m.status == checkpoint.Runnable && m.steps >= m.limit {
		m.fail(&errorObj{kind: KindSteps, msg: fmt.Sprintf("step limit of %d exceeded", m.limit), pos: m.position()}, false)
	}
	if m.steps > m.limit {
		m.steps = m.limit
	}
	m.used = min(m.steps, end)
}

// RunSlices runs up to end (at most the limit) as Run(slice) from
// from, again and again, would have while each ended Runnable with nothing
// emitted: it stops where Run would, or at the end of the slice of the
// grid (slices of slice steps from from) in which an emit was made. It is
// one run where the slices would be many, compiled code never leaving
// at a boundary nothing happens at. from is at most Used, and on the
// grid of the slices before.
func (m *Machine) RunSlices(from, slice, end uint64) {
	if end <= m.used || slice == 0 {
		return
	}
	m.gridFrom, m.gridLen, m.stopAt = from, slice, 0
	defer func() { m.gridLen, m.stopAt = 0, 0 }()
	m.Run(end - m.used)
}

// emitted ends a RunSlices at the end of the slice of the grid in which
// the instruction that began at step at emitted.
func (m *Machine) emitted(at uint64) {
	if m.gridLen == 0 || at < m.gridFrom {
		return
	}
	b := m.gridFrom + ((at-m.gridFrom)/m.gridLen+1)*m.gridLen
	if b < m.gridFrom {
		b = ^uint64(0)
	}
	if m.stopAt == 0 || b < m.stopAt {
		m.stopAt = b
	}
}

// capped is end, or where an emit ended the run if that is sooner.
func (m *Machine) capped(end uint64) uint64 {
	if m.stopAt != 0 && m.stopAt < end {
		return m.stopAt
	}
	return end
}

// raise throws v (an error value) at the current instruction.
func (m *Machine) raise(v Value) {
	if k := v.errObj().kind; k == KindSteps || k == KindFault {
		m.fail(v.errObj(), true)
		return
	}
	if n := len(m.handlers); n > 0 {
		h := m.handlers[n-1]
		m.handlers = m.handlers[:n-1]
		m.frames = m.frames[:h.frame+1]
		m.sp = h.sp
		m.stack[m.sp] = v
		m.sp++
		m.frames[h.frame].pc = h.pc
		return
	}
	m.fail(v.errObj(), true)
}

// fail ends the machine with an uncaught error.
func (m *Machine) fail(e *errorObj, trace bool) {
	f := &checkpoint.Error{Kind: e.kind, Msg: truncate(e.msg, MaxErrorText-len("…")), Pos: e.pos}
	if e.data.k != Nil {
		if d, err := m.toData(e.data, 0); err == nil {
			f.Data, _ = checkpoint.EncodeData(d)
		}
	}
	if trace {
		for i := len(m.frames) - 1; i >= 0 && len(f.Trace) < 16; i-- {
			fr := &m.frames[i]
			f.Trace = append(f.Trace, fmt.Sprintf("%s at %s", fr.fn.Name, fr.fn.Where(fr.pc-1)))
		}
	}
	m.failure = f
	m.status = checkpoint.Failed
	m.frames, m.handlers, m.sp = m.frames[:0], m.handlers[:0], 0
}

// Abandon ends the machine with e, a failure of the host's making that no
// try catches, and lets go of every value it holds: what it holds could not
// be kept (its checkpoint is over checkpoint.MaxSize), so its checkpoint
// keeps only the failure. Steps charged beyond those reported are not.
func (m *Machine) Abandon(e *checkpoint.Error) {
	m.failure = e
	m.status = checkpoint.Failed
	m.frames, m.handlers, m.sp = m.frames[:0], m.handlers[:0], 0
	clear(m.stack)
	for i := range m.globals {
		m.globals[i] = nilValue
	}
	m.pending, m.result, m.tag = nilValue, nilValue, ""
	m.pool = pool{}
	m.steps = m.used
}

// fault ends the machine on a state no valid program reaches; only a
// hostile checkpoint gets here, and it must not crash the process.
func (m *Machine) fault(what string) {
	m.fail(&errorObj{kind: KindFault, msg: "machine fault: " + what, pos: m.position()}, false)
}

// work charges one step inside a traversal whose size the instruction
// cannot know in advance (deep equality of shared structures), and stops it
// at the step limit so that no single instruction runs unbounded.
func (m *Machine) work() *rtError {
	m.steps++
	if m.steps > m.limit {
		return errorf(KindSteps, "step limit of %d exceeded", m.limit)
	}
	return nil
}

// charge adds the cost of work beyond one step.
func (m *Machine) charge(units int) { m.steps += uint64(units) }

// Costs of work, in bytes or elements per extra step.
const (
	bytesPerStep = 64
	elemsPerStep = 8
)

func (m *Machine) chargeBytes(n int) { m.steps += uint64(n / bytesPerStep) }
func (m *Machine) chargeElems(n int) { m.steps += uint64(n / elemsPerStep) }

// newString makes a string value after checking the size limit and charging for it.
func (m *Machine) newString(s string) (Value, *rtError) {
	if len(s) > MaxString {
		return nilValue, errorf(KindLimit, "string of %d bytes exceeds the limit of %d", len(s), MaxString)
	}
	m.chargeBytes(len(s))
	return strValue(s), nil
}

func checkListLen(n int) *rtError {
	if n > MaxList {
		return errorf(KindLimit, "list of %d elements exceeds the limit of %d", n, MaxList)
	}
	return nil
}

// rngNext advances the splitmix64 generator.
func (m *Machine) rngNext() uint64 {
	m.rng += 0x9e3779b97f4a7c15
	z := m.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (m *Machine) random() float64 { return float64(m.rngNext()>>11) * (1.0 / (1 << 53)) }
