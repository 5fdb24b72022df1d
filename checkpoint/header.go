// header.go holds the hand-written codec of the header and the outer array,
// the twin of fxamacker/cbor's encoding of the same structs
// (TestHeaderMatchesReference), so that the guest need not carry a
// reflection-based codec. The host cross-checks guest checkpoints with
// fxamacker (DecodeHeaderReference).

package checkpoint

import (
	"bytes"
	"math"
	"unicode/utf8"

	"github.com/runehost/runehost/internal/detcbor"
)

func appendHeader(b []byte, h *Header) []byte {
	b = detcbor.AppendHead(b, detcbor.Map, detcbor.Count(true, true, true, h.Invocation != "", len(h.Context) > 0, true, true, h.Pending != nil, len(h.Result) > 0, h.Error != nil))
	b = detcbor.AppendHead(append(b, 1), detcbor.Uint, h.Format)
	b = detcbor.AppendHead(append(b, 2), detcbor.Uint, h.Semantics)
	b = detcbor.AppendBytes(append(b, 3), h.Program)
	if h.Invocation != "" {
		b = detcbor.AppendText(append(b, 4), h.Invocation)
	}
	if len(h.Context) > 0 {
		b = detcbor.AppendBytes(append(b, 5), h.Context)
	}
	b = detcbor.AppendHead(append(b, 6), detcbor.Uint, h.Used)
	b = detcbor.AppendHead(append(b, 7), detcbor.Uint, uint64(h.Status))
	if p := h.Pending; p != nil {
		b = detcbor.AppendHead(append(b, 8), detcbor.Map, detcbor.Count(true, true, p.Tag != "", true))
		b = detcbor.AppendHead(append(b, 1), detcbor.Uint, uint64(p.Kind))
		b = detcbor.AppendHead(append(b, 2), detcbor.Uint, p.Seq)
		if p.Tag != "" {
			b = detcbor.AppendText(append(b, 3), p.Tag)
		}
		b = append(append(b, 4), rawOrNull(p.Args)...)
	}
	if len(h.Result) > 0 {
		b = append(append(b, 9), h.Result...)
	}
	if h.Error != nil {
		b = AppendError(append(b, 10), h.Error)
	}
	return b
}

func rawOrNull(r RawData) []byte {
	if len(r) == 0 {
		return []byte{0xf6}
	}
	return r
}

// AppendError appends an Error as the CBOR map fxamacker writes for it.
func AppendError(b []byte, e *Error) []byte {
	b = detcbor.AppendHead(b, detcbor.Map, detcbor.Count(true, true, e.Pos != "", len(e.Trace) > 0, len(e.Data) > 0))
	b = detcbor.AppendText(append(b, 1), e.Kind)
	b = detcbor.AppendText(append(b, 2), e.Msg)
	if e.Pos != "" {
		b = detcbor.AppendText(append(b, 3), e.Pos)
	}
	if len(e.Trace) > 0 {
		b = detcbor.AppendHead(append(b, 4), detcbor.Array, uint64(len(e.Trace)))
		for _, t := range e.Trace {
			b = detcbor.AppendText(b, t)
		}
	}
	if len(e.Data) > 0 {
		b = append(append(b, 5), e.Data...)
	}
	return b
}

// mapKeys reads a map of small integer keys (detcbor.Reader.MapKeys),
// wording the map's own errors.
func (r *reader) mapKeys(max uint64, f func(key uint64) error) error {
	err := r.Reader.MapKeys(max, f)
	if de, ok := err.(*detcbor.Error); ok {
		return r.wrap(de)
	}
	return err
}

func (r *reader) textItem(omitEmpty bool) (string, error) {
	v, err := r.Reader.Raw(detcbor.Text)
	if err != nil {
		return "", r.wrap(err)
	}
	if omitEmpty && len(v) == 0 {
		return "", r.fail("empty text where it is omitted when empty")
	}
	if !utf8.Valid(v) {
		return "", r.fail("text is not valid UTF-8")
	}
	return string(v), nil
}

