// snapshot.go writes a machine out as a checkpoint and reads one back,
// validating everything a hostile checkpoint could get wrong.

package machine

import (
	"fmt"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/internal/detcbor"
)

// Snapshot returns the machine as a checkpoint (without invocation or
// context, which belong to the caller). Heap objects are numbered in the
// order a breadth-first walk from the roots first reaches them, so equal
// machine states give equal checkpoints however they were reached.
func (m *Machine) Snapshot() (*checkpoint.Checkpoint, error) {
	h, err := m.header()
	if err != nil {
		return nil, err
	}
	w := &writer{strs: make(map[string]uint64)}
	body := &checkpoint.Machine{
		Steps: m.steps, Limit: m.limit, Clock: m.clock, RNG: m.rng, Seq: m.seq,
		Globals: w.vals(m.globals),
		Stack:   w.vals(m.stack[:m.sp]),
	}
	for _, f := range m.frames {
		cf := checkpoint.Frame{Fn: uint32(f.fn.Index), PC: uint32(f.pc), Base: uint32(f.base)}
		if f.closure != nil {
			cf.Closure = uint32(w.ref(unsafe.Pointer(f.closure), Func).N) + 1
		}
		body.Frames = append(body.Frames, cf)
	}
	for _, hd := range m.handlers {
		body.Handlers = append(body.Handlers, checkpoint.Handler{Frame: uint32(hd.frame), PC: uint32(hd.pc), SP: uint32(hd.sp)})
	}
	// Drain the queue: objects reached from objects.
	for i := 0; i < len(w.queue); i++ {
		o := w.queue[i]
		var obj checkpoint.Object
		switch o.k {
		case List:
			obj = checkpoint.Object{Kind: checkpoint.ObjList, Items: w.vals((*listObj)(o.p).elems)}
		case Map:
			mo := (*mapObj)(o.p)
			items := w.alloc(2 * len(mo.keys))
			for j := range mo.keys {
				items[2*j], items[2*j+1] = w.val(mo.keys[j]), w.val(mo.vals[j])
			}
			obj = checkpoint.Object{Kind: checkpoint.ObjMap, Items: items}
		case Func:
			cl := (*closureObj)(o.p)
			items := w.alloc(len(cl.cells))
			for j, c := range cl.cells {
				items[j] = w.ref(unsafe.Pointer(c), cellKind)
			}
			obj = checkpoint.Object{Kind: checkpoint.ObjClosure, Aux: int64(cl.fn.Index), Items: items}
		case cellKind:
			obj = checkpoint.Object{Kind: checkpoint.ObjCell, Items: []checkpoint.Val{w.val((*cellObj)(o.p).v)}}
		case iterKind:
			it := (*iterObj)(o.p)
			obj = checkpoint.Object{Kind: checkpoint.ObjIter, Aux: int64(it.pos), Items: []checkpoint.Val{w.val(it.src)}}
		case Error:
			e := (*errorObj)(o.p)
			obj = checkpoint.Object{Kind: checkpoint.ObjError, Items: []checkpoint.Val{
				{Kind: checkpoint.ValStr, S: e.kind}, {Kind: checkpoint.ValStr, S: e.msg}, w.val(e.data), {Kind: checkpoint.ValStr, S: e.pos},
			}}
		}
		body.Heap = append(body.Heap, obj)
		if len(body.Heap) > checkpoint.MaxObjects {
			return nil, fmt.Errorf("checkpoint: more than %d heap objects", checkpoint.MaxObjects)
		}
	}
	body.Strings = w.table
	return &checkpoint.Checkpoint{Header: h, Machine: body}, nil
}

