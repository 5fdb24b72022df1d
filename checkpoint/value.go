// value.go holds Val, one machine slot, and the data values that cross the
// machine's boundary (input, state, act arguments and replies, results).

package checkpoint

import (
	"fmt"
	"github.com/runehost/runehost/internal/detcbor"
	"math"
)

// ValKind says what a Val holds.
type ValKind uint8

// The kinds of Val.
const (
	ValNil     ValKind = iota
	ValBool            // N is 0 or 1
	ValInt             // N holds the int64 bits
	ValFloat           // N holds the float64 bits
	ValStr             // S
	ValRef             // N indexes Machine.Heap
	ValBuiltin         // N indexes the built-in table
	ValUndef           // an unassigned slot
	ValStrRef          // N indexes Machine.Strings: a long string stored once
)

// Val is one machine slot: a scalar, a string, or a reference to a heap object.
type Val struct {
	Kind ValKind
	N    uint64
	S    string
}

// AppendVal appends the CBOR encoding of v.
func AppendVal(b []byte, v Val) []byte {
	switch v.Kind {
	case ValNil:
		return append(b, simpleNull)
	case ValBool:
		if v.N != 0 {
			return append(b, simpleTrue)
		}
		return append(b, simpleFalse)
	case ValInt:
		return detcbor.AppendInt(b, int64(v.N))
	case ValFloat:
		return appendFloat(b, math.Float64frombits(v.N))
	case ValStr:
		return detcbor.AppendText(b, v.S)
	case ValRef:
		return detcbor.AppendHead(detcbor.AppendHead(b, detcbor.Tag, TagRef), detcbor.Uint, v.N)
	case ValBuiltin:
		return detcbor.AppendHead(detcbor.AppendHead(b, detcbor.Tag, TagBuiltin), detcbor.Uint, v.N)
	case ValStrRef:
		return detcbor.AppendHead(detcbor.AppendHead(b, detcbor.Tag, TagString), detcbor.Uint, v.N)
	default:
		return append(b, simpleUndef)
	}
}

// MarshalCBOR implements cbor.Marshaler.
func (v Val) MarshalCBOR() ([]byte, error) { return AppendVal(nil, v), nil }

// UnmarshalCBOR implements cbor.Unmarshaler.
func (v *Val) UnmarshalCBOR(b []byte) error {
	r := &reader{Reader: detcbor.Reader{B: b}, where: "slot"}
	var err error
	*v, err = r.val()
	if err == nil && r.Off != len(b) {
		err = r.fail("trailing bytes")
	}
	return err
}

func (r *reader) val() (Val, error) {
	// Most slots are one-byte items: small ints, short strings, nil, bools.
	// Read those without the general path's calls (dear in the sandbox).
	if r.Off < len(r.B) {
		switch c := r.B[r.Off]; {
		case c < 0x18:
			r.Off++
			return Val{Kind: ValInt, N: uint64(c)}, nil
		case c >= 0x60 && c < 0x78 && r.s != "":
			n := int(c - 0x60)
			if end := r.Off + 1 + n; end <= len(r.s) && asciiString(r.s[r.Off+1:end]) {
				r.Off = end
				return Val{Kind: ValStr, S: r.s[end-n : end]}, nil
			}
		case c == simpleNull:
			r.Off++
			return Val{Kind: ValNil}, nil
		case c == 0x18 || c == 0x19: // a larger small int
			if v, n := shortUint(r.B[r.Off:]); n > 0 {
				r.Off += n
				return Val{Kind: ValInt, N: v}, nil
			}
		case c == 0xd9 && r.Off+3 < len(r.B) && r.B[r.Off+1] == TagRef>>8 && r.B[r.Off+2] == TagRef&0xff:
			if v, n := shortUint(r.B[r.Off+3:]); n > 0 { // a reference
				r.Off += 3 + n
				return Val{Kind: ValRef, N: v}, nil
			}
		}
	}
	return r.valSlow()
}

// shortUint reads an unsigned integer head of one to three bytes, in its
// shortest form, and says how many bytes it took; 0 for anything else.
func shortUint(b []byte) (uint64, int) {
	switch {
	case len(b) == 0:
	case b[0] < 0x18:
		return uint64(b[0]), 1
	case b[0] == 0x18 && len(b) > 1 && b[1] >= 0x18:
		return uint64(b[1]), 2
	case b[0] == 0x19 && len(b) > 2 && b[1] != 0:
		return uint64(b[1])<<8 | uint64(b[2]), 3
	}
	return 0, 0
}

