// Package detcbor writes and reads the CBOR items that the hand-written
// codecs (checkpoint bodies and values, the sandbox wire) are made of, in
// RFC 8949 core deterministic form: definite lengths and the shortest head.
// It holds the byte-level rules once; the codecs above it know their schemas.
package detcbor

import (
	"encoding/binary"
	"fmt"
	"math"
)

// CBOR major types.
const (
	Uint   = 0
	Neg    = 1
	Bytes  = 2
	Text   = 3
	Array  = 4
	Map    = 5
	Tag    = 6
	Simple = 7
)

// AppendHead appends the shortest head of major type major with argument n.
func AppendHead(b []byte, major byte, n uint64) []byte {
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

// AppendInt appends a signed integer.
func AppendInt(b []byte, i int64) []byte {
	if i >= 0 {
		return AppendHead(b, Uint, uint64(i))
	}
	return AppendHead(b, Neg, uint64(-(i + 1)))
}

// AppendText appends a text string.
func AppendText(b []byte, s string) []byte { return append(AppendHead(b, Text, uint64(len(s))), s...) }

// AppendBytes appends a byte string.
func AppendBytes(b, v []byte) []byte { return append(AppendHead(b, Bytes, uint64(len(v))), v...) }

// AppendBool appends true or false.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xf5)
	}
	return append(b, 0xf4)
}

// Error is a decoding error at an offset; the codecs wrap it.
type Error struct {
	Off int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at byte %d: %s", e.Off, e.Msg) }

// Reader reads items from B, starting at Off.
type Reader struct {
	B   []byte
	Off int
}

// Fail returns an Error at the current offset.
func (r *Reader) Fail(format string, args ...any) *Error {
	return &Error{Off: r.Off, Msg: fmt.Sprintf(format, args...)}
}

// Head reads an item head: its major type, argument and additional-info
// bits. Indefinite lengths and non-shortest heads are refused (for major
// type 7 the argument is a float's raw bits and any width is allowed).
func (r *Reader) Head() (major byte, arg uint64, info byte, err error) {
	if r.Off >= len(r.B) {
		return 0, 0, 0, r.Fail("unexpected end of input")
	}
	c := r.B[r.Off]
	r.Off++
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
		return 0, 0, 0, r.Fail("indefinite length or reserved head 0x%02x", c)
	}
	if len(r.B)-r.Off < n {
		return 0, 0, 0, r.Fail("unexpected end of input")
	}
	for i := 0; i < n; i++ {
		arg = arg<<8 | uint64(r.B[r.Off+i])
	}
	r.Off += n
	if major != Simple && ((n == 1 && arg < 24) || (n == 2 && arg <= math.MaxUint8) || (n == 4 && arg <= math.MaxUint16) || (n == 8 && arg <= math.MaxUint32)) {
		return 0, 0, 0, r.Fail("non-shortest integer head")
	}
	return major, arg, info, nil
}

// Uint reads an unsigned integer.
func (r *Reader) Uint() (uint64, error) {
	m, v, _, err := r.Head()
	if err == nil && m != Uint {
		return 0, r.Fail("want an unsigned integer, got major type %d", m)
	}
	return v, err
}

// Int reads an integer that fits an int64.
func (r *Reader) Int() (int64, error) {
	m, v, _, err := r.Head()
	if err != nil {
		return 0, err
	}
	if (m != Uint && m != Neg) || v > math.MaxInt64 {
		return 0, r.Fail("want an int64")
	}
	if m == Neg {
		return -int64(v) - 1, nil
	}
	return int64(v), nil
}

// Length checks that n items of at least min bytes each fit in what is
// left, before anything is allocated for them.
func (r *Reader) Length(n uint64, min int) (int, error) {
	if n > uint64(len(r.B)-r.Off)/uint64(min) {
		return 0, r.Fail("declared length %d exceeds the input", n)
	}
	return int(n), nil
}

// Raw reads a byte or text string of the given major type and returns its
// content, aliasing B.
func (r *Reader) Raw(major byte) ([]byte, error) {
	m, n, _, err := r.Head()
	if err != nil {
		return nil, err
	}
	if m != major {
		return nil, r.Fail("want major type %d, got %d", major, m)
	}
	l, err := r.Length(n, 1)
	if err != nil {
		return nil, err
	}
	v := r.B[r.Off : r.Off+l]
	r.Off += l
	return v, nil
}

// Count is the number of fields present: the size of a map whose empty
// fields are omitted.
func Count(present ...bool) uint64 {
	n := uint64(0)
	for _, p := range present {
		if p {
			n++
		}
	}
	return n
}

// MapKeys reads a map whose keys are small unsigned integers in ascending
// order, at most max, and calls f after each key to read its value. Errors
// of the map itself are *Error; f's errors are returned as they are.
func (r *Reader) MapKeys(max uint64, f func(key uint64) error) error {
	m, n, _, err := r.Head()
	if err != nil {
		return err
	}
	if m != Map || n > max {
		return r.Fail("want a map of at most %d keys", max)
	}
	last := uint64(0)
	for i := uint64(0); i < n; i++ {
		k, err := r.Uint()
		if err != nil {
			return err
		}
		if k <= last || k > max {
			return r.Fail("unknown, repeated or unordered key %d", k)
		}
		last = k
		if err := f(k); err != nil {
			return err
		}
	}
	return nil
}
