// builtins.go holds the built-in functions, in the order of compile.Builtins.
//
// No built-in takes a callback, so Go never sits between two Rune frames.
// Built-ins whose work grows with their input charge steps for it.

package machine

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

type builtin struct {
	name     string
	min, max int // argument count; max < 0 means any
	fn       func(m *Machine, args []Value) (Value, *rtError)
}

var builtins []builtin

func init() {
	table := []builtin{
		{"len", 1, 1, bLen},
		{"str", 1, 1, bStr},
		{"int", 1, 1, bInt},
		{"float", 1, 1, bFloat},
		{"bool", 1, 1, func(m *Machine, a []Value) (Value, *rtError) { return boolValue(truth(a[0])), nil }},
		{"type", 1, 1, func(m *Machine, a []Value) (Value, *rtError) { return strValue(typeName(a[0])), nil }},
		{"repr", 1, 1, func(m *Machine, a []Value) (Value, *rtError) { return m.strResult(m.repr(a[0])) }},
		{"keys", 1, 1, bKeys},
		{"values", 1, 1, bValues},
		{"append", 2, -1, bAppend},
		{"insert", 3, 3, bInsert},
		{"pop", 1, 2, bPop},
		{"contains", 2, 2, bContains},
		{"index_of", 2, 2, bIndexOf},
		{"get", 2, 3, bGet},
		{"delete", 2, 2, bDelete},
		{"split", 2, 2, bSplit},
		{"join", 2, 2, bJoin},
		{"slice", 2, 3, bSlice},
		{"sort", 1, 2, bSort},
		{"reverse", 1, 1, bReverse},
		{"starts_with", 2, 2, strPred("starts_with", strings.HasPrefix)},
		{"ends_with", 2, 2, strPred("ends_with", strings.HasSuffix)},
		{"trim", 1, 1, strMap("trim", strings.TrimSpace)},
		{"upper", 1, 1, strMap("upper", strings.ToUpper)},
		{"lower", 1, 1, strMap("lower", strings.ToLower)},
		{"replace", 3, 3, bReplace},
		{"json_encode", 1, 1, func(m *Machine, a []Value) (Value, *rtError) { return m.strResult(m.jsonEncode(a[0])) }},
		{"json_decode", 1, 1, bJSONDecode},
		{"min", 1, -1, func(m *Machine, a []Value) (Value, *rtError) { return m.extreme("min", a, -1) }},
		{"max", 1, -1, func(m *Machine, a []Value) (Value, *rtError) { return m.extreme("max", a, 1) }},
		{"abs", 1, 1, bAbs},
		{"range", 1, 3, bRange},
		{"sqrt", 1, 1, bSqrt},
		{"floor", 1, 1, rounder("floor", math.Floor)},
		{"ceil", 1, 1, rounder("ceil", math.Ceil)},
		{"round", 1, 1, rounder("round", math.RoundToEven)},
		{"error", 1, 3, bError},
		{"emit", 1, 2, bEmit},
		{"log", 1, -1, bLog},
		{"now", 0, 0, func(m *Machine, a []Value) (Value, *rtError) { return intValue(m.clock), nil }},
		{"random", 0, 0, func(m *Machine, a []Value) (Value, *rtError) { return floatValue(m.random()), nil }},
		{"random_int", 2, 2, bRandomInt},
	}
	if len(table) != len(compile.Builtins) {
		panic("machine: built-in table does not match compile.Builtins")
	}
	for i, b := range table {
		if b.name != compile.Builtins[i] {
			panic("machine: built-in " + b.name + " is out of order")
		}
		fn := b.fn
		name, lo, hi := b.name, b.min, b.max
		b.fn = func(m *Machine, args []Value) (Value, *rtError) {
			if len(args) < lo || (hi >= 0 && len(args) > hi) {
				return nilValue, arityError(name, lo, hi, len(args))
			}
			return fn(m, args)
		}
		table[i] = b
	}
	builtins = table
}

func arityError(name string, lo, hi, got int) *rtError {
	switch {
	case lo == hi:
		return errorf(KindCall, "%s takes %d argument%s, got %d", name, lo, plural(lo), got)
	case hi < 0:
		return errorf(KindCall, "%s takes at least %d argument%s, got %d", name, lo, plural(lo), got)
	}
	return errorf(KindCall, "%s takes %d to %d arguments, got %d", name, lo, hi, got)
}

