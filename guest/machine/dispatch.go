// dispatch.go holds what runs a machine's steps: the interpreter, or
// compiled code from each leader it reaches once the program has some.

package machine

import "github.com/runehost/runehost/checkpoint"

// exec runs instructions while the charged steps are below end: the fast
// path (fast.go) as far as it goes, slow for what it hands back.
// Until Compiler gives a final answer, it is asked again every jitAsk
// steps.
func (m *Machine) exec(end uint64) {
	for ; ; end = m.capped(end) {
		if !m.jitLooked && Compiler != nil {
			c, final := Compiler(m.prog, m.steps)
			m.jit, m.jitLooked = c, final || c != nil
		}
		switch {
		case m.jit != nil:
			m.execCompiled(end)
			return
		case m.jitLooked || Compiler == nil:
			m.execInterpreted(end)
			return
		}
		m.execInterpreted(min(end, m.steps+jitAsk))
		if m.status != checkpoint.Runnable || m.steps >= m.capped(end) {
			return
		}
	}
}

// jitAsk is how many steps are interpreted before Compiler is asked again.
const jitAsk = 1 << 13

// execInterpreted runs the interpreter alone.
func (m *Machine) execInterpreted(end uint64) {
	if !fastOn {
		m.slow(end)
		return
	}
	for ; ; end = m.capped(end) {
		m.fast(end)
		if m.steps >= end {
			return
		}
		m.slow(end)
		if m.status != checkpoint.Runnable || m.steps >= m.capped(end) {
			return
		}
	}
}

// execCompiled runs compiled code from every leader it reaches, and the
// interpreter one instruction at a time from wherever compiled code hands
// back to the next leader.
// A function without compiled code is interpreted in stretches of
// interpretedRun steps, after which the frame is looked at again.
func (m *Machine) execCompiled(end uint64) {
	for n := 1; m.status == checkpoint.Runnable && m.steps < m.capped(end); n++ {
		end = m.capped(end)
		if n%safepointEvery == 0 {
			m.jit.Safepoint()
		}
		fr := &m.frames[len(m.frames)-1]
		if !m.jit.Compiles(fr.fn.Index) {
			m.execInterpreted(min(end, m.steps+interpretedRun))
			continue
		}
		if m.jit.Leader(fr.fn.Index, fr.pc) {
			m.refill()
			m.jit.Enter(m, end)
			if m.status != checkpoint.Runnable || m.steps >= end {
				return
			}
		}
		m.slow(min(end, m.steps+1))
	}
}

const (
	interpretedRun = 256
	safepointEvery = 1024
)