// header is the machine's checkpoint header, without invocation or context.
func (m *Machine) header() (checkpoint.Header, error) {
	h := checkpoint.Header{
		Format:    checkpoint.Format,
		Semantics: compile.Version,
		Program:   m.prog.Hash[:],
		Used:      m.used,
		Status:    m.status,
	}
	switch m.status {
	case checkpoint.Acting, checkpoint.Awaiting:
		d, err := m.Pending()
		if err != nil {
			return h, err
		}
		args, err := checkpoint.EncodeData(d)
		if err != nil {
			return h, err
		}
		kind := checkpoint.PendingAct
		if m.status == checkpoint.Awaiting {
			kind = checkpoint.PendingAwait
		}
		h.Pending = &checkpoint.Pending{Kind: kind, Seq: m.seq, Tag: m.tag, Args: args}
	case checkpoint.Done:
		d, err := m.Result()
		if err != nil {
			return h, err
		}
		if h.Result, err = checkpoint.EncodeData(d); err != nil {
			return h, err
		}
	case checkpoint.Failed:
		h.Error = m.failure
	}
	return h, nil
}

// Checkpoint encodes the machine as a checkpoint of invocation with
// context appCtx, and returns its header too. The bytes are exactly
// checkpoint.Encode's for Snapshot with those set, written straight from the
// machine: no checkpoint.Machine in between, which in the sandbox cost as
// much as the encoding itself (guest/port's tests hold the two equal).
func (m *Machine) Checkpoint(invocation string, appCtx []byte) ([]byte, *checkpoint.Header, error) {
	h, err := m.header()
	if err != nil {
		return nil, nil, err
	}
	h.Invocation, h.Context = invocation, appCtx
	w := newWriter()
	defer w.free()
	b := checkpoint.StartEncode(make([]byte, 0, 256+len(h.Result)+w.lastSize), &h)
	start := len(b)
	// The body, as checkpoint's appendMachine lays it out.
	b = detcbor.AppendHead(b, detcbor.Map, 11)
	b = detcbor.AppendHead(append(b, 0x01), detcbor.Uint, m.steps)
	b = detcbor.AppendHead(append(b, 0x02), detcbor.Uint, m.limit)
	b = detcbor.AppendInt(append(b, 0x03), m.clock)
	b = detcbor.AppendHead(append(b, 0x04), detcbor.Uint, m.rng)
	b = detcbor.AppendHead(append(b, 0x05), detcbor.Uint, m.seq)
	b = w.appendVals(append(b, 0x06), m.globals)
	b = w.appendVals(append(b, 0x07), m.stack[:m.sp])
	b = detcbor.AppendHead(append(b, 0x08), detcbor.Array, uint64(len(m.frames)))
	for _, f := range m.frames {
		var closure uint32
		if f.closure != nil {
			closure = uint32(w.ref(unsafe.Pointer(f.closure), Func).N) + 1
		}
		b = detcbor.AppendHead(b, detcbor.Array, 4)
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(uint32(f.fn.Index)))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(uint32(f.pc)))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(uint32(f.base)))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(closure))
	}
	b = detcbor.AppendHead(append(b, 0x09), detcbor.Array, uint64(len(m.handlers)))
	for _, hd := range m.handlers {
		b = detcbor.AppendHead(b, detcbor.Array, 3)
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(uint32(hd.frame)))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(uint32(hd.pc)))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(uint32(hd.sp)))
	}
	// The heap's count is known once the queue is drained: its objects go
	// to a buffer of their own first.
	hb := w.heap[:0]
	for i := 0; i < len(w.queue); i++ {
		hb = w.appendObject(hb, w.queue[i])
		if i >= checkpoint.MaxObjects {
			return nil, nil, fmt.Errorf("checkpoint: more than %d heap objects", checkpoint.MaxObjects)
		}
	}
	w.heap = hb
	b = append(detcbor.AppendHead(append(b, 0x0a), detcbor.Array, uint64(len(w.queue))), hb...)
	b = detcbor.AppendHead(append(b, 0x0b), detcbor.Array, uint64(len(w.table)))
	for _, str := range w.table {
		b = detcbor.AppendText(b, str)
	}
	w.lastSize = len(b) - start
	out, err := checkpoint.FinishEncode(b, start)
	if err != nil {
		return nil, nil, err
	}
	return out, &h, nil
}

