// codec.go holds Encode and the strict, bounded Decode of checkpoints.

package checkpoint

import (
	"bytes"
	"fmt"
	"github.com/runehost/runehost/internal/detcbor"
)

// Limits on a checkpoint.
const (
	MaxSize    = 64 << 20 // encoded bytes
	MaxObjects = 1 << 22  // heap objects; also the largest array accepted
)

// Encode encodes a checkpoint deterministically: [header, body].
func Encode(c *Checkpoint) ([]byte, error) {
	if c.Machine == nil {
		return nil, fmt.Errorf("encode checkpoint: no machine")
	}
	h := appendHeader(make([]byte, 0, 128+len(c.Header.Result)), &c.Header)
	body := appendMachine(make([]byte, 0, 256+32*len(c.Machine.Stack)+64*len(c.Machine.Heap)), c.Machine)
	out := appendOuter(h, body)
	if len(out) > MaxSize {
		return nil, &SizeError{Size: len(out), Limit: MaxSize}
	}
	return out, nil
}

// bodyRoom is the most a body's byte-string head takes.
const bodyRoom = 9

// StartEncode begins a checkpoint whose body its caller writes itself (the
// machine does, to spare building a Machine): the outer array and the
// header, then room for the body's head. Append the body's bytes to the
// result and pass it to FinishEncode; the bytes are what Encode gives.
func StartEncode(b []byte, h *Header) []byte {
	b = detcbor.AppendHead(b, detcbor.Array, 2)
	b = appendHeader(b, h)
	return append(b, make([]byte, bodyRoom)...)
}

// FinishEncode ends a checkpoint begun by StartEncode at b[:start], whose
// body is b[start:]: it writes the body's head in the room left for it.
func FinishEncode(b []byte, start int) ([]byte, error) {
	var head [bodyRoom]byte
	h := detcbor.AppendHead(head[:0], detcbor.Bytes, uint64(len(b)-start))
	// Move what comes before the head up to meet it; the body stays put.
	shift := bodyRoom - len(h)
	copy(b[start-len(h):start], h)
	copy(b[shift:start-len(h)], b[:start-bodyRoom])
	out := b[shift:]
	if len(out) > MaxSize {
		return nil, &SizeError{Size: len(out), Limit: MaxSize}
	}
	return out, nil
}

// EncodedSize is the size of the checkpoint FinishEncode makes of a body
// of bodyLen bytes begun at start: a writer learns it before writing the
// last of the body, to stop short of a checkpoint over MaxSize.
func EncodedSize(start, bodyLen int) int {
	var head [bodyRoom]byte
	return start - bodyRoom + len(detcbor.AppendHead(head[:0], detcbor.Bytes, uint64(bodyLen))) + bodyLen
}

// Expect is what a caller requires of a checkpoint before its body is decoded.
type Expect struct {
	Semantics uint64 // required semantics version
	Program   []byte // required program hash; nil accepts any
}

// split decodes the outer array and the header, and returns the body's bytes.
func split(b []byte) ([]byte, *Header, error) {
	if len(b) > MaxSize {
		return nil, nil, decodeErr(ErrTooLarge, "checkpoint", "%d bytes, limit %d", len(b), MaxSize)
	}
	r := &reader{Reader: detcbor.Reader{B: b}, where: "checkpoint"}
	m, n, _, err := r.head()
	if err != nil || m != detcbor.Array || n != 2 {
		return nil, nil, decodeErr(ErrMalformed, "checkpoint", "not an array of a header and a body")
	}
	hr := &reader{Reader: r.Reader, where: "header"}
	h, err := hr.header()
	if err != nil {
		return nil, nil, decodeErr(ErrMalformed, "header", "%v", err)
	}
	r.Off = hr.Off
	body, err := r.Reader.Raw(detcbor.Bytes)
	if err != nil {
		return nil, nil, decodeErr(ErrMalformed, "checkpoint", "body: %v", err)
	}
	if r.Off != len(b) {
		return nil, nil, decodeErr(ErrMalformed, "checkpoint", "trailing bytes")
	}
	if h.Format != Format {
		return nil, nil, decodeErr(ErrFormat, "header", "format %d, this build reads format %d", h.Format, Format)
	}
	if err := h.validate(); err != nil {
		return nil, nil, err
	}
	return body, h, nil
}

// DecodeHeader decodes and validates only the header.
func DecodeHeader(b []byte) (*Header, error) {
	_, h, err := split(b)
	return h, err
}

// Decode decodes a checkpoint after checking its header against want; a
// checkpoint of another semantics version or program is refused before the
// body is decoded. The result is structurally valid; whether it fits the
// program (function indices, stack depths) is for the machine to check.
func Decode(b []byte, want Expect) (*Checkpoint, error) {
	return DecodeInto(b, want, nil)
}

// Scratch is memory that DecodeInto reuses from one checkpoint to the next:
// the slots and objects of a body, which a caller that only converts them
// (the machine's Restore, the sandbox's checks) need not allocate afresh
// for every step. The zero Scratch is ready; it is not safe for concurrent use.
type Scratch struct {
	vals []Val
	objs []Object
}

// scratchMax is the most slots a Scratch keeps between checkpoints.
const scratchMax = 1 << 16

