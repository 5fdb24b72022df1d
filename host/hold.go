// hold.go holds the per-tree lock (one turn of a run tree at a time in this
// process) and the stop requests that end a running turn at its next slice.

package host

import (
	"context"
	"sync"
)

// holds is a lock per root invocation. A tree's turns run one at a time,
// as they always did in one command: a parent and a child settle through
// the same records, so two workers never drive one tree at once; different
// trees run in parallel.
type holds struct {
	mu    sync.Mutex
	trees map[string]*tree
}

type tree struct {
	mu   sync.Mutex
	n    int                // goroutines holding or waiting
	turn context.CancelFunc // of the turn running in it, for a stop
	stop map[string]int     // invocations asked to stop, with their askers
}

// tree returns root's entry, made if need be; h.mu is held.
func (h *holds) tree(root string) *tree {
	if h.trees == nil {
		h.trees = map[string]*tree{}
	}
	t := h.trees[root]
	if t == nil {
		t = &tree{stop: map[string]int{}}
		h.trees[root] = t
	}
	return t
}

// lock takes inv's tree and returns the function that gives it back.
func (h *holds) lock(inv string) func() {
	root := rootOf(inv)
	h.mu.Lock()
	t := h.tree(root)
	t.n++
	h.mu.Unlock()
	t.mu.Lock()
	return func() {
		t.mu.Unlock()
		h.mu.Lock()
		if t.n--; t.n == 0 && len(t.stop) == 0 {
			delete(h.trees, root)
		}
		h.mu.Unlock()
	}
}

// busy says whether some goroutine holds or waits for inv's tree.
func (h *holds) busy(inv string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.trees[rootOf(inv)]
	return t != nil && t.n > 0
}

// running registers the turn of inv's tree, which holds its lock: the
// turn's context ends when a stop is asked for the tree.
func (h *holds) running(ctx context.Context, inv string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.trees[rootOf(inv)]
	switch {
	case t == nil: // not held: a caller outside the engine's turns
	case len(t.stop) > 0:
		cancel()
	default:
		t.turn = cancel
	}
	return ctx, func() {
		cancel()
		h.mu.Lock()
		if t != nil {
			t.turn = nil
		}
		h.mu.Unlock()
	}
}

// askStop ends the turn running in inv's tree at its next slice (its live
// machine is checkpointed, an act in flight finishes) and keeps new turns
// from starting until the returned function is called.
func (h *holds) askStop(inv string) func() {
	root := rootOf(inv)
	h.mu.Lock()
	t := h.tree(root)
	t.stop[inv]++
	if t.turn != nil {
		t.turn()
	}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		if t.stop[inv]--; t.stop[inv] == 0 {
			delete(t.stop, inv)
		}
		if t.n == 0 && len(t.stop) == 0 {
			delete(h.trees, root)
		}
		h.mu.Unlock()
	}
}