// appendObject writes one heap object as Snapshot's Object for it encodes.
func (w *writer) appendObject(b []byte, o pending) []byte {
	switch o.k {
	case List:
		elems := (*listObj)(o.p).elems
		b = w.appendSlots(appendObjHead(b, checkpoint.ObjList, 0, len(elems)), elems)
	case Map:
		mo := (*mapObj)(o.p)
		b = appendObjHead(b, checkpoint.ObjMap, 0, 2*len(mo.keys))
		for j := range mo.keys {
			pair := [2]Value{mo.keys[j], mo.vals[j]}
			b = w.appendSlots(b, pair[:])
		}
	case Func:
		cl := (*closureObj)(o.p)
		b = appendObjHead(b, checkpoint.ObjClosure, int64(cl.fn.Index), len(cl.cells))
		for _, c := range cl.cells {
			b = checkpoint.AppendVal(b, w.ref(unsafe.Pointer(c), cellKind))
		}
	case cellKind:
		b = checkpoint.AppendVal(appendObjHead(b, checkpoint.ObjCell, 0, 1), w.val((*cellObj)(o.p).v))
	case iterKind:
		it := (*iterObj)(o.p)
		b = checkpoint.AppendVal(appendObjHead(b, checkpoint.ObjIter, int64(it.pos), 1), w.val(it.src))
	case Error:
		e := (*errorObj)(o.p) // kind, msg and pos are never shared
		b = detcbor.AppendText(appendObjHead(b, checkpoint.ObjError, 0, 4), e.kind)
		b = detcbor.AppendText(b, e.msg)
		b = checkpoint.AppendVal(b, w.val(e.data))
		b = detcbor.AppendText(b, e.pos)
	default: // unreachable: the queue holds only these kinds
		b = appendObjHead(b, 0, 0, 0)
	}
	return b
}

// appendObjHead starts an object: [kind, aux, [n items...]].
func appendObjHead(b []byte, kind checkpoint.ObjKind, aux int64, n int) []byte {
	if kind < 24 && aux >= 0 && aux < 24 && n < 24 { // four one-byte heads
		return append(b, 0x83, byte(kind), byte(aux), 0x80|byte(n))
	}
	b = detcbor.AppendHead(b, detcbor.Array, 3)
	b = detcbor.AppendHead(b, detcbor.Uint, uint64(kind))
	b = detcbor.AppendInt(b, aux)
	return detcbor.AppendHead(b, detcbor.Array, uint64(n))
}

func (w *writer) appendVals(b []byte, vs []Value) []byte {
	return w.appendSlots(detcbor.AppendHead(b, detcbor.Array, uint64(len(vs))), vs)
}

// appendSlots writes vs, one slot after another, the common ones here
// rather than through a call each (calls are dear in the sandbox).
func (w *writer) appendSlots(b []byte, vs []Value) []byte {
	for _, v := range vs {
		switch v.k {
		case Nil:
			b = append(b, 0xf6)
			continue
		case Int:
			if v.n < 1<<16 {
				b = appendShort(b, v.n)
				continue
			}
		case Str:
			if v.n < 24 { // shorter than sharedMin: never in the table
				b = append(append(b, 0x60|byte(v.n)), v.str()...)
				continue
			}
		case List, Map, Func, Error, cellKind, iterKind:
			id, added := w.ids.add(v.p, uint64(len(w.queue)))
			if added {
				w.queue = append(w.queue, pending{v.k, v.p})
			}
			if id < 1<<16 {
				b = appendShort(append(b, 0xd9, checkpoint.TagRef>>8, checkpoint.TagRef&0xff), id)
				continue
			}
		}
		b = w.appendVal(b, v)
	}
	return b
}

// appendShort writes n < 65536 as detcbor.AppendHead writes an unsigned int.
func appendShort(b []byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, byte(n))
	case n < 256:
		return append(b, 0x18, byte(n))
	}
	return append(b, 0x19, byte(n>>8), byte(n))
}

// appendVal writes v as checkpoint.AppendVal writes its slot, the one-byte
// heads without the calls (dear in the sandbox).
func (w *writer) appendVal(b []byte, v Value) []byte {
	switch v.k {
	case Nil:
		return append(b, 0xf6)
	case Int:
		if int64(v.n) >= 0 { // AppendInt of a non-negative int
			return detcbor.AppendHead(b, detcbor.Uint, v.n)
		}
	case List, Map, Func, Error, cellKind, iterKind: // a reference, as val gives it
		return detcbor.AppendHead(append(b, 0xd9, checkpoint.TagRef>>8, checkpoint.TagRef&0xff), detcbor.Uint, w.ref(v.p, v.k).N)
	case Str:
		if v.n < 24 { // shorter than sharedMin: never in the table
			return append(append(b, 0x60|byte(v.n)), v.str()...)
		}
	}
	return checkpoint.AppendVal(b, w.val(v))
}

