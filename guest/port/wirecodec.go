// wirecodec.go holds the hand-written codec of the step request, result and
// answer: they cross the sandbox boundary at every slice, and reflection-
// based CBOR costs more than the slice's work there. The bytes are the core
// deterministic CBOR that fxamacker/cbor writes for the same structs
// (TestWireMatchesReference).

package port

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/internal/detcbor"
)

func encodeRequest(r *wireRequest) []byte {
	b := detcbor.AppendHead(nil, 5, detcbor.Count(len(r.Checkpoint) > 0, len(r.Reply) > 0, r.Slice != 0, r.Clock != 0, r.Lazy, r.Invocation != "", r.Slices != 0))
	if len(r.Checkpoint) > 0 {
		b = detcbor.AppendBytes(append(b, 1), r.Checkpoint)
	}
	if len(r.Reply) > 0 {
		b = detcbor.AppendBytes(append(b, 2), r.Reply)
	}
	if r.Slice != 0 {
		b = detcbor.AppendHead(append(b, 3), 0, r.Slice)
	}
	if r.Clock != 0 {
		b = detcbor.AppendInt(append(b, 4), r.Clock)
	}
	if r.Lazy {
		b = detcbor.AppendBool(append(b, 5), true)
	}
	if r.Invocation != "" {
		b = detcbor.AppendText(append(b, 6), r.Invocation)
	}
	if r.Slices != 0 {
		b = detcbor.AppendHead(append(b, 7), 0, r.Slices)
	}
	return b
}

// answerRoom is the most an answer's head takes before its body: a map of
// one pair, the key, the body's byte-string head.
const answerRoom = 1 + 1 + 9

// encodeStepAnswer is encodeWireAnswer of a body that is encodeWireResult
// of r, written in one buffer: the checkpoint is copied once, not thrice.
func encodeStepAnswer(r *wireResult) []byte {
	b := encodeWireResultAt(make([]byte, answerRoom, answerRoom+64+len(r.Checkpoint)+len(r.Result)+len(r.Args)), r)
	var head [answerRoom]byte
	h := detcbor.AppendHead(append(detcbor.AppendHead(head[:0], 5, 1), 5), 2, uint64(len(b)-answerRoom))
	shift := answerRoom - len(h)
	copy(b[shift:], h)
	return b[shift:]
}

func encodeWireResult(r *wireResult) []byte {
	return encodeWireResultAt(make([]byte, 0, 64+len(r.Checkpoint)+len(r.Result)+len(r.Args)), r)
}

func encodeWireResultAt(b []byte, r *wireResult) []byte {
	b = detcbor.AppendHead(b, 5,
		detcbor.Count(true, true, len(r.Checkpoint) > 0, len(r.Result) > 0, r.Tag != "", len(r.Args) > 0, r.Seq != 0, r.Err != nil, len(r.Emits) > 0))
	b = detcbor.AppendHead(append(b, 1), 0, uint64(r.Kind))
	b = detcbor.AppendHead(append(b, 2), 0, r.Used)
	if len(r.Checkpoint) > 0 {
		b = detcbor.AppendBytes(append(b, 3), r.Checkpoint)
	}
	if len(r.Result) > 0 {
		b = detcbor.AppendBytes(append(b, 4), r.Result)
	}
	if r.Tag != "" {
		b = detcbor.AppendText(append(b, 5), r.Tag)
	}
	if len(r.Args) > 0 {
		b = detcbor.AppendBytes(append(b, 6), r.Args)
	}
	if r.Seq != 0 {
		b = detcbor.AppendHead(append(b, 7), 0, r.Seq)
	}
	if r.Err != nil {
		b = checkpoint.AppendError(append(b, 8), r.Err)
	}
	if len(r.Emits) > 0 {
		b = detcbor.AppendHead(append(b, 9), 4, uint64(len(r.Emits)))
		for _, e := range r.Emits {
			b = detcbor.AppendBytes(detcbor.AppendText(detcbor.AppendHead(b, 4, 2), e.Kind), e.Data)
		}
	}
	return b
}

