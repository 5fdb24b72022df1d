// decode.go holds the bounds-checked reader of wasm binaries and the
// immediates of every instruction.

package fuel

import "fmt"

type reader struct {
	b   []byte
	off int
}

func (r *reader) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrMalformed, r.off, fmt.Sprintf(format, args...))
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.fail("unexpected end")
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, r.fail("length %d exceeds the input", n)
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b, nil
}

// leb reads an unsigned LEB128 of at most bits bits.
func (r *reader) leb(bits int) (uint64, error) {
	var v uint64
	for shift := 0; ; shift += 7 {
		if shift >= (bits+6)/7*7 {
			return 0, r.fail("LEB128 too long")
		}
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.leb(32)
	if v > 1<<32-1 {
		return 0, r.fail("u32 out of range")
	}
	return uint32(v), err
}

// vecLen reads a vector length, bounded by the bytes left (each item takes one at least).
func (r *reader) vecLen() (int, int, error) {
	n, err := r.u32()
	if err != nil {
		return 0, 0, err
	}
	if int(n) > len(r.b)-r.off {
		return 0, 0, r.fail("vector of %d items exceeds the input", n)
	}
	return int(n), r.off, nil
}

func (r *reader) name() error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	_, err = r.bytes(int(n))
	return err
}

func (r *reader) valtype() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	switch c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return nil
	}
	return r.fail("value type 0x%02x", c)
}

func (r *reader) limits() error {
	flag, err := r.byte()
	if err != nil {
		return err
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flag&1 != 0 {
		_, err = r.u32()
	}
	return err
}

func (r *reader) blocktype() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	switch c {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return nil
	}
	// A type index as a signed 33-bit LEB; its first byte is c.
	r.off--
	_, err = r.leb(33)
	return err
}

func (r *reader) memarg() error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 { // multi-memory: a memory index follows
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	_, err = r.leb(64)
	return err
}

func (r *reader) skip(n int) error {
	_, err := r.bytes(n)
	return err
}

// immediates consumes the immediates of opcode op.
func (r *reader) immediates(op byte) error {
	var err error
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04:
		return r.blocktype()
	case op <= 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
		return nil
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || op == 0xd2 || (op >= 0x20 && op <= 0x26):
		_, err = r.u32()
	case op == 0x0e: // br_table
		n, _, e := r.vecLen()
		if e != nil {
			return e
		}
		for i := 0; i <= n && err == nil; i++ {
			_, err = r.u32()
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		if _, err = r.u32(); err == nil {
			_, err = r.u32()
		}
	case op == 0x1c: // select t*
		n, _, e := r.vecLen()
		if e != nil {
			return e
		}
		for i := 0; i < n && err == nil; i++ {
			err = r.valtype()
		}
	case op >= 0x28 && op <= 0x3e:
		return r.memarg()
	case op == 0x3f || op == 0x40:
		_, err = r.u32()
	case op == 0x41:
		_, err = r.leb(32)
	case op == 0x42:
		_, err = r.leb(64)
	case op == 0x43:
		return r.skip(4)
	case op == 0x44:
		return r.skip(8)
	case op >= 0x45 && op <= 0xc4:
		return nil
	case op == 0xd0:
		_, err = r.byte()
	case op == 0xfc:
		return r.prefixFC()
	case op == 0xfd:
		return r.prefixFD()
	case op == 0xfe:
		return r.prefixFE()
	default:
		return r.fail("unknown opcode 0x%02x", op)
	}
	return err
}

func (r *reader) prefixFC() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	n := 0
	switch {
	case sub <= 7: // saturating truncations
	case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
		n = 1
	case sub == 8 || sub == 10 || sub == 12 || sub == 14:
		n = 2
	default:
		return r.fail("unknown 0xfc opcode %d", sub)
	}
	for i := 0; i < n; i++ {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) prefixFD() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		return r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		return r.skip(16)
	case sub >= 21 && sub <= 34: // extract and replace lane
		return r.skip(1)
	case sub >= 84 && sub <= 91: // load and store lane
		if err := r.memarg(); err != nil {
			return err
		}
		return r.skip(1)
	case sub <= 0x113:
		return nil
	}
	return r.fail("unknown 0xfd opcode %d", sub)
}

func (r *reader) prefixFE() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub == 3: // atomic.fence
		return r.skip(1)
	case sub <= 0x4e:
		return r.memarg()
	}
	return r.fail("unknown 0xfe opcode %d", sub)
}
