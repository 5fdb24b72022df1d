// pace.go holds how many slices one crossing into the runtime asks for: as
// many as run in a quantum of time, found by doubling and halving.

package host

import (
	"context"
	"time"

	"github.com/runehost/runehost/guest/port"
)

// slice is the steps of the engine's slices.
func (e *Engine) slice() uint64 {
	if e.Slice == 0 {
		return port.DefaultSlice
	}
	return e.Slice
}

// Quantum is about how long one crossing into the runtime runs a prog's
// slices while nothing needs the host: a crossing costs more than a slice
// of compiled work, and a prog that computes holds its runtime instance,
// which others may wait for, no longer than this.
const Quantum = 2 * time.Millisecond

// MaxSlices bounds the slices of one crossing.
const MaxSlices = 1024

// Pacer is how many slices a run's next crossing asks for
// (port.Request.Slices): doubled while a crossing that ran them all took
// under half the Quantum, halved when one took over it. The zero Pacer
// asks for one.
type Pacer struct{ k uint64 }

// Slices is how many slices the next crossing asks for.
func (p *Pacer) Slices() uint64 { return max(p.k, 1) }

// Took notes that a crossing that asked for asked slices took d; ran says
// it ran them all (it ended in a lazy Yield).
func (p *Pacer) Took(asked uint64, d time.Duration, ran bool) {
	switch k := p.Slices(); {
	case d > Quantum:
		p.k = max(k/2, 1)
	case ran && asked >= k && d < Quantum/2:
		p.k = min(2*k, MaxSlices)
	}
}

// turnSlices is a turn's quantum of slices when its end is a time spent
// running (turnKey): more than a turn runs.
const turnSlices = 1 << 30

// turnKey is a context's key for the time the turn it runs may spend in
// the runtime: the slices stop at the first boundary after it is spent.
// Only crossings count (an act's commit waits on the disk, not the cores),
// so a turn's acts and awaits fall where they fall with a quantum of slices.
type turnKey struct{}

// turnTime is what a turn has left to spend.
type turnTime struct{ left time.Duration }

// withTurnTime gives ctx's turn d to spend in the runtime.
func withTurnTime(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, turnKey{}, &turnTime{left: d})
}

// spend counts d against ctx's turn, if it has a time.
func spend(ctx context.Context, d time.Duration) {
	if t, ok := ctx.Value(turnKey{}).(*turnTime); ok {
		t.left -= d
	}
}

// turnOver says the turn ctx runs has spent its time.
func turnOver(ctx context.Context) bool {
	t, ok := ctx.Value(turnKey{}).(*turnTime)
	return ok && t.left <= 0
}
