// restore.go reads a machine back from a checkpoint, validating everything
// a hostile checkpoint could get wrong.

package machine

import (
	"fmt"
	"unicode/utf8"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

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
				if k.k != Str && k.k != Int && k.k != Bool { // isKey, inline
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
