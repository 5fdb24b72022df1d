// wirecodec.go holds the hand-written codec of the step request, result and
// answer: they cross the sandbox boundary at every slice, and reflection-
// based CBOR costs more than the slice's work there. The bytes are the core
// deterministic CBOR that fxamacker/cbor writes for the same structs
// (TestWireMatchesReference).

package port

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/checkpoint"
)

func head(b []byte, major byte, n uint64) []byte {
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

func putInt(b []byte, i int64) []byte {
	if i >= 0 {
		return head(b, 0, uint64(i))
	}
	return head(b, 1, uint64(-(i + 1)))
}

func putBytes(b, v []byte) []byte { return append(head(b, 2, uint64(len(v))), v...) }
func putText(b []byte, v string) []byte {
	return append(head(b, 3, uint64(len(v))), v...)
}

func putBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xf5)
	}
	return append(b, 0xf4)
}

// fields counts the keys of a map whose values are present.
func fields(present ...bool) uint64 {
	n := uint64(0)
	for _, p := range present {
		if p {
			n++
		}
	}
	return n
}

func encodeRequest(r *wireRequest) []byte {
	b := head(nil, 5, fields(len(r.Checkpoint) > 0, len(r.Reply) > 0, r.Slice != 0, r.Clock != 0, r.Lazy, r.Invocation != ""))
	if len(r.Checkpoint) > 0 {
		b = putBytes(append(b, 1), r.Checkpoint)
	}
	if len(r.Reply) > 0 {
		b = putBytes(append(b, 2), r.Reply)
	}
	if r.Slice != 0 {
		b = head(append(b, 3), 0, r.Slice)
	}
	if r.Clock != 0 {
		b = putInt(append(b, 4), r.Clock)
	}
	if r.Lazy {
		b = putBool(append(b, 5), true)
	}
	if r.Invocation != "" {
		b = putText(append(b, 6), r.Invocation)
	}
	return b
}

func encodeError(b []byte, e *checkpoint.Error) []byte {
	b = head(b, 5, fields(true, true, e.Pos != "", len(e.Trace) > 0, len(e.Data) > 0))
	b = putText(append(b, 1), e.Kind)
	b = putText(append(b, 2), e.Msg)
	if e.Pos != "" {
		b = putText(append(b, 3), e.Pos)
	}
	if len(e.Trace) > 0 {
		b = head(append(b, 4), 4, uint64(len(e.Trace)))
		for _, t := range e.Trace {
			b = putText(b, t)
		}
	}
	if len(e.Data) > 0 {
		b = append(append(b, 5), e.Data...)
	}
	return b
}

func encodeWireResult(r *wireResult) []byte {
	b := head(make([]byte, 0, 64+len(r.Checkpoint)+len(r.Result)+len(r.Args)), 5,
		fields(true, true, len(r.Checkpoint) > 0, len(r.Result) > 0, r.Tag != "", len(r.Args) > 0, r.Seq != 0, r.Err != nil, len(r.Emits) > 0))
	b = head(append(b, 1), 0, uint64(r.Kind))
	b = head(append(b, 2), 0, r.Used)
	if len(r.Checkpoint) > 0 {
		b = putBytes(append(b, 3), r.Checkpoint)
	}
	if len(r.Result) > 0 {
		b = putBytes(append(b, 4), r.Result)
	}
	if r.Tag != "" {
		b = putText(append(b, 5), r.Tag)
	}
	if len(r.Args) > 0 {
		b = putBytes(append(b, 6), r.Args)
	}
	if r.Seq != 0 {
		b = head(append(b, 7), 0, r.Seq)
	}
	if r.Err != nil {
		b = encodeError(append(b, 8), r.Err)
	}
	if len(r.Emits) > 0 {
		b = head(append(b, 9), 4, uint64(len(r.Emits)))
		for _, e := range r.Emits {
			b = putBytes(putText(head(b, 4, 2), e.Kind), e.Data)
		}
	}
	return b
}

func encodeWireAnswer(a *wireAnswer) []byte {
	b := head(make([]byte, 0, 16+len(a.Body)+len(a.Msg)), 5, fields(a.Code != 0, a.Msg != "", a.Line != 0, a.Col != 0, len(a.Body) > 0))
	if a.Code != 0 {
		b = putInt(append(b, 1), int64(a.Code))
	}
	if a.Msg != "" {
		b = putText(append(b, 2), a.Msg)
	}
	if a.Line != 0 {
		b = putInt(append(b, 3), int64(a.Line))
	}
	if a.Col != 0 {
		b = putInt(append(b, 4), int64(a.Col))
	}
	if len(a.Body) > 0 {
		b = putBytes(append(b, 5), a.Body)
	}
	return b
}