func encodeWireAnswer(a *wireAnswer) []byte {
	b := detcbor.AppendHead(make([]byte, 0, 16+len(a.Body)+len(a.Msg)+len(a.File)), 5, detcbor.Count(a.Code != 0, a.Msg != "", a.Line != 0, a.Col != 0, len(a.Body) > 0, a.File != ""))
	if a.Code != 0 {
		b = detcbor.AppendInt(append(b, 1), int64(a.Code))
	}
	if a.Msg != "" {
		b = detcbor.AppendText(append(b, 2), a.Msg)
	}
	if a.Line != 0 {
		b = detcbor.AppendInt(append(b, 3), int64(a.Line))
	}
	if a.Col != 0 {
		b = detcbor.AppendInt(append(b, 4), int64(a.Col))
	}
	if len(a.Body) > 0 {
		b = detcbor.AppendBytes(append(b, 5), a.Body)
	}
	if a.File != "" {
		b = detcbor.AppendText(append(b, 6), a.File)
	}
	return b
}

// wreader reads the wire structures strictly.
type wreader struct{ detcbor.Reader }

var errWire = errors.New("malformed wire message")

func (r *wreader) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errWire, what, r.Off)
}

func wrapWire(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", errWire, err)
}

func (r *wreader) head() (byte, uint64, error) {
	m, v, _, err := r.Reader.Head()
	return m, v, wrapWire(err)
}

func (r *wreader) uint() (uint64, error) {
	v, err := r.Reader.Uint()
	return v, wrapWire(err)
}

func (r *wreader) int() (int64, error) {
	v, err := r.Reader.Int()
	return v, wrapWire(err)
}

func (r *wreader) raw(major byte) ([]byte, error) {
	v, err := r.Reader.Raw(major)
	return v, wrapWire(err)
}

func (r *wreader) bytes() ([]byte, error) {
	v, err := r.raw(2)
	if err != nil || len(v) == 0 {
		return nil, orEmpty(err, r)
	}
	return append([]byte(nil), v...), nil
}

// alias is bytes without the copy, for a caller that owns b for as long as
// the value lives (capped, so that appending to it cannot write past it).
func (r *wreader) alias() ([]byte, error) {
	v, err := r.raw(2)
	if err != nil || len(v) == 0 {
		return nil, orEmpty(err, r)
	}
	return v[:len(v):len(v)], nil
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
	err := r.Reader.MapKeys(max, f)
	if de, ok := err.(*detcbor.Error); ok {
		return wrapWire(de)
	}
	return err
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
	if r.Off != len(r.B) {
		return r.fail("trailing bytes")
	}
	return nil
}