// writers are reused by Checkpoint: their maps and buffers keep their room.
var writers = sync.Pool{New: func() any {
	return &writer{strs: make(map[string]uint64)}
}}

func newWriter() *writer { return writers.Get().(*writer) }

// free returns w to the pool, unless it grew too big to keep.
func (w *writer) free() {
	if len(w.queue) > 1<<16 || cap(w.heap) > 1<<20 {
		return
	}
	w.ids.reset()
	clear(w.strs)
	clear(w.table) // no strings kept alive from the pool
	clear(w.queue)
	w.queue, w.table, w.heap = w.queue[:0], w.table[:0], w.heap[:0]
	writers.Put(w)
}

type pending struct {
	k Kind
	p unsafe.Pointer
}

type writer struct {
	ids   ptrIDs // object numbers
	queue []pending
	strs  map[string]uint64 // long strings by content
	table []string
	slab  []checkpoint.Val

	heap     []byte // Checkpoint: the heap's objects, encoded
	lastSize int    // Checkpoint: the size of the last body written
}

// ptrIDs numbers objects by address: a table with open addressing on the
// pointer's bits, which in the sandbox costs a fraction of a Go map's
// hashing and probing.
type ptrIDs struct {
	keys []unsafe.Pointer // nil: free
	ids  []uint64
	n    int
}

func (t *ptrIDs) slot(p unsafe.Pointer) int {
	mask := len(t.keys) - 1
	i := int((uint64(uintptr(p))*0x9e3779b97f4a7c15)>>32) & mask
	for t.keys[i] != nil && t.keys[i] != p {
		i = (i + 1) & mask
	}
	return i
}

func (t *ptrIDs) get(p unsafe.Pointer) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	i := t.slot(p)
	return t.ids[i], t.keys[i] != nil
}

// add returns p's number, giving it id if it has none yet (added).
func (t *ptrIDs) add(p unsafe.Pointer, id uint64) (uint64, bool) {
	if t.n > 0 {
		if i := t.slot(p); t.keys[i] != nil {
			return t.ids[i], false
		} else if 2*(t.n+1) <= len(t.keys) {
			t.keys[i], t.ids[i] = p, id
			t.n++
			return id, true
		}
	}
	t.put(p, id)
	return id, true
}

// put adds p, which is not yet in t.
func (t *ptrIDs) put(p unsafe.Pointer, id uint64) {
	if 2*(t.n+1) > len(t.keys) { // at most half full
		old, oldIDs := t.keys, t.ids
		t.keys, t.ids = make([]unsafe.Pointer, max(64, 2*len(old))), make([]uint64, max(64, 2*len(old)))
		for i, k := range old {
			if k != nil {
				j := t.slot(k)
				t.keys[j], t.ids[j] = k, oldIDs[i]
			}
		}
	}
	i := t.slot(p)
	t.keys[i], t.ids[i] = p, id
	t.n++
}

// reset empties t, keeping its room (and no object alive).
func (t *ptrIDs) reset() {
	if t.n > 0 {
		clear(t.keys)
		t.n = 0
	}
}

// sharedMin is the length from which a string goes to the string table.
const sharedMin = 64

func (w *writer) ref(p unsafe.Pointer, k Kind) checkpoint.Val {
	id, added := w.ids.add(p, uint64(len(w.queue)))
	if added {
		w.queue = append(w.queue, pending{k, p})
	}
	return checkpoint.Val{Kind: checkpoint.ValRef, N: id}
}

