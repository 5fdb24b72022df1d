// body.go holds the hand-written codec of the machine body.
//
// The body is most of a checkpoint and is written and read at every
// suspension, inside the sandbox too, where reflection-based CBOR is an
// order of magnitude slower than native. Its layout is fixed by the schema,
// so it is written directly; TestBodyMatchesReference checks that the bytes
// are exactly what fxamacker/cbor's core deterministic encoder gives for the
// same Machine, so the format stays plain deterministic CBOR.

package checkpoint

import (
	"math"

	"github.com/runehost/runehost/internal/detcbor"
)

// bodyKeys is the number of keys of the body map.
const bodyKeys = 11

// appendMachine writes m as a CBOR map with integer keys 1 to 11.
func appendMachine(b []byte, m *Machine) []byte {
	b = detcbor.AppendHead(b, detcbor.Map, bodyKeys)
	b = detcbor.AppendHead(append(b, 0x01), detcbor.Uint, m.Steps)
	b = detcbor.AppendHead(append(b, 0x02), detcbor.Uint, m.Limit)
	b = detcbor.AppendInt(append(b, 0x03), m.Clock)
	b = detcbor.AppendHead(append(b, 0x04), detcbor.Uint, m.RNG)
	b = detcbor.AppendHead(append(b, 0x05), detcbor.Uint, m.Seq)
	b = appendVals(append(b, 0x06), m.Globals)
	b = appendVals(append(b, 0x07), m.Stack)
	b = detcbor.AppendHead(append(b, 0x08), detcbor.Array, uint64(len(m.Frames)))
	for _, f := range m.Frames {
		b = detcbor.AppendHead(b, detcbor.Array, 4)
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(f.Fn))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(f.PC))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(f.Base))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(f.Closure))
	}
	b = detcbor.AppendHead(append(b, 0x09), detcbor.Array, uint64(len(m.Handlers)))
	for _, h := range m.Handlers {
		b = detcbor.AppendHead(b, detcbor.Array, 3)
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(h.Frame))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(h.PC))
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(h.SP))
	}
	b = detcbor.AppendHead(append(b, 0x0a), detcbor.Array, uint64(len(m.Heap)))
	for _, o := range m.Heap {
		b = detcbor.AppendHead(b, detcbor.Array, 3)
		b = detcbor.AppendHead(b, detcbor.Uint, uint64(o.Kind))
		b = detcbor.AppendInt(b, o.Aux)
		b = appendVals(b, o.Items)
	}
	b = detcbor.AppendHead(append(b, 0x0b), detcbor.Array, uint64(len(m.Strings)))
	for _, str := range m.Strings {
		b = detcbor.AppendText(b, str)
	}
	return b
}

func appendVals(b []byte, vs []Val) []byte {
	b = detcbor.AppendHead(b, detcbor.Array, uint64(len(vs)))
	for _, v := range vs {
		b = AppendVal(b, v)
	}
	return b
}