// decodeRequest reads a step request. Its checkpoint and reply alias b: the
// guest decodes them within the call, and keeps nothing of them.
func decodeRequest(b []byte) (*wireRequest, error) {
	r := &wreader{detcbor.Reader{B: b}}
	var q wireRequest
	err := r.mapKeys(7, func(k uint64) error {
		var err error
		switch k {
		case 1:
			q.Checkpoint, err = r.alias()
		case 2:
			q.Reply, err = r.alias()
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
		case 7:
			q.Slices, err = r.uint()
			err = r.nonZero(q.Slices == 0, err)
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	return &q, err
}

// decodeWireResult reads a step result; its checkpoint, result and
// arguments alias b, which the host copied out of the guest's memory.
func decodeWireResult(b []byte) (*wireResult, error) {
	r := &wreader{detcbor.Reader{B: b}}
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
			w.Checkpoint, err = r.alias()
		case 4:
			w.Result, err = r.alias()
		case 5:
			w.Tag, err = r.text()
			err = r.nonZero(w.Tag == "", err)
		case 6:
			w.Args, err = r.alias()
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
			if m != 4 || n == 0 || n > uint64(len(r.B)-r.Off) {
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
	e, n, err := checkpoint.ReadErrorItem(r.B[r.Off:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errWire, err)
	}
	r.Off += n
	return e, nil
}

func decodeWireAnswer(b []byte) (*wireAnswer, error) {
	r := &wreader{detcbor.Reader{B: b}}
	var a wireAnswer
	err := r.mapKeys(6, func(k uint64) error {
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
		case 6:
			a.File, err = r.text()
			err = r.nonZero(a.File == "", err)
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	return &a, err
}

func encodeInput(in *wireInput) []byte {
	b := detcbor.AppendHead(make([]byte, 0, 32+len(in.Source)+len(in.Input)+len(in.State)), detcbor.Map,
		detcbor.Count(len(in.Source) > 0, len(in.Input) > 0, len(in.State) > 0, len(in.Context) > 0, in.Invocation != "", in.Seed != 0, in.Limit != 0))
	for i, v := range [][]byte{in.Source, in.Input, in.State, in.Context} {
		if len(v) > 0 {
			b = detcbor.AppendBytes(append(b, byte(i+1)), v)
		}
	}
	if in.Invocation != "" {
		b = detcbor.AppendText(append(b, 5), in.Invocation)
	}
	if in.Seed != 0 {
		b = detcbor.AppendHead(append(b, 6), detcbor.Uint, in.Seed)
	}
	if in.Limit != 0 {
		b = detcbor.AppendHead(append(b, 7), detcbor.Uint, in.Limit)
	}
	return b
}

func decodeInput(b []byte) (*wireInput, error) {
	r := &wreader{detcbor.Reader{B: b}}
	var in wireInput
	err := r.mapKeys(7, func(k uint64) error {
		var err error
		switch k {
		case 1:
			in.Source, err = r.bytes()
		case 2:
			in.Input, err = r.bytes()
		case 3:
			in.State, err = r.bytes()
		case 4:
			in.Context, err = r.bytes()
		case 5:
			in.Invocation, err = r.text()
			err = r.nonZero(in.Invocation == "", err)
		case 6:
			in.Seed, err = r.uint()
			err = r.nonZero(in.Seed == 0, err)
		case 7:
			in.Limit, err = r.uint()
			err = r.nonZero(in.Limit == 0, err)
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	return &in, err
}

func encodeInfo(w *wireInfo) []byte {
	b := detcbor.AppendHead(nil, detcbor.Map, detcbor.Count(true, len(w.ActTags) > 0))
	b = detcbor.AppendBytes(append(b, 1), w.Hash)
	if len(w.ActTags) > 0 {
		b = detcbor.AppendHead(append(b, 2), detcbor.Array, uint64(len(w.ActTags)))
		for _, t := range w.ActTags {
			b = detcbor.AppendText(b, t)
		}
	}
	return b
}

func decodeInfo(b []byte) (*wireInfo, error) {
	r := &wreader{detcbor.Reader{B: b}}
	var w wireInfo
	err := r.mapKeys(2, func(k uint64) error {
		var err error
		switch k {
		case 1:
			w.Hash, err = r.bytes()
			if len(w.Hash) != 32 && err == nil {
				err = r.fail("a program hash has 32 bytes")
			}
		case 2:
			var m byte
			var n uint64
			if m, n, err = r.head(); err != nil {
				return err
			}
			if m != detcbor.Array || n == 0 || n > uint64(len(r.B)-r.Off) {
				return r.fail("want a list of act tags")
			}
			w.ActTags = make([]string, n)
			for i := range w.ActTags {
				if w.ActTags[i], err = r.text(); err != nil {
					return err
				}
			}
		}
		return err
	})
	if err == nil && w.Hash == nil {
		err = r.fail("the program hash is missing")
	}
	if err == nil && w.Hash == nil {
		err = r.fail("the program hash is missing")
	}
	if err == nil {
		err = r.end()
	}
	return &w, err
}