// DecodeInto is Decode, with the body's slots and objects in s (nil: fresh
// memory). The Machine it returns is valid until s is used again; the header
// and the strings are the caller's to keep.
func DecodeInto(b []byte, want Expect, s *Scratch) (*Checkpoint, error) {
	body, h, err := split(b)
	if err != nil {
		return nil, err
	}
	if h.Semantics != want.Semantics {
		return nil, decodeErr(ErrSemantics, "header", "checkpoint has semantics version %d, this machine runs version %d", h.Semantics, want.Semantics)
	}
	if want.Program != nil && !bytes.Equal(h.Program, want.Program) {
		return nil, decodeErr(ErrProgram, "header", "checkpoint is of program %x, not %x", short(h.Program), short(want.Program))
	}
	r := &reader{Reader: detcbor.Reader{B: body}, where: "body", s: string(body)}
	if s != nil {
		r.slab, r.objs = s.vals, s.objs
	}
	m, err := r.machine()
	if s != nil {
		// Next time, room for all the slots of this body in one piece.
		if r.used > len(s.vals) && r.used <= scratchMax {
			s.vals = make([]Val, r.used)
		}
		if m != nil && len(m.Heap) > cap(s.objs) && len(m.Heap) <= scratchMax {
			s.objs = m.Heap
		}
	}
	if err != nil {
		return nil, &DecodeError{Err: ErrMalformed, Where: "body", Detail: err.Error()}
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &Checkpoint{Header: *h, Machine: m}, nil
}

func short(h []byte) []byte {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

func (h *Header) validate() error {
	bad := func(format string, args ...any) error { return decodeErr(ErrMalformed, "header", format, args...) }
	if len(h.Program) != 32 {
		return bad("program hash has %d bytes, want 32", len(h.Program))
	}
	if h.Status >= numStatus {
		return bad("status %d", h.Status)
	}
	switch h.Status {
	case Acting, Awaiting:
		if h.Pending == nil {
			return bad("status %s without a pending suspension", h.Status)
		}
		if (h.Status == Acting) != (h.Pending.Kind == PendingAct) || (h.Pending.Kind != PendingAct && h.Pending.Kind != PendingAwait) {
			return bad("status %s with pending kind %d", h.Status, h.Pending.Kind)
		}
		if h.Pending.Kind == PendingAct && h.Pending.Tag == "" {
			return bad("pending act without a tag")
		}
		if _, err := DecodeData(h.Pending.Args); err != nil {
			return err
		}
	default:
		if h.Pending != nil {
			return bad("status %s with a pending suspension", h.Status)
		}
	}
	if (h.Status == Done) != (h.Result != nil) {
		return bad("status %s and result presence disagree", h.Status)
	}
	if h.Result != nil {
		if _, err := DecodeData(h.Result); err != nil {
			return err
		}
	}
	if (h.Status == Failed) != (h.Error != nil) {
		return bad("status %s and error presence disagree", h.Status)
	}
	if h.Error != nil && h.Error.Data != nil {
		if _, err := DecodeData(h.Error.Data); err != nil {
			return err
		}
	}
	return nil
}

// validate checks the body's internal consistency: every reference in
// range, every object well formed. It does not know the program.
func (m *Machine) validate() error {
	bad := func(format string, args ...any) error { return decodeErr(ErrMalformed, "body", format, args...) }
	n := uint64(len(m.Heap))
	ns := uint64(len(m.Strings))
	checkVals := func(where string, obj int, vals []Val) error {
		for i, v := range vals {
			if (v.Kind == ValRef && v.N >= n) || (v.Kind == ValStrRef && v.N >= ns) {
				if obj >= 0 {
					where = fmt.Sprintf("object %d", obj)
				}
				return bad("%s[%d] refers to item %d beyond the heap or string table", where, i, v.N)
			}
		}
		return nil
	}
	if err := checkVals("globals", -1, m.Globals); err != nil {
		return err
	}
	if err := checkVals("stack", -1, m.Stack); err != nil {
		return err
	}
	for i, o := range m.Heap {
		if o.Kind == 0 || o.Kind >= numObjKinds {
			return bad("object %d has kind %d", i, o.Kind)
		}
		if err := checkVals("", i, o.Items); err != nil {
			return err
		}
		switch o.Kind {
		case ObjMap:
			if len(o.Items)%2 != 0 {
				return bad("map object %d has an odd number of items", i)
			}
		case ObjCell, ObjIter:
			if len(o.Items) != 1 {
				return bad("object %d of kind %d has %d items, want 1", i, o.Kind, len(o.Items))
			}
		case ObjError:
			isStr := func(v Val) bool { return v.Kind == ValStr || v.Kind == ValStrRef }
			if len(o.Items) != 4 || !isStr(o.Items[0]) || !isStr(o.Items[1]) || !isStr(o.Items[3]) {
				return bad("error object %d is malformed", i)
			}
		}
	}
	sp := uint32(len(m.Stack))
	for i, f := range m.Frames {
		if f.Base > sp || (i > 0 && f.Base < m.Frames[i-1].Base) {
			return bad("frame %d has base %d (stack %d)", i, f.Base, sp)
		}
		if f.Closure != 0 && uint64(f.Closure-1) >= n {
			return bad("frame %d refers to object %d of %d", i, f.Closure-1, n)
		}
	}
	for i, h := range m.Handlers {
		if int(h.Frame) >= len(m.Frames) || h.SP > sp || (i > 0 && h.Frame < m.Handlers[i-1].Frame) {
			return bad("handler %d is out of range", i)
		}
	}
	return nil
}
