// data.go converts between values and the data values that cross the boundary.

package machine

import (
	"fmt"
	"math"
	"strings"

	"github.com/runehost/runehost/checkpoint"
)

// MaxDataNodes bounds the nodes of one data value, so that a value built
// with shared structure cannot expand exponentially on its way out.
const MaxDataNodes = 1 << 22

// toData converts v to a data value tree; functions, errors and cycles are not data.
func (m *Machine) toData(v Value, _ int) (any, *rtError) {
	d, _, err := toDataCounted(v)
	return d, err
}

// toDataCounted is toData that also says how many nodes it produced.
func toDataCounted(v Value) (any, int, *rtError) {
	w := &dataWalk{}
	d, err := w.walk(v, 0)
	return d, w.nodes, err
}

// dataWalk counts what a conversion produced: nodes, and an upper bound
// on the encoded size (9 bytes a node plus string bytes).
type dataWalk struct{ nodes, size int }

func (w *dataWalk) walk(v Value, depth int) (any, *rtError) {
	w.nodes++
	w.size += 9
	if v.k == Str {
		w.size += int(v.n)
	}
	if w.nodes > MaxDataNodes {
		return nil, errorf(KindLimit, "value has more than %d parts", MaxDataNodes)
	}
	if w.size > checkpoint.MaxDataSize {
		return nil, errorf(KindLimit, "value is larger than the data limit of %d bytes", checkpoint.MaxDataSize)
	}
	if depth > MaxDepth {
		return nil, errorf(KindLimit, "value nested more than %d deep", MaxDepth)
	}
	switch v.k {
	case Nil:
		return nil, nil
	case Bool:
		return v.n != 0, nil
	case Int:
		return v.int(), nil
	case Float:
		return v.float(), nil
	case Str:
		return v.str(), nil
	case List:
		elems := v.list().elems
		out := make([]any, len(elems))
		for i, e := range elems {
			d, err := w.walk(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case Map:
		mo := v.mapv()
		out := &checkpoint.Map{Keys: make([]any, len(mo.keys)), Values: make([]any, len(mo.keys))}
		for i, k := range mo.keys {
			out.Keys[i], _ = w.walk(k, depth+1)
			d, err := w.walk(mo.vals[i], depth+1)
			if err != nil {
				return nil, err
			}
			out.Values[i] = d
		}
		return out, nil
	}
	return nil, typeErrorf("%s is not data", article(typeName(v)))
}

// CheckData says whether d, a data value tree, is one a machine takes, as
// fromData would: strings, lists and maps within their limits, nesting at
// most MaxDepth, map keys of key types. A prog's input and an event's
// payload are checked with it before anything is admitted or delivered.
func CheckData(d any) error { return checkData(d, 0) }

func checkData(d any, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("data nested more than %d deep", MaxDepth)
	}
	switch d := d.(type) {
	case nil, bool, int64, int, float64:
		return nil
	case string:
		if len(d) > MaxString {
			return fmt.Errorf("string of %d bytes exceeds the limit of %d", len(d), MaxString)
		}
		return nil
	case []any:
		if len(d) > MaxList {
			return fmt.Errorf("list of %d elements exceeds the limit of %d", len(d), MaxList)
		}
		for _, e := range d {
			if err := checkData(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case *checkpoint.Map:
		if len(d.Keys) > MaxMap || len(d.Keys) != len(d.Values) {
			return fmt.Errorf("malformed or oversized map of %d keys (the limit is %d)", len(d.Keys), MaxMap)
		}
		for i, k := range d.Keys {
			switch k.(type) {
			case string, int64, int, bool:
			default:
				return fmt.Errorf("map key of type %T", k)
			}
			if err := checkData(k, depth+1); err != nil {
				return err
			}
			if err := checkData(d.Values[i], depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("not a data value: %T", d)
}

// fromData converts a data value tree into a value.
func (m *Machine) fromData(d any, depth int) (Value, error) {
	if depth > MaxDepth {
		return nilValue, fmt.Errorf("data nested more than %d deep", MaxDepth)
	}
	switch d := d.(type) {
	case nil:
		return nilValue, nil
	case bool:
		return boolValue(d), nil
	case int64:
		return intValue(d), nil
	case int:
		return intValue(int64(d)), nil
	case float64:
		if math.IsNaN(d) {
			d = math.NaN() // one NaN
		}
		return floatValue(d), nil
	case string:
		if len(d) > MaxString {
			return nilValue, fmt.Errorf("string of %d bytes exceeds the limit of %d", len(d), MaxString)
		}
		return strValue(d), nil
	case []any:
		if len(d) > MaxList {
			return nilValue, fmt.Errorf("list of %d elements exceeds the limit of %d", len(d), MaxList)
		}
		elems := make([]Value, len(d))
		for i, e := range d {
			v, err := m.fromData(e, depth+1)
			if err != nil {
				return nilValue, err
			}
			elems[i] = v
		}
		return listValue(elems), nil
	case *checkpoint.Map:
		if len(d.Keys) > MaxMap || len(d.Keys) != len(d.Values) {
			return nilValue, fmt.Errorf("malformed or oversized map of %d keys", len(d.Keys))
		}
		mo := &mapObj{}
		for i, k := range d.Keys {
			kv, err := m.fromData(k, depth+1)
			if err != nil {
				return nilValue, err
			}
			if !isKey(kv) {
				return nilValue, fmt.Errorf("map key of type %T", k)
			}
			v, err := m.fromData(d.Values[i], depth+1)
			if err != nil {
				return nilValue, err
			}
			mo.set(kv, v)
		}
		return Value{k: Map, p: ptr(mo)}, nil
	}
	return nilValue, fmt.Errorf("not a data value: %T", d)
}

// article puts "a" or "an" before a type name.
func article(name string) string {
	if name != "" && strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}
