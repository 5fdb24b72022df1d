// value.go holds Value, the closed set of Rune values, and its heap objects.

package machine

import (
	"math"
	"math/bits"
	"math/rand/v2"
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
		// index, built once the map outgrows a linear scan, is an open
		// addressed table of entry numbers (i+1; 0 is empty), probed
		// linearly from hashKey's slot; at most half full. It is our own,
		// not a Go map, so that compiled code can look keys up (hash.go).
		index []int32
		seed  uint64 // hashKey's seed, random per map (as Go seeds its maps)
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

// isKey reports whether v may be a map key (str, int or bool).
func isKey(v Value) bool { return v.k == Str || v.k == Int || v.k == Bool }

// linearMax is the size up to which maps are searched without an index.
const linearMax = 8

func (m *mapObj) find(v Value) int {
	if m.index != nil {
		i, _ := m.probe(v)
		return i
	}
	for i, k := range m.keys {
		if sameKey(k, v) {
			return i
		}
	}
	return -1
}

// sameKey reports whether two map keys are the same key.
func sameKey(k, v Value) bool {
	return k.k == v.k && k.n == v.n && (k.k != Str || k.str() == v.str())
}

// probe looks v up in the index: its entry, or -1 and the empty slot
// where it would go.
func (m *mapObj) probe(v Value) (int, int) {
	mask := len(m.index) - 1
	for s := int(hashKey(v, m.seed)) & mask; ; s = (s + 1) & mask {
		e := m.index[s]
		if e == 0 {
			return -1, s
		}
		if sameKey(m.keys[e-1], v) {
			return int(e - 1), s
		}
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
	switch n := len(m.keys); {
	case m.index != nil && 2*n <= len(m.index):
		_, s := m.probe(key)
		m.index[s] = int32(n)
	case n > linearMax:
		m.reindex()
	}
	return true
}

// reindex builds the index anew, a quarter full (or drops it for a map
// small enough to scan).
func (m *mapObj) reindex() {
	n := len(m.keys)
	if n <= linearMax {
		m.index = nil
		return
	}
	if m.seed == 0 {
		m.seed = rand.Uint64() | 1
	}
	m.index = make([]int32, 1<<bits.Len(uint(4*n-1)))
	for i, k := range m.keys {
		_, s := m.probe(k)
		m.index[s] = int32(i + 1)
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
