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

	"github.com/runehost/runehost/internal/detcbor"
)

// Tags used by Rune values. They sit in the first-come-first-served range.
const (
	TagRef     = 52001 // heap object reference: tag(uint index)
	TagBuiltin = 52002 // built-in function: tag(uint index)
	TagMap     = 52003 // ordered map: tag([k1, v1, k2, v2, ...])
	TagString  = 52005 // shared string: tag(uint index into the string table)
)

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
	detcbor.Reader
	where string
	// s, when set, is B as a string: decoded texts are substrings of it,
	// which saves an allocation per string (a body holds many).
	s string
	// slab is spare room for decoded []Val, handed out in pieces; used
	// counts the slots handed out.
	slab []Val
	used int
	// objs, if long enough, holds the body's heap (DecodeInto).
	objs []Object
	// general turns off the objects' shortcut (for its tests).
	general bool
}

func (r *reader) fail(format string, args ...any) error {
	return decodeErr(ErrValue, r.where, "at byte %d: "+format, append([]any{r.Off}, args...)...)
}

// head reads an item head (detcbor.Reader.Head), wording its errors.
func (r *reader) head() (major byte, arg uint64, info byte, err error) {
	major, arg, info, e := r.Reader.Head()
	if e != nil {
		return 0, 0, 0, r.wrap(e)
	}
	return major, arg, info, nil
}

func (r *reader) wrap(e error) error {
	return decodeErr(ErrValue, r.where, "%v", e)
}

// length checks that a declared count of items, each at least min bytes,
// fits in the remaining input, before anything is allocated for it.
func (r *reader) length(n uint64, min int) (int, error) {
	l, err := r.Reader.Length(n, min)
	if err != nil {
		return 0, r.wrap(err)
	}
	return l, nil
}

func (r *reader) text(n uint64) (string, error) {
	l, err := r.length(n, 1)
	if err != nil {
		return "", err
	}
	var s string
	if r.s != "" {
		s = r.s[r.Off : r.Off+l]
	} else {
		s = string(r.B[r.Off : r.Off+l])
	}
	r.Off += l
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