func argError(fn string, i int, want string, got Value) *rtError {
	return typeErrorf("%s: argument %d must be %s, not %s", fn, i+1, want, typeName(got))
}

func (m *Machine) strResult(s string, err *rtError) (Value, *rtError) {
	if err != nil {
		return nilValue, err
	}
	return strValue(s), nil
}

func bLen(m *Machine, a []Value) (Value, *rtError) {
	switch x := a[0]; x.k {
	case Str:
		m.chargeBytes(int(x.n))
		return intValue(int64(utf8.RuneCountInString(x.str()))), nil
	case List:
		return intValue(int64(len(x.list().elems))), nil
	case Map:
		return intValue(int64(len(x.mapv().keys))), nil
	}
	return nilValue, argError("len", 0, "str, list or map", a[0])
}

func bStr(m *Machine, a []Value) (Value, *rtError) {
	switch a[0].k {
	case Str:
		return a[0], nil
	case Int:
		return strValue(strconv.FormatInt(a[0].int(), 10)), nil
	}
	return m.strResult(m.repr(a[0]))
}

func bInt(m *Machine, a []Value) (Value, *rtError) {
	switch x := a[0]; x.k {
	case Int:
		return x, nil
	case Bool:
		return intValue(int64(x.n)), nil
	case Float:
		f := math.Trunc(x.float())
		if math.IsNaN(f) || f < -(1<<63) || f >= 1<<63 {
			return nilValue, errorf(KindOverflow, "int: %s does not fit in an int", formatFloat(x.float()))
		}
		return intValue(int64(f)), nil
	case Str:
		m.chargeBytes(int(x.n))
		i, err := strconv.ParseInt(strings.TrimSpace(x.str()), 10, 64)
		if err != nil {
			return nilValue, errorf(KindValue, "int: cannot parse %s", checkpoint.Quote(truncate(x.str(), 40)))
		}
		return intValue(i), nil
	}
	return nilValue, argError("int", 0, "int, float, bool or str", a[0])
}

