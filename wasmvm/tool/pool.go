// pool.go holds the host's pool of workers: warm ones, started with their
// tool compiled, and kept ones, confined by a run and waiting for the next
// run of the same kind.

package tool

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"
)

// pool starts workers and keeps some: warm ones (started, the tool
// compiled, not yet confined, waiting for a first run), and kept ones
// (confined by a run, waiting for another run of the same kind: kindOf).
type pool struct {
	opts Options
	exe  string
	off  layers // tests only: confinement switched off
	cpu  uint64 // tests only: each run's CPU seconds
	// keepFor is KeepFor but in tests.
	keepFor time.Duration

	mu      sync.Mutex
	warm    map[[32]byte]*warmSet
	kept    map[string][]*worker // by kind, the most recent last
	nkept   int
	metered map[[32]byte][]byte // tools metered once, by the hash of their bytes
	closed  bool
}

// warmSet is the warm workers of one tool.
type warmSet struct {
	module  []byte
	ready   []*worker
	filling int
	used    time.Time
}

func newPool(opts Options) (*pool, error) {
	if err := confinable(opts.WithoutLandlock); err != nil {
		return nil, err
	}
	return &pool{opts: opts, exe: "/proc/self/exe", keepFor: KeepFor, warm: map[[32]byte]*warmSet{}, kept: map[string][]*worker{},
		metered: map[[32]byte][]byte{}}, nil
}

// close stops the warm and kept workers.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	var all []*worker
	for _, s := range p.warm {
		all = append(all, s.ready...)
	}
	for _, ws := range p.kept {
		all = append(all, ws...)
	}
	p.warm, p.kept, p.nkept = map[[32]byte]*warmSet{}, map[string][]*worker{}, 0
	p.mu.Unlock()
	for _, w := range all {
		w.kill()
	}
}

// take returns a worker with the module compiled: one kept from a run of
// the same kind (kept is then true), a warm one, or one started now.
func (p *pool) take(ctx context.Context, key [32]byte, kind string, module []byte, fresh bool) (w *worker, kept bool, err error) {
	p.mu.Lock()
	for ws := p.kept[kind]; !fresh && len(ws) > 0 && w == nil; ws = p.kept[kind] {
		w = ws[len(ws)-1]
		p.unkeepLocked(w)
		if !w.alive() {
			go w.kill()
			w = nil
		}
	}
	if w != nil {
		p.mu.Unlock()
		return w, true, nil
	}
	if s := p.warm[key]; s != nil {
		s.used = time.Now()
		for len(s.ready) > 0 && w == nil {
			w, s.ready = s.ready[0], s.ready[1:]
			if !w.alive() {
				w = nil
			}
		}
	}
	p.mu.Unlock()
	if w != nil {
		return w, false, nil
	}
	w, err = p.start(ctx, key, module)
	return w, false, err
}

// keep keeps a worker after its run for the next run of its kind, for
// KeepFor, at most opts.Keep of them (the least recently used go first).
func (p *pool) keep(w *worker, kind string) {
	p.mu.Lock()
	var drop []*worker
	if p.closed || p.opts.Keep <= 0 || w.seq >= maxRuns {
		drop = append(drop, w)
	} else {
		w.kind, w.keptAt = kind, time.Now()
		p.kept[kind] = append(p.kept[kind], w)
		p.nkept++
		w.gen++
		gen := w.gen
		w.expire = time.AfterFunc(p.keepFor, func() {
			p.mu.Lock()
			mine := w.gen == gen && p.unkeepLocked(w) // not a later keeping's
			p.mu.Unlock()
			if mine {
				w.kill()
			}
		})
		for p.nkept > p.opts.Keep {
			var oldest *worker
			for _, ws := range p.kept {
				if oldest == nil || ws[0].keptAt.Before(oldest.keptAt) {
					oldest = ws[0]
				}
			}
			p.unkeepLocked(oldest)
			drop = append(drop, oldest)
		}
	}
	p.mu.Unlock()
	for _, w := range drop {
		w.kill()
	}
}

// dropKind stops the workers kept for kind.
func (p *pool) dropKind(kind string) {
	p.mu.Lock()
	ws := slices.Clone(p.kept[kind])
	for _, w := range ws {
		p.unkeepLocked(w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
	}
}

// unkeepLocked takes a worker out of the kept ones, reporting whether it
// was there.
func (p *pool) unkeepLocked(w *worker) bool {
	ws := p.kept[w.kind]
	i := slices.Index(ws, w)
	if i < 0 {
		return false
	}
	if ws = slices.Delete(ws, i, i+1); len(ws) == 0 {
		delete(p.kept, w.kind)
	} else {
		p.kept[w.kind] = ws
	}
	p.nkept--
	if w.expire != nil {
		w.expire.Stop()
	}
	return true
}

// refill starts warm workers for a tool until it has opts.Warm, in the
// background, and forgets the least recently used tool past WarmTools.
func (p *pool) refill(key [32]byte, module []byte) {
	if p.opts.Warm <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	s := p.warm[key]
	if s == nil {
		s = &warmSet{module: module}
		p.warm[key] = s
		if len(p.warm) > WarmTools {
			p.evictLocked(key)
		}
	}
	s.used = time.Now()
	for ; len(s.ready)+s.filling < p.opts.Warm; s.filling++ {
		go func() {
			w, err := p.start(context.Background(), key, s.module)
			p.mu.Lock()
			defer p.mu.Unlock()
			s.filling--
			switch {
			case err != nil:
			case p.closed || p.warm[key] != s:
				w.kill()
			default:
				s.ready = append(s.ready, w)
			}
		}()
	}
}

// evictLocked drops the warm workers of the tool used longest ago.
func (p *pool) evictLocked(keep [32]byte) {
	var oldest [32]byte
	var when time.Time
	for k, s := range p.warm {
		if k != keep && (when.IsZero() || s.used.Before(when)) {
			oldest, when = k, s.used
		}
	}
	for _, w := range p.warm[oldest].ready {
		w.kill()
	}
	delete(p.warm, oldest)
}

// meter returns the module metered, once per tool: a worker compiles it
// as it is (its fuel rewriting is most of the cost of a worker's start).
func (p *pool) meter(key [32]byte, module []byte) ([]byte, error) {
	p.mu.Lock()
	m, ok := p.metered[key]
	p.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := meter(module, false)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.metered) >= 2*WarmTools {
		clear(p.metered)
	}
	p.metered[key] = m
	p.mu.Unlock()
	return m, nil
}

// kindOf is what a kept worker must have been confined for to serve a
// run: the same tool, mounts, modes, environment and owner, and layers.
func (p *pool) kindOf(key [32]byte, cfg Config) string {
	h := sha256.New()
	h.Write(key[:])
	put := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	put(fmt.Sprintf("%d mounts", len(cfg.Mounts)))
	for _, m := range cfg.Mounts {
		put(m.Host)
		put(m.Guest)
		put(fmt.Sprint(m.Write))
	}
	put(fmt.Sprintf("%d variables", len(cfg.Env)))
	for _, kv := range cfg.Env {
		put(kv)
	}
	put(cfg.Owner)
	put(fmt.Sprintf("%+v %d", p.off, p.cpu))
	return string(h.Sum(nil))
}