func (w *writer) val(v Value) checkpoint.Val {
	switch v.k {
	case Nil:
		return checkpoint.Val{}
	case Bool:
		return checkpoint.Val{Kind: checkpoint.ValBool, N: v.n}
	case Int:
		return checkpoint.Val{Kind: checkpoint.ValInt, N: v.n}
	case Float:
		return checkpoint.Val{Kind: checkpoint.ValFloat, N: v.n}
	case Str:
		s := v.str()
		if len(s) < sharedMin {
			return checkpoint.Val{Kind: checkpoint.ValStr, S: s}
		}
		id, ok := w.strs[s]
		if !ok {
			id = uint64(len(w.table))
			w.strs[s] = id
			w.table = append(w.table, s)
		}
		return checkpoint.Val{Kind: checkpoint.ValStrRef, N: id}
	case Builtin:
		return checkpoint.Val{Kind: checkpoint.ValBuiltin, N: v.n}
	case undefKind:
		return checkpoint.Val{Kind: checkpoint.ValUndef}
	}
	return w.ref(v.p, v.k)
}

// alloc hands out n slots from a slab, to spare an allocation per object.
func (w *writer) alloc(n int) []checkpoint.Val {
	if n > len(w.slab) {
		w.slab = make([]checkpoint.Val, max(n, 256))
	}
	out := w.slab[:n:n]
	w.slab = w.slab[n:]
	return out
}

func (w *writer) vals(vs []Value) []checkpoint.Val {
	out := w.alloc(len(vs))
	for i, v := range vs {
		out[i] = w.val(v)
	}
	return out
}

