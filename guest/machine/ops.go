// ops.go holds the operators: arithmetic, comparison, indexing and iteration.

package machine

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

func ptr[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

var opSymbols = map[compile.Opcode]string{
	compile.ADD: "+", compile.SUB: "-", compile.MUL: "*", compile.DIV: "/", compile.MOD: "%",
}

func opTypeError(op compile.Opcode, x, y Value) *rtError {
	return typeErrorf("unsupported operands for %s: %s and %s", opSymbols[op], typeName(x), typeName(y))
}

// numbers returns x and y as floats when both are numbers.
func numbers(x, y Value) (float64, float64, bool) {
	var a, b float64
	switch x.k {
	case Int:
		a = float64(x.int())
	case Float:
		a = x.float()
	default:
		return 0, 0, false
	}
	switch y.k {
	case Int:
		b = float64(y.int())
	case Float:
		b = y.float()
	default:
		return 0, 0, false
	}
	return a, b, true
}

// add is + for everything but two ints: floats, string and list concatenation.
func (m *Machine) add(x, y Value) (Value, *rtError) {
	switch {
	case x.k == Str && y.k == Str:
		return m.newString(x.str() + y.str())
	case x.k == List && y.k == List:
		a, b := x.list().elems, y.list().elems
		if err := checkListLen(len(a) + len(b)); err != nil {
			return nilValue, err
		}
		m.chargeElems(len(a) + len(b))
		r := make([]Value, 0, len(a)+len(b))
		return listValue(append(append(r, a...), b...)), nil
	}
	return arith(compile.ADD, x, y)
}

// arith is + and - on numbers; ints overflow with an error.
func arith(op compile.Opcode, x, y Value) (Value, *rtError) {
	if x.k == Int && y.k == Int {
		a, b := x.int(), y.int()
		switch op {
		case compile.ADD:
			r := a + b
			if (r^a)&(r^b) < 0 {
				return nilValue, errorf(KindOverflow, "integer overflow in %d + %d", a, b)
			}
			return intValue(r), nil
		case compile.SUB:
			r := a - b
			if (a^b)&(r^a) < 0 {
				return nilValue, errorf(KindOverflow, "integer overflow in %d - %d", a, b)
			}
			return intValue(r), nil
		}
	}
	a, b, ok := numbers(x, y)
	if !ok {
		return nilValue, opTypeError(op, x, y)
	}
	if op == compile.ADD {
		return floatValue(float64(a + b)), nil
	}
	return floatValue(float64(a - b)), nil
}

// mulDivMod is *, / and %: ints truncate toward zero, like Go.
func (m *Machine) mulDivMod(op compile.Opcode, x, y Value) (Value, *rtError) {
	if x.k == Int && y.k == Int {
		a, b := x.int(), y.int()
		switch op {
		case compile.MUL:
			r := a * b
			if a != 0 && (r/a != b || (a == -1 && b == minInt) || (b == -1 && a == minInt)) {
				return nilValue, errorf(KindOverflow, "integer overflow in %d * %d", a, b)
			}
			return intValue(r), nil
		case compile.DIV, compile.MOD:
			if b == 0 {
				return nilValue, errorf(KindZeroDivision, "%s by zero", map[compile.Opcode]string{compile.DIV: "division", compile.MOD: "modulo"}[op])
			}
			if a == minInt && b == -1 {
				if op == compile.MOD {
					return intValue(0), nil
				}
				return nilValue, errorf(KindOverflow, "integer overflow in %d / %d", a, b)
			}
			if op == compile.DIV {
				return intValue(a / b), nil
			}
			return intValue(a % b), nil
		}
	}
	if op == compile.MUL {
		// str * int and list * int repeat.
		if (x.k == Str || x.k == List) && y.k == Int {
			return m.repeat(x, y.int())
		}
	}
	a, b, ok := numbers(x, y)
	if !ok {
		return nilValue, opTypeError(op, x, y)
	}
	switch op {
	case compile.MUL:
		return floatValue(float64(a * b)), nil
	case compile.DIV:
		if b == 0 {
			return nilValue, errorf(KindZeroDivision, "division by zero")
		}
		return floatValue(float64(a / b)), nil
	default:
		if b == 0 {
			return nilValue, errorf(KindZeroDivision, "modulo by zero")
		}
		return floatValue(math.Mod(a, b)), nil
	}
}

func (m *Machine) repeat(x Value, n int64) (Value, *rtError) {
	if n < 0 {
		n = 0
	}
	if x.k == Str {
		s := x.str()
		if n > 0 && int64(len(s)) > int64(MaxString)/n {
			return nilValue, errorf(KindLimit, "string of %d bytes repeated %d times exceeds the limit of %d", len(s), n, MaxString)
		}
		return m.newString(strings.Repeat(s, int(n)))
	}
	elems := x.list().elems
	if len(elems) == 0 {
		return listValue(nil), nil
	}
	if n > 0 && int64(len(elems)) > int64(MaxList)/n {
		return nilValue, errorf(KindLimit, "list of %d elements repeated %d times exceeds the limit of %d", len(elems), n, MaxList)
	}
	r := make([]Value, 0, len(elems)*int(n))
	for i := int64(0); i < n; i++ {
		r = append(r, elems...)
	}
	m.chargeElems(len(r))
	return listValue(r), nil
}

// equal is ==: numbers by value, strings by content, lists and maps deeply
// (maps regardless of order), functions and errors by identity.
func (m *Machine) equal(x, y Value, depth int) (bool, *rtError) {
	if depth > MaxDepth {
		return false, errorf(KindLimit, "comparison nested more than %d deep", MaxDepth)
	}
	if x.k != y.k {
		c, ok := compareNumbers(x, y)
		return ok && c == 0, nil
	}
	switch x.k {
	case Nil:
		return true, nil
	case Bool, Int, Builtin:
		return x.n == y.n, nil
	case Float:
		return x.float() == y.float(), nil
	case Str:
		m.chargeBytes(int(x.n))
		return x.n == y.n && x.str() == y.str(), nil
	case List:
		a, b := x.list().elems, y.list().elems
		if x.p == y.p {
			return true, nil
		}
		if err := m.work(); err != nil {
			return false, err
		}
		if len(a) != len(b) {
			return false, nil
		}
		m.chargeElems(len(a))
		for i := range a {
			if eq, err := m.equal(a[i], b[i], depth+1); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case Map:
		a, b := x.mapv(), y.mapv()
		if a == b {
			return true, nil
		}
		if err := m.work(); err != nil {
			return false, err
		}
		if len(a.keys) != len(b.keys) {
			return false, nil
		}
		m.chargeElems(len(a.keys))
		for i, k := range a.keys {
			bv, ok := b.get(k)
			if !ok {
				return false, nil
			}
			if eq, err := m.equal(a.vals[i], bv, depth+1); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	return x.p == y.p, nil
}

// unordered is what compare returns when a NaN is involved.
const unordered = 2

// compareIntFloat orders an int and a float exactly, without rounding the
// int to a float (9007199254740993 > 9007199254740992.0).
func compareIntFloat(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return unordered
	case f >= 1<<63:
		return -1
	case f < -(1 << 63):
		return 1
	}
	t := math.Trunc(f)
	switch ti := int64(t); {
	case i < ti:
		return -1
	case i > ti:
		return 1
	case f > t:
		return -1
	case f < t:
		return 1
	}
	return 0
}

// compareNumbers orders two numbers of any kinds, exactly.
func compareNumbers(x, y Value) (int, bool) {
	switch {
	case x.k == Int && y.k == Int:
		return cmp.Compare(x.int(), y.int()), true
	case x.k == Int && y.k == Float:
		return compareIntFloat(x.int(), y.float()), true
	case x.k == Float && y.k == Int:
		c := compareIntFloat(y.int(), x.float())
		if c != unordered {
			c = -c
		}
		return c, true
	case x.k == Float && y.k == Float:
		a, b := x.float(), y.float()
		switch {
		case a < b:
			return -1, true
		case a > b:
			return 1, true
		case a == b:
			return 0, true
		}
		return unordered, true
	}
	return 0, false
}

// compare orders numbers and strings; it returns -1, 0, 1 or unordered.
func compare(x, y Value) (int, *rtError) {
	if x.k == Str && y.k == Str {
		return strings.Compare(x.str(), y.str()), nil
	}
	c, ok := compareNumbers(x, y)
	if !ok {
		return 0, typeErrorf("cannot compare %s with %s", typeName(x), typeName(y))
	}
	return c, nil
}

// index is x[i] for lists, strings (by character) and maps.
func (m *Machine) index(x, i Value) (Value, *rtError) {
	switch x.k {
	case List:
		elems := x.list().elems
		j, err := listIndex(i, len(elems))
		if err != nil {
			return nilValue, err
		}
		return elems[j], nil
	case Str:
		if i.k != Int {
			return nilValue, typeErrorf("string index must be int, not %s", typeName(i))
		}
		s := x.str()
		m.chargeBytes(len(s))
		r, ok := runeAt(s, i.int())
		if !ok {
			return nilValue, errorf(KindIndex, "index %d out of range for string of %d characters", i.int(), utf8.RuneCountInString(s))
		}
		return strValue(r), nil
	case Map:
		if !isKey(i) {
			return nilValue, typeErrorf("map key must be str, int or bool, not %s", typeName(i))
		}
		v, ok := x.mapv().get(i)
		if !ok {
			return nilValue, errorf(KindKey, "key %s not found", quoteKey(i))
		}
		return v, nil
	case Error:
		if i.k == Str {
			return m.attr(x, i)
		}
	}
	return nilValue, typeErrorf("cannot index %s", typeName(x))
}

// runeAt returns the character at index i (negative counts from the end).
func runeAt(s string, i int64) (string, bool) {
	if i < 0 {
		i += int64(utf8.RuneCountInString(s))
		if i < 0 {
			return "", false
		}
	}
	for off, n := 0, int64(0); off < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[off:])
		if n == i {
			return s[off : off+size], true
		}
		off += size
	}
	return "", false
}

func listIndex(i Value, n int) (int, *rtError) {
	if i.k != Int {
		return 0, typeErrorf("list index must be int, not %s", typeName(i))
	}
	j := i.int()
	if j < 0 {
		j += int64(n)
	}
	if j < 0 || j >= int64(n) {
		return 0, errorf(KindIndex, "index %d out of range for list of %d", i.int(), n)
	}
	return int(j), nil
}

func quoteKey(k Value) string {
	if k.k == Str {
		return checkpoint.Quote(k.str())
	}
	if k.k == Bool {
		return strconv.FormatBool(k.n != 0)
	}
	return strconv.FormatInt(k.int(), 10)
}

// setIndex is x[i] = v for lists and maps.
func (m *Machine) setIndex(x, i, v Value) *rtError {
	switch x.k {
	case List:
		elems := x.list().elems
		j, err := listIndex(i, len(elems))
		if err != nil {
			return err
		}
		elems[j] = v
		return nil
	case Map:
		if !isKey(i) {
			return typeErrorf("map key must be str, int or bool, not %s", typeName(i))
		}
		mo := x.mapv()
		if len(mo.keys) >= MaxMap && mo.find(i) < 0 {
			return errorf(KindLimit, "map of %d entries exceeds the limit of %d", len(mo.keys)+1, MaxMap)
		}
		mo.set(i, v)
		return nil
	}
	return typeErrorf("cannot assign to an element of %s", typeName(x))
}

// attr is x.name: a map entry, or a field of an error.
func (m *Machine) attr(x, name Value) (Value, *rtError) {
	switch x.k {
	case Map:
		v, ok := x.mapv().get(name)
		if !ok {
			return nilValue, errorf(KindKey, "key %s not found", quoteKey(name))
		}
		return v, nil
	case Error:
		e := x.errObj()
		switch name.str() {
		case "kind":
			return strValue(e.kind), nil
		case "msg":
			return strValue(e.msg), nil
		case "data":
			return e.data, nil
		case "pos":
			return strValue(e.pos), nil
		}
		return nilValue, errorf(KindKey, "error has no field %s (it has kind, msg, data and pos)", quoteKey(name))
	}
	return nilValue, typeErrorf("%s has no fields (.%s)", typeName(x), name.str())
}

// iterate makes an iterator over a list, map (its keys) or string (its characters).
func (m *Machine) iterate(x Value) (Value, *rtError) {
	switch x.k {
	case List, Map, Str:
		return Value{k: iterKind, p: ptr(&iterObj{src: x})}, nil
	}
	return nilValue, typeErrorf("cannot iterate over %s", typeName(x))
}

// next advances it; two asks for (index or key, value) rather than one value.
func (m *Machine) next(it *iterObj, two bool) (k, v Value, ok bool) {
	switch it.src.k {
	case List:
		elems := it.src.list().elems
		if it.pos >= len(elems) {
			return
		}
		k, v = intValue(int64(it.pos)), elems[it.pos]
	case Map:
		mo := it.src.mapv()
		if it.pos >= len(mo.keys) {
			return
		}
		k, v = mo.keys[it.pos], mo.vals[it.pos]
		if !two {
			v = k
		}
	case Str:
		s := it.src.str()
		if it.pos >= len(s) {
			return
		}
		_, size := utf8.DecodeRuneInString(s[it.pos:])
		k, v = intValue(int64(it.idx)), strValue(s[it.pos:it.pos+size])
		it.pos += size
		it.idx++
		return k, v, true
	}
	it.pos++
	return k, v, true
}
