// snapshot.go writes a machine out as a checkpoint (restore.go reads one
// back).

package machine

import (
	"sync"
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
			return nil, &checkpoint.SizeError{Size: len(body.Heap), Limit: checkpoint.MaxObjects, Objects: true}
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
			return nil, nil, &checkpoint.SizeError{Size: i + 1, Limit: checkpoint.MaxObjects, Objects: true}
		}
	}
	w.heap = hb
	// The strings are most of a large checkpoint: its size is known before
	// they are copied, and one over MaxSize is refused without them (in the
	// sandbox the copy of a heap near its memory limit would not fit).
	body := len(b) - start + 1 + headLen(detcbor.Array, len(w.queue)) + len(hb) + 1 + headLen(detcbor.Array, len(w.table))
	for _, str := range w.table {
		body += headLen(detcbor.Text, len(str)) + len(str)
	}
	if size := checkpoint.EncodedSize(start, body); size > checkpoint.MaxSize {
		return nil, nil, &checkpoint.SizeError{Size: size, Limit: checkpoint.MaxSize}
	}
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

// headLen is the length of a CBOR head of major type t for n.
func headLen(t byte, n int) int {
	var h [9]byte
	return len(detcbor.AppendHead(h[:0], t, uint64(n)))
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