// wreader reads the wire structures strictly.
type wreader struct {
	b   []byte
	off int
}

var errWire = errors.New("malformed wire message")

func (r *wreader) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errWire, what, r.off)
}

func (r *wreader) head() (byte, uint64, error) {
	if r.off >= len(r.b) {
		return 0, 0, r.fail("unexpected end")
	}
	c := r.b[r.off]
	r.off++
	major, info := c>>5, c&31
	var n int
	switch {
	case info < 24:
		return major, uint64(info), nil
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	default:
		return 0, 0, r.fail("unsupported head")
	}
	if len(r.b)-r.off < n {
		return 0, 0, r.fail("unexpected end")
	}
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(r.b[r.off+i])
	}
	r.off += n
	if major != 7 && ((n == 1 && v < 24) || (n == 2 && v <= math.MaxUint8) || (n == 4 && v <= math.MaxUint16) || (n == 8 && v <= math.MaxUint32)) {
		return 0, 0, r.fail("non-shortest head")
	}
	return major, v, nil
}

func (r *wreader) uint() (uint64, error) {
	m, v, err := r.head()
	if err == nil && m != 0 {
		err = r.fail("want an unsigned integer")
	}
	return v, err
}

func (r *wreader) int() (int64, error) {
	m, v, err := r.head()
	if err != nil {
		return 0, err
	}
	if (m != 0 && m != 1) || v > math.MaxInt64 {
		return 0, r.fail("want an int64")
	}
	if m == 1 {
		return -int64(v) - 1, nil
	}
	return int64(v), nil
}

