// value.go holds Value, the closed set of Rune values, and its heap objects.

package machine

import (
	"math"
	"unsafe"

	"github.com/runehost/runehost/guest/compile"
)

// Kind is the kind of a Value.
type Kind uint8

// The kinds. Cell, Iter and Undef never reach a prog's hands.
const (
	Nil Kind = iota
	Bool
	Int
	Float
	Str
	List
	Map
	Func
	Builtin
	Error
	cellKind
	iterKind
	undefKind
)

var kindNames = [...]string{"nil", "bool", "int", "float", "str", "list", "map", "fn", "fn", "error", "cell", "iterator", "undefined"}

func (k Kind) String() string { return kindNames[k] }

// Value is one Rune value: 24 bytes, no interface boxing. Scalars live in n;
// a string's bytes and a heap object are reached through p, whose Go type is
// fixed by k. The zero Value is nil.
type Value struct {
	k Kind
	n uint64
	p unsafe.Pointer
}

// Heap objects. They hold no Go pointers outside this closed set.
type (
	listObj struct{ elems []Value }
	mapObj  struct {
		keys, vals []Value
		// Indexes, built once the map outgrows a linear scan: string keys
		// (the common case) by their text, int and bool keys by kind and bits.
		strIndex   map[string]int32
		otherIndex map[mapKey]int32
	}
	closureObj struct {
		fn    *compile.Funcode
		cells []*cellObj
	}
	cellObj struct{ v Value }
	iterObj struct {
		src Value
		pos int // next element; for a string, its byte offset
		idx int // for a string: the character index of pos
	}
	errorObj struct {
		kind, msg string
		data      Value
		pos       string
	}
)

var (
	nilValue   = Value{}
	trueValue  = Value{k: Bool, n: 1}
	falseValue = Value{k: Bool}
	undef      = Value{k: undefKind}
)

func boolValue(b bool) Value {
	if b {
		return trueValue
	}
	return falseValue
}

func intValue(i int64) Value     { return Value{k: Int, n: uint64(i)} }
func floatValue(f float64) Value { return Value{k: Float, n: math.Float64bits(f)} }
func strValue(s string) Value {
	return Value{k: Str, n: uint64(len(s)), p: unsafe.Pointer(unsafe.StringData(s))}
}
func listValue(elems []Value) Value { return Value{k: List, p: unsafe.Pointer(&listObj{elems: elems})} }
func errorValue(e *errorObj) Value  { return Value{k: Error, p: unsafe.Pointer(e)} }

func (v Value) Kind() Kind        { return v.k }
func (v Value) int() int64        { return int64(v.n) }
func (v Value) float() float64    { return math.Float64frombits(v.n) }
func (v Value) str() string       { return unsafe.String((*byte)(v.p), int(v.n)) }
func (v Value) list() *listObj    { return (*listObj)(v.p) }
func (v Value) mapv() *mapObj     { return (*mapObj)(v.p) }
func (v Value) fn() *closureObj   { return (*closureObj)(v.p) }
func (v Value) cell() *cellObj    { return (*cellObj)(v.p) }
func (v Value) iter() *iterObj    { return (*iterObj)(v.p) }
func (v Value) errObj() *errorObj { return (*errorObj)(v.p) }

// truth is a value's truthiness: nil, false, 0, 0.0, "", [] and {} are false.
func truth(v Value) bool {
	switch v.k {
	case Nil:
		return false
	case Bool, Int, Str:
		return v.n != 0
	case Float:
		return v.float() != 0
	case List:
		return len(v.list().elems) != 0
	case Map:
		return len(v.mapv().keys) != 0
	}
	return true
}

// typeName is the name type() returns.
func typeName(v Value) string { return v.k.String() }

// mapKey is the comparable form of a map key (str, int or bool).
type mapKey struct {
	k Kind
	n uint64
	s string
}

func keyOf(v Value) (mapKey, bool) {
	switch v.k {
	case Str:
		return mapKey{k: Str, s: v.str()}, true
	case Int, Bool:
		return mapKey{k: v.k, n: v.n}, true
	}
	return mapKey{}, false
}

// linearMax is the size up to which maps are searched without an index.
const linearMax = 8

func (m *mapObj) find(v Value) int {
	if m.strIndex != nil {
		var i int32
		var ok bool
		if v.k == Str {
			i, ok = m.strIndex[v.str()]
		} else {
			i, ok = m.otherIndex[mapKey{k: v.k, n: v.n}]
		}
		if ok {
			return int(i)
		}
		return -1
	}
	for i, k := range m.keys {
		if k.k == v.k && k.n == v.n && (k.k != Str || k.str() == v.str()) {
			return i
		}
	}
	return -1
}

func (m *mapObj) indexKey(k Value, i int) {
	if k.k == Str {
		m.strIndex[k.str()] = int32(i)
	} else {
		m.otherIndex[mapKey{k: k.k, n: k.n}] = int32(i)
	}
}

// get returns the value for key and whether it was present.
func (m *mapObj) get(key Value) (Value, bool) {
	if i := m.find(key); i >= 0 {
		return m.vals[i], true
	}
	return nilValue, false
}

// set inserts or replaces; it reports whether a new entry was added.
func (m *mapObj) set(key, val Value) bool {
	if i := m.find(key); i >= 0 {
		m.vals[i] = val
		return false
	}
	m.keys = append(m.keys, key)
	m.vals = append(m.vals, val)
	if m.strIndex != nil {
		m.indexKey(key, len(m.keys)-1)
	} else if len(m.keys) > linearMax {
		m.reindex()
	}
	return true
}

func (m *mapObj) reindex() {
	if len(m.keys) <= linearMax {
		m.strIndex, m.otherIndex = nil, nil
		return
	}
	m.strIndex = make(map[string]int32, len(m.keys))
	m.otherIndex = make(map[mapKey]int32)
	for i, k := range m.keys {
		m.indexKey(k, i)
	}
}

// remove deletes key, keeping insertion order; it reports whether it was there.
func (m *mapObj) remove(key Value) bool {
	i := m.find(key)
	if i < 0 {
		return false
	}
	m.keys = append(m.keys[:i], m.keys[i+1:]...)
	m.vals = append(m.vals[:i], m.vals[i+1:]...)
	m.reindex()
	return true
}