func bFloat(m *Machine, a []Value) (Value, *rtError) {
	switch x := a[0]; x.k {
	case Float:
		return x, nil
	case Int:
		return floatValue(float64(x.int())), nil
	case Bool:
		return floatValue(float64(x.n)), nil
	case Str:
		m.chargeBytes(int(x.n))
		f, err := strconv.ParseFloat(strings.TrimSpace(x.str()), 64)
		if err != nil {
			return nilValue, errorf(KindValue, "float: cannot parse %s", checkpoint.Quote(truncate(x.str(), 40)))
		}
		return floatValue(f), nil
	}
	return nilValue, argError("float", 0, "int, float, bool or str", a[0])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func bKeys(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Map {
		return nilValue, argError("keys", 0, "map", a[0])
	}
	keys := a[0].mapv().keys
	m.chargeElems(len(keys))
	return listValue(slices.Clone(keys)), nil
}

func bValues(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Map {
		return nilValue, argError("values", 0, "map", a[0])
	}
	vals := a[0].mapv().vals
	m.chargeElems(len(vals))
	return listValue(slices.Clone(vals)), nil
}

func bAppend(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != List {
		return nilValue, argError("append", 0, "list", a[0])
	}
	l := a[0].list()
	if err := checkListLen(len(l.elems) + len(a) - 1); err != nil {
		return nilValue, err
	}
	l.elems = append(l.elems, a[1:]...)
	m.chargeElems(len(a) - 1)
	return a[0], nil
}

func bInsert(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != List {
		return nilValue, argError("insert", 0, "list", a[0])
	}
	if a[1].k != Int {
		return nilValue, argError("insert", 1, "int", a[1])
	}
	l := a[0].list()
	i := a[1].int()
	if i < 0 {
		i += int64(len(l.elems))
	}
	if i < 0 || i > int64(len(l.elems)) {
		return nilValue, errorf(KindIndex, "insert: index %d out of range for list of %d", a[1].int(), len(l.elems))
	}
	if err := checkListLen(len(l.elems) + 1); err != nil {
		return nilValue, err
	}
	l.elems = slices.Insert(l.elems, int(i), a[2])
	m.chargeElems(len(l.elems))
	return a[0], nil
}

func bPop(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != List {
		return nilValue, argError("pop", 0, "list", a[0])
	}
	l := a[0].list()
	if len(l.elems) == 0 {
		return nilValue, errorf(KindIndex, "pop from an empty list")
	}
	i := len(l.elems) - 1
	if len(a) == 2 {
		j, err := listIndex(a[1], len(l.elems))
		if err != nil {
			return nilValue, err
		}
		i = j
	}
	v := l.elems[i]
	l.elems = slices.Delete(l.elems, i, i+1)
	m.chargeElems(len(l.elems) - i)
	return v, nil
}

func bContains(m *Machine, a []Value) (Value, *rtError) {
	i, err := m.indexOf("contains", a)
	return boolValue(i >= 0), err
}

func bIndexOf(m *Machine, a []Value) (Value, *rtError) {
	i, err := m.indexOf("index_of", a)
	return intValue(int64(i)), err
}

// indexOf finds a[1] in a list (by ==), a string (a substring; the index
// counts characters) or a map (a key); -1 when absent.
func (m *Machine) indexOf(name string, a []Value) (int, *rtError) {
	switch x := a[0]; x.k {
	case List:
		for i, e := range x.list().elems {
			m.charge(1)
			eq, err := m.equal(e, a[1], 0)
			if err != nil {
				return -1, err
			}
			if eq {
				return i, nil
			}
		}
		return -1, nil
	case Str:
		if a[1].k != Str {
			return -1, argError(name, 1, "str", a[1])
		}
		m.chargeBytes(int(x.n))
		i := strings.Index(x.str(), a[1].str())
		if i < 0 {
			return -1, nil
		}
		return utf8.RuneCountInString(x.str()[:i]), nil
	case Map:
		if !isKey(a[1]) {
			return -1, nil
		}
		return x.mapv().find(a[1]), nil
	}
	return -1, argError(name, 0, "list, str or map", a[0])
}

func bGet(m *Machine, a []Value) (Value, *rtError) {
	def := nilValue
	if len(a) == 3 {
		def = a[2]
	}
	switch x := a[0]; x.k {
	case Map:
		if !isKey(a[1]) {
			return def, nil
		}
		if v, ok := x.mapv().get(a[1]); ok {
			return v, nil
		}
		return def, nil
	case List:
		if j, err := listIndex(a[1], len(x.list().elems)); err == nil {
			return x.list().elems[j], nil
		}
		return def, nil
	}
	return nilValue, argError("get", 0, "map or list", a[0])
}

func bDelete(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Map {
		return nilValue, argError("delete", 0, "map", a[0])
	}
	mo := a[0].mapv()
	if !isKey(a[1]) {
		return falseValue, nil
	}
	m.chargeElems(len(mo.keys))
	return boolValue(mo.remove(a[1])), nil
}

func bSplit(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Str {
		return nilValue, argError("split", 0, "str", a[0])
	}
	if a[1].k != Str {
		return nilValue, argError("split", 1, "str", a[1])
	}
	m.chargeBytes(int(a[0].n))
	parts := strings.Split(a[0].str(), a[1].str())
	if err := checkListLen(len(parts)); err != nil {
		return nilValue, err
	}
	m.chargeElems(len(parts))
	elems := make([]Value, len(parts))
	for i, p := range parts {
		elems[i] = strValue(p)
	}
	return listValue(elems), nil
}

func bJoin(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != List {
		return nilValue, argError("join", 0, "list", a[0])
	}
	if a[1].k != Str {
		return nilValue, argError("join", 1, "str", a[1])
	}
	elems := a[0].list().elems
	sep := a[1].str()
	n := len(sep) * max(len(elems)-1, 0)
	for i, e := range elems {
		if e.k != Str {
			return nilValue, typeErrorf("join: element %d is %s, not str", i, typeName(e))
		}
		n += int(e.n)
		if n > MaxString {
			return nilValue, errorf(KindLimit, "join: result exceeds the limit of %d bytes", MaxString)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for i, e := range elems {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(e.str())
	}
	m.chargeElems(len(elems))
	return m.newString(b.String())
}

// bSlice is slice(x, start[, end]) over a list or a string (by character);
// negative indices count from the end and out-of-range ones are clamped.
func bSlice(m *Machine, a []Value) (Value, *rtError) {
	for i := 1; i < len(a); i++ {
		if a[i].k != Int && !(i == 2 && a[i].k == Nil) {
			return nilValue, argError("slice", i, "int", a[i])
		}
	}
	bounds := func(n int) (int, int) {
		clamp := func(i int64) int {
			if i < 0 {
				i += int64(n)
			}
			return int(max(0, min(i, int64(n))))
		}
		lo, hi := clamp(a[1].int()), n
		if len(a) == 3 && a[2].k == Int {
			hi = clamp(a[2].int())
		}
		return lo, max(lo, hi)
	}
	switch x := a[0]; x.k {
	case List:
		elems := x.list().elems
		lo, hi := bounds(len(elems))
		m.chargeElems(hi - lo)
		return listValue(slices.Clone(elems[lo:hi])), nil
	case Str:
		s := x.str()
		m.chargeBytes(len(s))
		n := utf8.RuneCountInString(s)
		lo, hi := bounds(n)
		if n == len(s) {
			return strValue(s[lo:hi]), nil
		}
		return strValue(string([]rune(s)[lo:hi])), nil
	}
	return nilValue, argError("slice", 0, "list or str", a[0])
}

// bSort sorts a list in place (stable) and returns it; sort(l, "field")
// sorts maps by a field. It costs n*bits.Len(n) element steps whatever
// the algorithm does, so the cost cannot drift with the Go version.
func bSort(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != List {
		return nilValue, argError("sort", 0, "list", a[0])
	}
	elems := a[0].list().elems
	n := len(elems)
	m.chargeElems(n * bits.Len(uint(n)))
	if len(a) == 1 && allOfKind(elems, Int) {
		// Equal ints are indistinguishable, so an unstable sort will do;
		// sorted as plain ints, with no comparison function to call (a
		// call per comparison is most of the time in wasm).
		ints := make([]int64, n)
		for i, e := range elems {
			ints[i] = e.int()
		}
		slices.Sort(ints)
		for i, x := range ints {
			elems[i] = intValue(x)
		}
		return a[0], nil
	}
	if len(a) == 1 && allOfKind(elems, Str) {
		slices.SortFunc(elems, func(x, y Value) int { return strings.Compare(x.str(), y.str()) })
		return a[0], nil
	}
	keys := elems
	if len(a) == 2 {
		if a[1].k != Str {
			return nilValue, argError("sort", 1, "str (a field name)", a[1])
		}
		keys = make([]Value, n)
		for i, e := range elems {
			if e.k != Map {
				return nilValue, typeErrorf("sort: element %d is %s, not a map", i, typeName(e))
			}
			k, err := m.attr(e, a[1])
			if err != nil {
				return nilValue, err
			}
			keys[i] = k
		}
	}
	// Check comparability first, so the comparison below cannot fail.
	for i := 1; i < n; i++ {
		if _, err := compare(keys[0], keys[i]); err != nil {
			return nilValue, typeErrorf("sort: %s", err.msg)
		}
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(i, j int32) int {
		c, _ := compare(keys[i], keys[j])
		if c == unordered {
			// NaN sorts after every number, and equal to another NaN.
			ni, nj := math.IsNaN(numberOf(keys[i])), math.IsNaN(numberOf(keys[j]))
			switch {
			case ni && nj:
				return 0
			case ni:
				return 1
			}
			return -1
		}
		return c
	})
	sorted := make([]Value, n)
	for i, j := range idx {
		sorted[i] = elems[j]
	}
	copy(elems, sorted)
	return a[0], nil
}

func allOfKind(vs []Value, k Kind) bool {
	for _, v := range vs {
		if v.k != k {
			return false
		}
	}
	return true
}

func numberOf(v Value) float64 {
	if v.k == Float {
		return v.float()
	}
	return float64(v.int())
}

func bReverse(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != List {
		return nilValue, argError("reverse", 0, "list", a[0])
	}
	slices.Reverse(a[0].list().elems)
	m.chargeElems(len(a[0].list().elems))
	return a[0], nil
}

func strPred(name string, f func(s, t string) bool) func(m *Machine, a []Value) (Value, *rtError) {
	return func(m *Machine, a []Value) (Value, *rtError) {
		for i := range a {
			if a[i].k != Str {
				return nilValue, argError(name, i, "str", a[i])
			}
		}
		return boolValue(f(a[0].str(), a[1].str())), nil
	}
}

func strMap(name string, f func(string) string) func(m *Machine, a []Value) (Value, *rtError) {
	return func(m *Machine, a []Value) (Value, *rtError) {
		if a[0].k != Str {
			return nilValue, argError(name, 0, "str", a[0])
		}
		m.chargeBytes(int(a[0].n))
		return m.newString(f(a[0].str()))
	}
}

func bReplace(m *Machine, a []Value) (Value, *rtError) {
	for i := range a {
		if a[i].k != Str {
			return nilValue, argError("replace", i, "str", a[i])
		}
	}
	s, old, new := a[0].str(), a[1].str(), a[2].str()
	if n := strings.Count(s, old); n > 0 && len(new) > len(old) && int64(len(s))+int64(n)*int64(len(new)-len(old)) > MaxString {
		return nilValue, errorf(KindLimit, "replace: result exceeds the limit of %d bytes", MaxString)
	}
	m.chargeBytes(len(s))
	return m.newString(strings.ReplaceAll(s, old, new))
}

func bJSONDecode(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Str {
		return nilValue, argError("json_decode", 0, "str", a[0])
	}
	return m.jsonDecode(a[0].str())
}

// extreme is min and max: of its arguments, or of one list argument.
func (m *Machine) extreme(name string, a []Value, sign int) (Value, *rtError) {
	if len(a) == 1 {
		if a[0].k != List {
			return nilValue, argError(name, 0, "list (or give two or more arguments)", a[0])
		}
		a = a[0].list().elems
		if len(a) == 0 {
			return nilValue, errorf(KindValue, "%s of an empty list", name)
		}
		m.chargeElems(len(a))
	}
	best := a[0]
	for _, v := range a[1:] {
		c, err := compare(v, best)
		if err != nil {
			return nilValue, typeErrorf("%s: %s", name, err.msg)
		}
		if c == sign {
			best = v
		}
	}
	return best, nil
}

func bAbs(m *Machine, a []Value) (Value, *rtError) {
	switch x := a[0]; x.k {
	case Int:
		if x.int() == minInt {
			return nilValue, errorf(KindOverflow, "integer overflow in abs(%d)", x.int())
		}
		if x.int() < 0 {
			return intValue(-x.int()), nil
		}
		return x, nil
	case Float:
		return floatValue(math.Abs(x.float())), nil
	}
	return nilValue, argError("abs", 0, "int or float", a[0])
}

// bRange is range(n), range(start, stop) or range(start, stop, step): a list.
func bRange(m *Machine, a []Value) (Value, *rtError) {
	for i := range a {
		if a[i].k != Int {
			return nilValue, argError("range", i, "int", a[i])
		}
	}
	start, stop, step := int64(0), a[0].int(), int64(1)
	if len(a) >= 2 {
		start, stop = a[0].int(), a[1].int()
	}
	if len(a) == 3 {
		step = a[2].int()
		if step == 0 {
			return nilValue, errorf(KindValue, "range: step must not be zero")
		}
	}
	// Count in uint64: stop - start need not fit in an int64.
	var n uint64
	if step > 0 && stop > start {
		n = (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	} else if step < 0 && start > stop {
		n = (uint64(start)-uint64(stop)-1)/(-uint64(step)) + 1
	}
	if n > MaxList {
		return nilValue, errorf(KindLimit, "range of %d elements exceeds the limit of %d", n, MaxList)
	}
	elems := make([]Value, n)
	for i := range elems {
		elems[i] = intValue(start + int64(i)*step)
	}
	m.chargeElems(len(elems))
	return listValue(elems), nil
}

func bSqrt(m *Machine, a []Value) (Value, *rtError) {
	x, _, ok := numbers(a[0], intValue(0))
	if !ok {
		return nilValue, argError("sqrt", 0, "int or float", a[0])
	}
	if x < 0 {
		return nilValue, errorf(KindValue, "sqrt of a negative number")
	}
	return floatValue(math.Sqrt(x)), nil
}

// rounder makes floor, ceil and round: a float in, an int out.
func rounder(name string, f func(float64) float64) func(m *Machine, a []Value) (Value, *rtError) {
	return func(m *Machine, a []Value) (Value, *rtError) {
		switch x := a[0]; x.k {
		case Int:
			return x, nil
		case Float:
			r := f(x.float())
			if math.IsNaN(r) || r < -(1<<63) || r >= 1<<63 {
				return nilValue, errorf(KindOverflow, "%s: %s does not fit in an int", name, formatFloat(x.float()))
			}
			return intValue(int64(r)), nil
		}
		return nilValue, argError(name, 0, "int or float", a[0])
	}
}

// bError is error(msg), error(kind, msg) or error(kind, msg, data).
func bError(m *Machine, a []Value) (Value, *rtError) {
	for i := 0; i < len(a) && i < 2; i++ {
		if a[i].k != Str {
			return nilValue, argError("error", i, "str", a[i])
		}
	}
	e := &errorObj{kind: KindError, msg: a[0].str(), pos: m.position()}
	if len(a) >= 2 {
		if a[0].n == 0 {
			return nilValue, errorf(KindValue, "error: kind must not be empty")
		}
		e.kind, e.msg = a[0].str(), a[1].str()
		if len(e.kind) > MaxKind {
			return nilValue, errorf(KindLimit, "error: kind of %d bytes is longer than the limit of %d", len(e.kind), MaxKind)
		}
		if e.kind == KindSteps || e.kind == KindFault {
			return nilValue, errorf(KindValue, "error: kind %q is reserved for the machine", e.kind)
		}
	}
	if len(a) == 3 {
		e.data = a[2]
	}
	return errorValue(e), nil
}

func (m *Machine) emit(kind string, v Value) *rtError {
	d, nodes, err := toDataCounted(v)
	m.chargeElems(nodes)
	if err != nil {
		return errorf(err.kind, "emit: %s", err.msg)
	}
	b, e := checkpoint.EncodeData(d)
	if e != nil || len(b) > MaxEmit {
		return errorf(KindLimit, "emit: data of more than %d bytes", MaxEmit)
	}
	m.chargeBytes(len(b))
	m.emits = append(m.emits, Emit{Kind: kind, Data: b})
	return nil
}

// bEmit is emit(kind[, data]): an event for the host's run stream.
func bEmit(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Str {
		return nilValue, argError("emit", 0, "str", a[0])
	}
	if a[0].n == 0 {
		return nilValue, errorf(KindValue, "emit: kind must not be empty")
	}
	if a[0].n > MaxKind {
		return nilValue, errorf(KindLimit, "emit: kind of %d bytes is longer than the limit of %d", a[0].n, MaxKind)
	}
	v := nilValue
	if len(a) == 2 {
		v = a[1]
	}
	return nilValue, m.emit(a[0].str(), v)
}

// bLog is log(args...): emits kind "log" with the arguments joined by spaces.
func bLog(m *Machine, a []Value) (Value, *rtError) {
	parts := make([]string, len(a))
	size := 0
	for i, v := range a {
		s, err := m.toStr(v, 0)
		if err != nil {
			return nilValue, err
		}
		parts[i] = s
		if size += len(s) + 1; size > MaxString {
			return nilValue, errorf(KindLimit, "log: text exceeds the limit of %d bytes", MaxString)
		}
	}
	m.chargeBytes(size)
	s := strings.Join(parts, " ")
	if len(s) > MaxEmit-64 {
		s = truncate(s, MaxEmit-64) // room for the encoding around it
	}
	return nilValue, m.emit("log", strValue(s))
}

func bRandomInt(m *Machine, a []Value) (Value, *rtError) {
	if a[0].k != Int || a[1].k != Int {
		return nilValue, typeErrorf("random_int: arguments must be int, not %s and %s", typeName(a[0]), typeName(a[1]))
	}
	lo, hi := a[0].int(), a[1].int()
	if hi < lo {
		return nilValue, errorf(KindValue, "random_int: empty range [%d, %d]", lo, hi)
	}
	span := uint64(hi-lo) + 1
	if span == 0 { // the whole int64 range
		return intValue(int64(m.rngNext())), nil
	}
	// Rejection sampling keeps the draw uniform.
	limit := math.MaxUint64 - math.MaxUint64%span
	for {
		x := m.rngNext()
		if x < limit {
			return intValue(lo + int64(x%span)), nil
		}
	}
}