func (r *wreader) raw(major byte) ([]byte, error) {
	m, n, err := r.head()
	if err != nil {
		return nil, err
	}
	if m != major {
		return nil, r.fail("wrong type")
	}
	if n > uint64(len(r.b)-r.off) {
		return nil, r.fail("length beyond the input")
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v, nil
}

func (r *wreader) bytes() ([]byte, error) {
	v, err := r.raw(2)
	if err != nil || len(v) == 0 {
		return nil, orEmpty(err, r)
	}
	return append([]byte(nil), v...), nil
}

func orEmpty(err error, r *wreader) error {
	if err != nil {
		return err
	}
	return r.fail("empty byte string (omitted when empty)")
}

func (r *wreader) text() (string, error) {
	v, err := r.raw(3)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(v) {
		return "", r.fail("invalid UTF-8")
	}
	return string(v), nil
}

// mapKeys reads a map head and calls f for each key in ascending order.
func (r *wreader) mapKeys(max uint64, f func(key uint64) error) error {
	m, n, err := r.head()
	if err != nil {
		return err
	}
	if m != 5 || n > max {
		return r.fail("want a map")
	}
	last := uint64(0)
	for i := uint64(0); i < n; i++ {
		k, err := r.uint()
		if err != nil {
			return err
		}
		if k <= last || k > max {
			return r.fail("unknown, duplicate or unordered key")
		}
		last = k
		if err := f(k); err != nil {
			return err
		}
	}
	return nil
}

// nonZero rejects an omitted-when-empty field that is present but empty:
// such an encoding is not the canonical one.
func (r *wreader) nonZero(empty bool, err error) error {
	if err == nil && empty {
		return r.fail("an empty value where the field is omitted when empty")
	}
	return err
}

func (r *wreader) end() error {
	if r.off != len(r.b) {
		return r.fail("trailing bytes")
	}
	return nil
}

func decodeRequest(b []byte) (*wireRequest, error) {
	r := &wreader{b: b}
	var q wireRequest
	err := r.mapKeys(6, func(k uint64) error {
		var err error
		switch k {
		case 1:
			q.Checkpoint, err = r.bytes()
		case 2:
			q.Reply, err = r.bytes()
		case 3:
			q.Slice, err = r.uint()
			err = r.nonZero(q.Slice == 0, err)
		case 4:
			q.Clock, err = r.int()
			err = r.nonZero(q.Clock == 0, err)
		case 5:
			var m byte
			var v uint64
			if m, v, err = r.head(); err == nil && (m != 7 || v != 21) {
				err = r.fail("lazy must be true when present")
			}
			q.Lazy = true
		case 6:
			q.Invocation, err = r.text()
			err = r.nonZero(q.Invocation == "", err)
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	return &q, err
}

func decodeWireResult(b []byte) (*wireResult, error) {
	r := &wreader{b: b}
	var w wireResult
	seen := 0
	err := r.mapKeys(9, func(k uint64) error {
		var err error
		var v uint64
		if k <= 2 {
			seen++
		}
		switch k {
		case 1:
			v, err = r.uint()
			w.Kind = Kind(v)
			if v > math.MaxUint8 {
				err = r.fail("kind out of range")
			}
		case 2:
			w.Used, err = r.uint()
		case 3:
			w.Checkpoint, err = r.bytes()
		case 4:
			w.Result, err = r.bytes()
		case 5:
			w.Tag, err = r.text()
			err = r.nonZero(w.Tag == "", err)
		case 6:
			w.Args, err = r.bytes()
		case 7:
			w.Seq, err = r.uint()
			err = r.nonZero(w.Seq == 0, err)
		case 8:
			w.Err, err = r.error()
		case 9:
			var m byte
			var n uint64
			if m, n, err = r.head(); err != nil {
				return err
			}
			if m != 4 || n == 0 || n > uint64(len(r.b)-r.off) {
				return r.fail("want an array of emits")
			}
			w.Emits = make([]wireEmit, n)
			for i := range w.Emits {
				if m, n, err = r.head(); err != nil {
					return err
				}
				if m != 4 || n != 2 {
					return r.fail("want an emit pair")
				}
				if w.Emits[i].Kind, err = r.text(); err != nil {
					return err
				}
				v, err := r.raw(2)
				if err != nil {
					return err
				}
				w.Emits[i].Data = append([]byte(nil), v...)
			}
		}
		return err
	})
	if err == nil && seen != 2 {
		err = r.fail("kind and used are required")
	}
	if err == nil {
		err = r.end()
	}
	return &w, err
}

func (r *wreader) error() (*checkpoint.Error, error) {
	e := &checkpoint.Error{}
	seen := 0
	err := r.mapKeys(5, func(k uint64) error {
		var err error
		if k <= 2 {
			seen++
		}
		switch k {
		case 1:
			e.Kind, err = r.text()
		case 2:
			e.Msg, err = r.text()
		case 3:
			e.Pos, err = r.text()
			err = r.nonZero(e.Pos == "", err)
		case 4:
			var m byte
			var n uint64
			if m, n, err = r.head(); err != nil {
				return err
			}
			if m != 4 || n == 0 || n > uint64(len(r.b)-r.off) {
				return r.fail("want an array of trace lines")
			}
			e.Trace = make([]string, n)
			for i := range e.Trace {
				if e.Trace[i], err = r.text(); err != nil {
					return err
				}
			}
		case 5:
			// A data value, embedded as itself: its extent is what the
			// strict data decoder reads.
			start := r.off
			n, err := checkpoint.DataLength(r.b[start:])
			if err != nil {
				return err
			}
			r.off += n
			e.Data = cbor.RawMessage(append([]byte(nil), r.b[start:r.off]...))
		}
		return err
	})
	if err == nil && seen != 2 {
		err = r.fail("an error needs a kind and a msg")
	}
	return e, err
}

func decodeWireAnswer(b []byte) (*wireAnswer, error) {
	r := &wreader{b: b}
	var a wireAnswer
	err := r.mapKeys(5, func(k uint64) error {
		var err error
		var v int64
		switch k {
		case 1:
			v, err = r.int()
			a.Code = int(v)
			err = r.nonZero(v == 0, err)
		case 2:
			a.Msg, err = r.text()
			err = r.nonZero(a.Msg == "", err)
		case 3:
			v, err = r.int()
			err = r.nonZero(v == 0, err)
			a.Line = int32(v)
			if v != int64(a.Line) {
				err = r.fail("line out of range")
			}
		case 4:
			v, err = r.int()
			err = r.nonZero(v == 0, err)
			a.Col = int32(v)
			if v != int64(a.Col) {
				err = r.fail("column out of range")
			}
		case 5:
			v, e := r.raw(2)
			if e != nil || len(v) == 0 {
				return orEmpty(e, r)
			}
			a.Body = v // the answer is already a private copy
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	return &a, err
}