// valSlow is val for every item (TestValFastPath holds the two equal).
func (r *reader) valSlow() (Val, error) {
	major, arg, info, err := r.head()
	if err != nil {
		return Val{}, err
	}
	switch major {
	case detcbor.Uint:
		if arg > math.MaxInt64 {
			return Val{}, r.fail("integer overflows int64")
		}
		return Val{Kind: ValInt, N: arg}, nil
	case detcbor.Neg:
		if arg > math.MaxInt64 {
			return Val{}, r.fail("integer overflows int64")
		}
		return Val{Kind: ValInt, N: uint64(-int64(arg) - 1)}, nil
	case detcbor.Text:
		s, err := r.text(arg)
		return Val{Kind: ValStr, S: s}, err
	case detcbor.Tag:
		kind := ValRef
		switch arg {
		case TagRef:
		case TagBuiltin:
			kind = ValBuiltin
		case TagString:
			kind = ValStrRef
		default:
			return Val{}, r.fail("unexpected tag %d in a slot", arg)
		}
		m, n, _, err := r.head()
		if err != nil {
			return Val{}, err
		}
		if m != detcbor.Uint {
			return Val{}, r.fail("tag %d must hold an unsigned integer", arg)
		}
		return Val{Kind: kind, N: n}, nil
	case detcbor.Simple:
		switch info {
		case 20:
			return Val{Kind: ValBool}, nil
		case 21:
			return Val{Kind: ValBool, N: 1}, nil
		case 22:
			return Val{Kind: ValNil}, nil
		case 23:
			return Val{Kind: ValUndef}, nil
		case 25, 26, 27:
			f, err := r.float(info, arg)
			return Val{Kind: ValFloat, N: math.Float64bits(f)}, err
		}
	}
	return Val{}, r.fail("unexpected CBOR item (major type %d) in a slot", major)
}

// asciiString reports whether s is all ASCII, so valid UTF-8 at a glance.
func asciiString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Data values cross the machine's boundary as trees: nil, bool, int64,
// float64, string, []any (a list) and *Map. They cannot hold functions,
// errors or cycles.

// Map is an insertion-ordered map. Keys are string, int64 or bool.
type Map struct {
	Keys   []any
	Values []any
}

// Set appends or replaces the entry for k.
func (m *Map) Set(k, v any) {
	for i, x := range m.Keys {
		if x == k {
			m.Values[i] = v
			return
		}
	}
	m.Keys = append(m.Keys, k)
	m.Values = append(m.Values, v)
}

// Get returns the value for k.
func (m *Map) Get(k any) (any, bool) {
	for i, x := range m.Keys {
		if x == k {
			return m.Values[i], true
		}
	}
	return nil, false
}

// Limits on data values.
const (
	MaxDataDepth = 200 // nesting of lists and maps
	// MaxNesting is the deepest CBOR nesting of any record that embeds
	// data values: the data's own depth plus the schema's around it.
	MaxNesting  = MaxDataDepth + 16
	MaxDataSize = 16 << 20 // encoded bytes
	// MaxKind bounds an error's kind and an emit's kind, in bytes.
	MaxKind = 256
)

// EncodeData encodes a data value deterministically.
func EncodeData(v any) ([]byte, error) {
	return AppendData(nil, v)
}

// AppendData appends the encoding of a data value.
func AppendData(b []byte, v any) ([]byte, error) {
	b, err := appendData(b, v, 0)
	if err == nil && len(b) > MaxDataSize {
		err = fmt.Errorf("data value of %d bytes exceeds the limit of %d", len(b), MaxDataSize)
	}
	return b, err
}