// machine reads a body written by appendMachine, strictly.
func (r *reader) machine() (*Machine, error) {
	m := &Machine{}
	if err := r.expect(detcbor.Map, bodyKeys, "body map"); err != nil {
		return nil, err
	}
	for key := uint64(1); key <= bodyKeys; key++ {
		if err := r.expect(detcbor.Uint, key, "body key"); err != nil {
			return nil, err
		}
		var err error
		switch key {
		case 1:
			m.Steps, err = r.uint()
		case 2:
			m.Limit, err = r.uint()
		case 3:
			m.Clock, err = r.int()
		case 4:
			m.RNG, err = r.uint()
		case 5:
			m.Seq, err = r.uint()
		case 6:
			m.Globals, err = r.vals()
		case 7:
			m.Stack, err = r.vals()
		case 8:
			var n int
			if n, err = r.array(5); err == nil {
				m.Frames = make([]Frame, n)
				for i := range m.Frames {
					var f [4]uint32
					if err = r.uint32s(f[:]); err != nil {
						break
					}
					m.Frames[i] = Frame{Fn: f[0], PC: f[1], Base: f[2], Closure: f[3]}
				}
			}
		case 9:
			var n int
			if n, err = r.array(4); err == nil {
				m.Handlers = make([]Handler, n)
				for i := range m.Handlers {
					var h [3]uint32
					if err = r.uint32s(h[:]); err != nil {
						break
					}
					m.Handlers[i] = Handler{Frame: h[0], PC: h[1], SP: h[2]}
				}
			}
		case 10:
			var n int
			if n, err = r.array(4); err == nil {
				if n > MaxObjects {
					return nil, r.fail("%d heap objects, limit %d", n, MaxObjects)
				}
				if n > 0 && n <= cap(r.objs) {
					m.Heap = r.objs[:n] // every field is set below
				} else {
					m.Heap = make([]Object, n)
				}
				for i := range m.Heap {
					// Most objects start [small kind, 0, [fewer than 24 items]]: read
					// those four bytes at once, the rest as below.
					if b := r.B[r.Off:]; !r.general && len(b) >= 4 && b[0] == 0x83 && b[1] < 0x18 && b[2] < 0x18 && b[3]&0xe0 == 0x80 && b[3] < 0x98 {
						n := int(b[3] & 0x1f)
						r.Off += 4
						if n > len(r.B)-r.Off { // what length(n, 1) refuses
							_, err = r.length(uint64(n), 1)
							break
						}
						o := &m.Heap[i]
						o.Kind, o.Aux = ObjKind(b[1]), int64(b[2])
						if o.Items, err = r.valsOf(n); err != nil {
							break
						}
						continue
					}
					if err = r.expect(detcbor.Array, 3, "object"); err != nil {
						break
					}
					var kind uint64
					if kind, err = r.uint(); err != nil {
						break
					}
					if kind > math.MaxUint8 {
						return nil, r.fail("object kind %d", kind)
					}
					o := &m.Heap[i]
					o.Kind = ObjKind(kind)
					if o.Aux, err = r.int(); err != nil {
						break
					}
					if o.Items, err = r.vals(); err != nil {
						break
					}
				}
			}
		case 11:
			var n int
			if n, err = r.array(1); err == nil {
				m.Strings = make([]string, n)
				for i := range m.Strings {
					var major byte
					var l uint64
					if major, l, _, err = r.head(); err != nil {
						break
					}
					if major != detcbor.Text {
						return nil, r.fail("string table holds major type %d", major)
					}
					if m.Strings[i], err = r.text(l); err != nil {
						break
					}
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if r.Off != len(r.B) {
		return nil, r.fail("trailing bytes after the body")
	}
	return m, nil
}

func (r *reader) expect(major byte, n uint64, what string) error {
	m, arg, _, err := r.head()
	if err != nil {
		return err
	}
	if m != major || arg != n {
		return r.fail("%s: want major type %d with %d, got major type %d with %d", what, major, n, m, arg)
	}
	return nil
}

func (r *reader) uint() (uint64, error) {
	v, err := r.Reader.Uint()
	if err != nil {
		return 0, r.wrap(err)
	}
	return v, nil
}

func (r *reader) int() (int64, error) {
	v, err := r.Reader.Int()
	if err != nil {
		return 0, r.wrap(err)
	}
	return v, nil
}

func (r *reader) uint32s(out []uint32) error {
	if err := r.expect(detcbor.Array, uint64(len(out)), "tuple"); err != nil {
		return err
	}
	for i := range out {
		v, err := r.uint()
		if err != nil {
			return err
		}
		if v > math.MaxUint32 {
			return r.fail("%d does not fit in 32 bits", v)
		}
		out[i] = uint32(v)
	}
	return nil
}

// array reads an array head whose items take at least min bytes each.
func (r *reader) array(min int) (int, error) {
	m, arg, _, err := r.head()
	if err != nil {
		return 0, err
	}
	if m != detcbor.Array {
		return 0, r.fail("want an array, got major type %d", m)
	}
	return r.length(arg, min)
}

func (r *reader) vals() ([]Val, error) {
	n, err := r.array(1)
	if err != nil {
		return nil, err
	}
	return r.valsOf(n)
}

// valsOf reads n slots, whose count has been checked against the input.
func (r *reader) valsOf(n int) ([]Val, error) {
	if n == 0 {
		return nil, nil // none is nil, whatever the slab holds
	}
	var err error
	if n > len(r.slab) {
		r.slab = make([]Val, max(n, 1024))
	}
	out := r.slab[:n:n]
	r.slab = r.slab[n:]
	r.used += n
	for i := range out {
		// val's shortcuts, here rather than through a call each (calls
		// are dear in the sandbox).
		if r.Off < len(r.B) && !r.general {
			switch c := r.B[r.Off]; {
			case c < 0x18:
				out[i] = Val{Kind: ValInt, N: uint64(c)}
				r.Off++
				continue
			case c >= 0x60 && c < 0x78 && r.s != "":
				if end := r.Off + 1 + int(c-0x60); end <= len(r.s) && asciiString(r.s[r.Off+1:end]) {
					out[i] = Val{Kind: ValStr, S: r.s[r.Off+1 : end]}
					r.Off = end
					continue
				}
			case c == 0xd9 && r.Off+3 < len(r.B) && r.B[r.Off+1] == TagRef>>8 && r.B[r.Off+2] == TagRef&0xff:
				if v, n := shortUint(r.B[r.Off+3:]); n > 0 {
					out[i] = Val{Kind: ValRef, N: v}
					r.Off += 3 + n
					continue
				}
			}
		}
		if out[i], err = r.val(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