// Restore rebuilds a machine from a decoded checkpoint of prog. It checks
// everything the checkpoint package could not: that functions, pcs, stack
// depths, handlers and object kinds fit the program, so that a hostile
// checkpoint gives an error, never a fault.
func Restore(prog *compile.Program, cp *checkpoint.Checkpoint) (*Machine, error) {
	h, body := &cp.Header, cp.Machine
	if body == nil {
		return nil, fmt.Errorf("checkpoint has no body")
	}
	if h.Semantics != compile.Version {
		return nil, fmt.Errorf("checkpoint of semantics version %d, this machine runs %d", h.Semantics, compile.Version)
	}
	if string(h.Program) != string(prog.Hash[:]) {
		return nil, fmt.Errorf("checkpoint of another program")
	}
	m := newMachine(prog)
	m.steps, m.used, m.limit, m.clock, m.rng, m.seq = body.Steps, h.Used, body.Limit, body.Clock, body.RNG, body.Seq
	m.status = h.Status
	if m.used > m.steps || m.steps > m.limit {
		return nil, bad("used %d, steps %d and limit %d are out of order", m.used, m.steps, m.limit)
	}
	if len(body.Globals) != len(prog.Globals) {
		return nil, bad("%d globals, the program has %d", len(body.Globals), len(prog.Globals))
	}

	// Allocate every object, then fill them in. Objects of one kind come
	// from one slab, and so do the maps' keys and values and the lists'
	// elements: a resume allocates per kind, not per object (in the
	// sandbox, allocation and collection were most of a resume's time).
	var nList, nMap, nClosure, nCell, nIter, nErr, nElems, nPairs, nCells int
	for _, o := range body.Heap {
		switch o.Kind {
		case checkpoint.ObjList:
			nList++
			nElems += len(o.Items)
		case checkpoint.ObjMap:
			nMap++
			nPairs += len(o.Items) / 2
		case checkpoint.ObjClosure:
			nClosure++
			nCells += len(o.Items)
		case checkpoint.ObjCell:
			nCell++
		case checkpoint.ObjIter:
			nIter++
		case checkpoint.ObjError:
			nErr++
		}
	}
	rs := &restorer{strs: body.Strings, heap: make([]Value, len(body.Heap)), slab: make([]Value, nElems+len(body.Globals)+len(body.Stack))}
	heap := rs.heap
	lists, maps, closures := make([]listObj, nList), make([]mapObj, nMap), make([]closureObj, nClosure)
	cells, iters, errs := make([]cellObj, nCell), make([]iterObj, nIter), make([]errorObj, nErr)
	for i, o := range body.Heap {
		switch o.Kind {
		case checkpoint.ObjList:
			heap[i] = Value{k: List, p: ptr(&lists[0])}
			lists = lists[1:]
		case checkpoint.ObjMap:
			heap[i] = Value{k: Map, p: ptr(&maps[0])}
			maps = maps[1:]
		case checkpoint.ObjClosure:
			if o.Aux < 1 || o.Aux >= int64(len(prog.Funcs)) {
				return nil, bad("closure %d has function %d", i, o.Aux)
			}
			fn := prog.Funcs[o.Aux]
			if len(o.Items) != fn.NumFree {
				return nil, bad("closure %d has %d cells, %s needs %d", i, len(o.Items), fn.Name, fn.NumFree)
			}
			closures[0].fn = fn
			heap[i] = Value{k: Func, p: ptr(&closures[0])}
			closures = closures[1:]
		case checkpoint.ObjCell:
			heap[i] = Value{k: cellKind, p: ptr(&cells[0])}
			cells = cells[1:]
		case checkpoint.ObjIter:
			heap[i] = Value{k: iterKind, p: ptr(&iters[0])}
			iters = iters[1:]
		case checkpoint.ObjError:
			heap[i] = Value{k: Error, p: ptr(&errs[0])}
			errs = errs[1:]
		}
	}
	keys, values, cellPtrs := make([]Value, nPairs), make([]Value, nPairs), make([]*cellObj, nCells)
	for i, o := range body.Heap {
		var items []Value
		var err error
		if o.Kind == checkpoint.ObjList {
			items, err = rs.vals(o.Items)
		} else {
			items, err = rs.scratch(o.Items) // copied out below
		}
		if err != nil {
			return nil, err
		}
		switch x := heap[i]; o.Kind {
		case checkpoint.ObjList:
			if len(items) > MaxList {
				return nil, bad("list %d has %d elements", i, len(items))
			}
			x.list().elems = items
		case checkpoint.ObjMap:
			mo := x.mapv()
			n := len(items) / 2
			if n > MaxMap {
				return nil, bad("map %d has %d entries", i, n)
			}
			mo.keys, mo.vals = keys[:0:n], values[:0:n]
			keys, values = keys[n:], values[n:]
			for j := 0; j < len(items); j += 2 {
				k := items[j]
				if k.k != Str && k.k != Int && k.k != Bool { // keyOf, inline
					return nil, bad("map %d has a %s key", i, typeName(k))
				}
				if n <= linearMax {
					// What set does for a map this small, without its calls.
					for _, x := range mo.keys {
						if x.k == k.k && x.n == k.n && (k.k != Str || x.str() == k.str()) {
							return nil, bad("map %d has a duplicate key", i)
						}
					}
					mo.keys, mo.vals = append(mo.keys, k), append(mo.vals, items[j+1])
					continue
				}
				if !mo.set(k, items[j+1]) {
					return nil, bad("map %d has a duplicate key", i)
				}
			}
		case checkpoint.ObjClosure:
			cl := x.fn()
			cl.cells = cellPtrs[:len(items):len(items)]
			cellPtrs = cellPtrs[len(items):]
			for j, c := range items {
				if c.k != cellKind {
					return nil, bad("closure %d captures a %s, not a cell", i, typeName(c))
				}
				cl.cells[j] = c.cell()
			}
		case checkpoint.ObjCell:
			if items[0].k == cellKind {
				return nil, bad("cell %d holds a cell", i)
			}
			x.cell().v = items[0]
		case checkpoint.ObjIter:
			it := x.iter()
			it.src, it.pos = items[0], int(o.Aux)
			switch it.src.k {
			case List, Map:
				if o.Aux < 0 || o.Aux > MaxMap {
					return nil, bad("iterator %d at %d", i, o.Aux)
				}
			case Str:
				s := it.src.str()
				if o.Aux < 0 || o.Aux > int64(len(s)) || (o.Aux < int64(len(s)) && !utf8.RuneStart(s[o.Aux])) {
					return nil, bad("iterator %d at %d of a %d-byte string", i, o.Aux, len(s))
				}
				it.idx = utf8.RuneCountInString(s[:o.Aux])
			default:
				return nil, bad("iterator %d over %s", i, typeName(it.src))
			}
		case checkpoint.ObjError:
			if items[0].k != Str || items[1].k != Str || items[3].k != Str {
				return nil, bad("error %d is malformed", i)
			}
			e := x.errObj()
			e.kind, e.msg, e.data, e.pos = items[0].str(), items[1].str(), items[2], items[3].str()
		}
	}

	var err error
	if m.globals, err = rs.vals(body.Globals); err != nil {
		return nil, err
	}
	stack, err := rs.vals(body.Stack)
	if err != nil {
		return nil, err
	}
	m.sp = len(stack)

	// Frames: each must sit exactly where the compiler's stack depths put it.
	switch m.status {
	case checkpoint.Done, checkpoint.Failed:
		if len(body.Frames) != 0 || len(body.Handlers) != 0 || len(stack) != 0 {
			return nil, bad("a %s machine with frames or a stack", m.status)
		}
	default:
		if len(body.Frames) == 0 || len(body.Frames) > MaxFrames {
			return nil, bad("%d frames", len(body.Frames))
		}
	}
	for i, f := range body.Frames {
		if int(f.Fn) >= len(prog.Funcs) {
			return nil, bad("frame %d runs function %d", i, f.Fn)
		}
		fn := prog.Funcs[f.Fn]
		fr := frame{fn: fn, pc: int(f.PC), base: int(f.Base)}
		if i == 0 {
			if f.Fn != 0 || f.Closure != 0 || f.Base != 0 {
				return nil, bad("frame 0 is not the entry function")
			}
		} else {
			if f.Closure == 0 {
				return nil, bad("frame %d has no closure", i)
			}
			c := heap[f.Closure-1]
			if c.k != Func || c.fn().fn != fn {
				return nil, bad("frame %d runs %s but its closure is not of it", i, fn.Name)
			}
			fr.closure = c.fn()
		}
		if fr.pc < 0 || fr.pc >= len(fn.Code) {
			return nil, bad("frame %d has pc %d of %d", i, fr.pc, len(fn.Code))
		}
		top := m.sp
		if i+1 < len(body.Frames) {
			// A caller stopped just after a CALL; the callee's base is the first argument.
			op, nargs := compile.Decode(fn.Code[maxInt(fr.pc-1, 0)])
			if fr.pc == 0 || op != compile.CALL {
				return nil, bad("frame %d is not stopped at a call", i)
			}
			top = int(body.Frames[i+1].Base) + nargs
			if int(body.Frames[i+1].Base) < 1 || int(fn.Depths[fr.pc-1])+fr.base+len(fn.Locals) != top {
				return nil, bad("frame %d: callee base %d does not fit the stack", i, body.Frames[i+1].Base)
			}
		} else {
			want := fr.base + len(fn.Locals) + int(fn.Depths[fr.pc])
			if m.status == checkpoint.Acting || m.status == checkpoint.Awaiting {
				want-- // the reply is not yet pushed
				if op, _ := compile.Decode(fn.Code[maxInt(fr.pc-1, 0)]); fr.pc == 0 || (op != compile.ACT && op != compile.AWAIT) {
					return nil, bad("a suspended machine is not stopped at an act or await")
				}
			}
			if top != want {
				return nil, bad("frame %d at pc %d: stack height %d, the program needs %d", i, fr.pc, top, want)
			}
		}
		m.frames = append(m.frames, fr)
	}
	for i, hd := range body.Handlers {
		fn := m.frames[hd.Frame].fn
		if int(hd.PC) >= len(fn.Code) || int(hd.PC) < 1 {
			return nil, bad("handler %d has pc %d", i, hd.PC)
		}
		if op, _ := compile.Decode(fn.Code[hd.PC-1]); op != compile.JMP {
			return nil, bad("handler %d does not start a catch block", i)
		}
		if int(hd.SP) != m.frames[hd.Frame].base+len(fn.Locals)+int(fn.Depths[hd.PC])-1 {
			return nil, bad("handler %d: stack height %d does not fit", i, hd.SP)
		}
		m.handlers = append(m.handlers, handler{frame: int(hd.Frame), pc: int(hd.PC), sp: int(hd.SP)})
	}
	m.stack = stack
	if n := len(m.frames); n > 0 {
		top := m.frames[n-1]
		m.ensureStack(top.base + len(top.fn.Locals) + top.fn.MaxStack + 1)
	}

	switch m.status {
	case checkpoint.Acting, checkpoint.Awaiting:
		d, err := checkpoint.DecodeData(h.Pending.Args)
		if err != nil {
			return nil, err
		}
		if m.pending, err = m.fromData(d, 0); err != nil {
			return nil, err
		}
		m.tag = h.Pending.Tag
		if h.Pending.Seq != m.seq {
			return nil, bad("pending seq %d, machine seq %d", h.Pending.Seq, m.seq)
		}
	case checkpoint.Done:
		d, err := checkpoint.DecodeData(h.Result)
		if err != nil {
			return nil, err
		}
		if m.result, err = m.fromData(d, 0); err != nil {
			return nil, err
		}
	case checkpoint.Failed:
		m.failure = h.Error
	}
	return m, nil
}