func appendData(b []byte, v any, depth int) ([]byte, error) {
	if depth > MaxDataDepth {
		return b, fmt.Errorf("data value nested more than %d deep", MaxDataDepth)
	}
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, simpleNull), nil
	case bool:
		if v {
			return append(b, simpleTrue), nil
		}
		return append(b, simpleFalse), nil
	case int64:
		return detcbor.AppendInt(b, v), nil
	case int:
		return detcbor.AppendInt(b, int64(v)), nil
	case float64:
		return appendFloat(b, v), nil
	case string:
		return detcbor.AppendText(b, v), nil
	case []any:
		b = detcbor.AppendHead(b, detcbor.Array, uint64(len(v)))
		for _, x := range v {
			if b, err = appendData(b, x, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	case *Map:
		if len(v.Keys) != len(v.Values) {
			return b, fmt.Errorf("map has %d keys and %d values", len(v.Keys), len(v.Values))
		}
		b = detcbor.AppendHead(detcbor.AppendHead(b, detcbor.Tag, TagMap), detcbor.Array, uint64(2*len(v.Keys)))
		for i, k := range v.Keys {
			switch k.(type) {
			case string, int64, bool:
			default:
				return b, fmt.Errorf("map key of type %T", k)
			}
			b, _ = appendData(b, k, depth+1)
			if b, err = appendData(b, v.Values[i], depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, fmt.Errorf("not a data value: %T", v)
}

// DecodeData decodes a data value strictly: one item, no trailing bytes,
// bounded in depth and size, ordered maps without duplicate keys.
func DecodeData(b []byte) (any, error) {
	if len(b) > MaxDataSize {
		return nil, decodeErr(ErrTooLarge, "value", "%d bytes exceeds the limit of %d", len(b), MaxDataSize)
	}
	r := &reader{Reader: detcbor.Reader{B: b}, where: "value"}
	v, err := r.data(0)
	if err != nil {
		return nil, err
	}
	if r.Off != len(b) {
		return nil, r.fail("trailing bytes")
	}
	return v, nil
}

func (r *reader) data(depth int) (any, error) {
	if depth > MaxDataDepth {
		return nil, r.fail("nested more than %d deep", MaxDataDepth)
	}
	major, arg, info, err := r.head()
	if err != nil {
		return nil, err
	}
	switch major {
	case detcbor.Uint:
		if arg > math.MaxInt64 {
			return nil, r.fail("integer overflows int64")
		}
		return int64(arg), nil
	case detcbor.Neg:
		if arg > math.MaxInt64 {
			return nil, r.fail("integer overflows int64")
		}
		return -int64(arg) - 1, nil
	case detcbor.Text:
		return r.text(arg)
	case detcbor.Array:
		n, err := r.length(arg, 1)
		if err != nil {
			return nil, err
		}
		list := make([]any, n)
		for i := range list {
			if list[i], err = r.data(depth + 1); err != nil {
				return nil, err
			}
		}
		return list, nil
	case detcbor.Tag:
		if arg != TagMap {
			return nil, r.fail("unexpected tag %d in a data value", arg)
		}
		m2, n2, _, err := r.head()
		if err != nil {
			return nil, err
		}
		if m2 != detcbor.Array || n2%2 != 0 {
			return nil, r.fail("a map must hold an array of key, value pairs")
		}
		n, err := r.length(n2, 1)
		if err != nil {
			return nil, err
		}
		m := &Map{Keys: make([]any, 0, n/2), Values: make([]any, 0, n/2)}
		seen := make(map[any]struct{}, n/2)
		for i := 0; i < n; i += 2 {
			k, err := r.data(depth + 1)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case string, int64, bool:
			default:
				return nil, r.fail("map key of type %T", k)
			}
			if _, dup := seen[k]; dup {
				return nil, r.fail("duplicate map key %v", k)
			}
			seen[k] = struct{}{}
			v, err := r.data(depth + 1)
			if err != nil {
				return nil, err
			}
			m.Keys = append(m.Keys, k)
			m.Values = append(m.Values, v)
		}
		return m, nil
	case detcbor.Simple:
		switch info {
		case 20:
			return false, nil
		case 21:
			return true, nil
		case 22:
			return nil, nil
		case 25, 26, 27:
			return r.float(info, arg)
		}
	}
	return nil, r.fail("unexpected CBOR item (major type %d) in a data value", major)
}

// DataLength returns the length of the data value at the start of b,
// decoding it strictly.
func DataLength(b []byte) (int, error) {
	r := &reader{Reader: detcbor.Reader{B: b}, where: "value"}
	if _, err := r.data(0); err != nil {
		return 0, err
	}
	return r.Off, nil
}
