// cbor.go holds the small CBOR item writer and reader used for values.
//
// Values are hot (every slot of every frame), so they are written and read by
// hand rather than through reflection; the output is core deterministic CBOR
// (shortest heads, shortest exact floats, canonical NaN), the same rules the
// fxamacker encoder applies to the structures around them.

package checkpoint

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/x448/float16"
)

// CBOR major types.
const (
	majUint   = 0
	majNeg    = 1
	majBytes  = 2
	majText   = 3
	majArray  = 4
	majMap    = 5
	majTag    = 6
	majSimple = 7
)

// Tags used by Rune values. They sit in the first-come-first-served range.
const (
	TagRef     = 52001 // heap object reference: tag(uint index)
	TagBuiltin = 52002 // built-in function: tag(uint index)
	TagMap     = 52003 // ordered map: tag([k1, v1, k2, v2, ...])
	TagString  = 52005 // shared string: tag(uint index into the string table)
)

func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func appendInt(b []byte, i int64) []byte {
	if i >= 0 {
		return appendHead(b, majUint, uint64(i))
	}
	return appendHead(b, majNeg, uint64(-(i + 1)))
}

func appendText(b []byte, s string) []byte {
	b = appendHead(b, majText, uint64(len(s)))
	return append(b, s...)
}

// appendFloat writes f in the shortest of float16/32/64 that holds it exactly.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(b, 0xf9, 0x7e, 0x00)
	}
	if f32 := float32(f); float64(f32) == f {
		if f16 := float16.Fromfloat32(f32); f16.Float32() == f32 {
			return binary.BigEndian.AppendUint16(append(b, 0xf9), f16.Bits())
		}
		return binary.BigEndian.AppendUint32(append(b, 0xfa), math.Float32bits(f32))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xfb), math.Float64bits(f))
}

const (
	simpleFalse = 0xf4
	simpleTrue  = 0xf5
	simpleNull  = 0xf6
	simpleUndef = 0xf7
)

// reader reads CBOR items from a byte slice, strictly: definite lengths,
// shortest heads, valid UTF-8, no trailing bytes unless asked.
type reader struct {
	b     []byte
	off   int
	where string
	// s, when set, is b as a string: decoded texts are substrings of it,
	// which saves an allocation per string (a body holds many).
	s string
	// slab is spare room for decoded []Val, handed out in pieces.
	slab []Val
}

func (r *reader) fail(format string, args ...any) error {
	return decodeErr(ErrValue, r.where, "at byte %d: "+format, append([]any{r.off}, args...)...)
}

// head reads an item head and returns its major type and argument. For major
// type 7 the argument is the additional-info code (and raw bits for floats).
func (r *reader) head() (major byte, arg uint64, info byte, err error) {
	if r.off >= len(r.b) {
		return 0, 0, 0, r.fail("unexpected end of input")
	}
	c := r.b[r.off]
	r.off++
	major, info = c>>5, c&31
	var n int
	switch {
	case info < 24:
		return major, uint64(info), info, nil
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	default:
		return 0, 0, 0, r.fail("indefinite length or reserved head 0x%02x", c)
	}
	if len(r.b)-r.off < n {
		return 0, 0, 0, r.fail("unexpected end of input")
	}
	switch n {
	case 1:
		arg = uint64(r.b[r.off])
	case 2:
		arg = uint64(binary.BigEndian.Uint16(r.b[r.off:]))
	case 4:
		arg = uint64(binary.BigEndian.Uint32(r.b[r.off:]))
	case 8:
		arg = binary.BigEndian.Uint64(r.b[r.off:])
	}
	r.off += n
	if major != majSimple {
		// Core deterministic encoding: the shortest head.
		if (n == 1 && arg < 24) || (n == 2 && arg <= math.MaxUint8) || (n == 4 && arg <= math.MaxUint16) || (n == 8 && arg <= math.MaxUint32) {
			return 0, 0, 0, r.fail("non-shortest integer head")
		}
	}
	return major, arg, info, nil
}

// length checks that a declared count of items, each at least min bytes,
// fits in the remaining input, before anything is allocated for it.
func (r *reader) length(n uint64, min int) (int, error) {
	if n > uint64(len(r.b)-r.off)/uint64(min) {
		return 0, r.fail("declared length %d exceeds the input", n)
	}
	return int(n), nil
}

func (r *reader) text(n uint64) (string, error) {
	l, err := r.length(n, 1)
	if err != nil {
		return "", err
	}
	var s string
	if r.s != "" {
		s = r.s[r.off : r.off+l]
	} else {
		s = string(r.b[r.off : r.off+l])
	}
	r.off += l
	if !utf8.ValidString(s) {
		return "", r.fail("text is not valid UTF-8")
	}
	return s, nil
}

// float decodes a major type 7 float whose info byte is 25, 26 or 27, and
// insists on the shortest exact form and the canonical NaN.
func (r *reader) float(info byte, bits uint64) (float64, error) {
	var f float64
	switch info {
	case 25:
		f = float64(float16.Frombits(uint16(bits)).Float32())
		if math.IsNaN(f) && bits != 0x7e00 {
			return 0, r.fail("non-canonical NaN")
		}
		return f, nil
	case 26:
		f = float64(math.Float32frombits(uint32(bits)))
	case 27:
		f = math.Float64frombits(bits)
	}
	if math.IsNaN(f) {
		return 0, r.fail("non-canonical NaN")
	}
	want := 5
	if info == 27 {
		want = 9
	}
	var tmp [9]byte
	if len(appendFloat(tmp[:0], f)) != want {
		return 0, r.fail("non-shortest float")
	}
	return f, nil
}