func maxInt(a, b int) int { return max(a, b) }

// bad is a malformed body's error.
func bad(format string, args ...any) error {
	return &checkpoint.DecodeError{Err: checkpoint.ErrMalformed, Where: "body", Detail: fmt.Sprintf(format, args...)}
}

// restorer turns a checkpoint's slots into values.
type restorer struct {
	strs []string // the string table
	heap []Value  // every object, allocated
	slab []Value  // room for the slices a machine keeps: lists' elements, globals, stack
	tmp  []Value  // reused for the items of other objects, copied out of it
}

func (rs *restorer) val(v checkpoint.Val) (Value, error) {
	switch v.Kind {
	case checkpoint.ValNil:
		return nilValue, nil
	case checkpoint.ValBool:
		if v.N > 1 {
			return nilValue, bad("bool %d", v.N)
		}
		return Value{k: Bool, n: v.N}, nil
	case checkpoint.ValInt:
		return Value{k: Int, n: v.N}, nil
	case checkpoint.ValFloat:
		return Value{k: Float, n: v.N}, nil
	case checkpoint.ValStr:
		if len(v.S) > MaxString {
			return nilValue, bad("string of %d bytes", len(v.S))
		}
		return strValue(v.S), nil
	case checkpoint.ValBuiltin:
		if v.N >= uint64(len(builtins)) {
			return nilValue, bad("built-in %d", v.N)
		}
		return Value{k: Builtin, n: v.N}, nil
	case checkpoint.ValUndef:
		return undef, nil
	case checkpoint.ValStrRef:
		s := rs.strs[v.N] // in range: checked by checkpoint.Decode
		if len(s) > MaxString {
			return nilValue, bad("string of %d bytes", len(s))
		}
		return strValue(s), nil
	case checkpoint.ValRef:
		return rs.heap[v.N], nil // in range: checked by checkpoint.Decode
	}
	return nilValue, bad("slot kind %d", v.Kind)
}