func (r *reader) bytesItem(omitEmpty bool) ([]byte, error) {
	v, err := r.Reader.Raw(detcbor.Bytes)
	if err != nil {
		return nil, r.wrap(err)
	}
	if omitEmpty && len(v) == 0 {
		return nil, r.fail("empty bytes where they are omitted when empty")
	}
	return bytes.Clone(v), nil
}

// rawData reads one data value and returns its bytes.
func (r *reader) rawData() (RawData, error) {
	start := r.Off
	if _, err := r.data(0); err != nil {
		return nil, err
	}
	return RawData(bytes.Clone(r.B[start:r.Off])), nil
}

func (r *reader) header() (*Header, error) {
	h := &Header{}
	seen := 0
	err := r.mapKeys(10, func(k uint64) error {
		var err error
		var v uint64
		switch k {
		case 1:
			h.Format, err = r.uint()
			seen++
		case 2:
			h.Semantics, err = r.uint()
			seen++
		case 3:
			h.Program, err = r.bytesItem(false)
			seen++
		case 4:
			h.Invocation, err = r.textItem(true)
		case 5:
			h.Context, err = r.bytesItem(true)
		case 6:
			h.Used, err = r.uint()
			seen++
		case 7:
			v, err = r.uint()
			if v > math.MaxUint8 {
				return r.fail("status %d", v)
			}
			h.Status = Status(v)
			seen++
		case 8:
			h.Pending, err = r.pending()
		case 9:
			h.Result, err = r.rawData()
		case 10:
			h.Error, err = r.errorItem()
		}
		return err
	})
	if err == nil && seen != 5 {
		err = r.fail("a header needs format, semantics, program, used and status")
	}
	return h, err
}

func (r *reader) pending() (*Pending, error) {
	p := &Pending{}
	seen := 0
	err := r.mapKeys(4, func(k uint64) error {
		var err error
		var v uint64
		switch k {
		case 1:
			v, err = r.uint()
			if v > math.MaxUint8 {
				return r.fail("pending kind %d", v)
			}
			p.Kind = PendingKind(v)
			seen++
		case 2:
			p.Seq, err = r.uint()
			seen++
		case 3:
			p.Tag, err = r.textItem(true)
		case 4:
			p.Args, err = r.rawData()
			seen++
		}
		return err
	})
	if err == nil && seen != 3 {
		err = r.fail("a pending suspension needs kind, seq and args")
	}
	return p, err
}

// errorItem reads an Error written by AppendError.
func (r *reader) errorItem() (*Error, error) {
	e := &Error{}
	seen := 0
	err := r.mapKeys(5, func(k uint64) error {
		var err error
		switch k {
		case 1:
			e.Kind, err = r.textItem(false)
			seen++
		case 2:
			e.Msg, err = r.textItem(false)
			seen++
		case 3:
			e.Pos, err = r.textItem(true)
		case 4:
			m, n, _, err := r.head()
			if err != nil {
				return err
			}
			if m != detcbor.Array || n == 0 {
				return r.fail("want a trace")
			}
			l, err := r.length(n, 1)
			if err != nil {
				return err
			}
			e.Trace = make([]string, l)
			for i := range e.Trace {
				if e.Trace[i], err = r.textItem(false); err != nil {
					return err
				}
			}
		case 5:
			e.Data, err = r.rawData()
		}
		return err
	})
	if err == nil && seen != 2 {
		err = r.fail("an error needs a kind and a msg")
	}
	return e, err
}

// ReadErrorItem reads one Error (AppendError) from the start of b and says
// how many bytes it took, for codecs that embed errors (the sandbox wire).
func ReadErrorItem(b []byte) (*Error, int, error) {
	r := &reader{Reader: detcbor.Reader{B: b}, where: "error"}
	e, err := r.errorItem()
	return e, r.Off, err
}

// appendOuter writes the array [header, body] around an encoded header.
func appendOuter(header, body []byte) []byte {
	out := make([]byte, 0, len(header)+len(body)+16)
	out = detcbor.AppendHead(out, detcbor.Array, 2)
	out = append(out, header...)
	return detcbor.AppendBytes(out, body)
}