// vals converts vs into the slab, for a slice the machine keeps.
func (rs *restorer) vals(vs []checkpoint.Val) ([]Value, error) {
	if len(vs) > len(rs.slab) { // only if the body changed under us; stay correct
		rs.slab = make([]Value, len(vs))
	}
	out := rs.slab[:len(vs):len(vs)]
	rs.slab = rs.slab[len(vs):]
	return out, rs.fill(out, vs)
}

// scratch converts vs into a reused buffer, valid until the next call.
func (rs *restorer) scratch(vs []checkpoint.Val) ([]Value, error) {
	if len(vs) > cap(rs.tmp) {
		rs.tmp = make([]Value, len(vs))
	}
	out := rs.tmp[:len(vs)]
	return out, rs.fill(out, vs)
}

func (rs *restorer) fill(out []Value, vs []checkpoint.Val) error {
	for i, v := range vs {
		switch v.Kind { // the common kinds inline; calls are dear in the sandbox
		case checkpoint.ValInt:
			out[i] = Value{k: Int, n: v.N}
			continue
		case checkpoint.ValRef:
			out[i] = rs.heap[v.N] // in range: checked by checkpoint.Decode
			continue
		case checkpoint.ValStr:
			if len(v.S) <= MaxString {
				out[i] = strValue(v.S)
				continue
			}
		}
		x, err := rs.val(v)
		if err != nil {
			return err
		}
		out[i] = x
	}
	return nil
}
