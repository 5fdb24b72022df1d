// wasm.go holds a small WebAssembly binary encoder: what the generator emits.

package wasmgen

import "math"

// Value and block types.
const (
	tI32   = 0x7F
	tI64   = 0x7E
	tF64   = 0x7C
	tEmpty = 0x40
	tFunc  = 0x70 // funcref
)

// Opcodes, named as in the text format.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0B
	opBr           = 0x0C
	opBrIf         = 0x0D
	opBrTable      = 0x0E
	opReturn       = 0x0F
	opCall         = 0x10
	opCallIndirect = 0x11
	opDrop         = 0x1A
	opSelect       = 0x1B
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opI32Load      = 0x28
	opI64Load      = 0x29
	opF64Load      = 0x2B
	opI32Load8U    = 0x2D
	opI32Store     = 0x36
	opI64Store     = 0x37
	opF64Store     = 0x39
	opI32Const     = 0x41
	opI64Const     = 0x42
	opF64Const     = 0x44
	opI32Eqz       = 0x45
	opI32Eq        = 0x46
	opI32Ne        = 0x47
	opI32LtS       = 0x48
	opI32LtU       = 0x49
	opI32GtS       = 0x4A
	opI32GeS       = 0x4E
	opI32DivU      = 0x6E
	opI32LeS       = 0x4C
	opI64Eqz       = 0x50
	opI64Eq        = 0x51
	opI64Ne        = 0x52
	opI64LtS       = 0x53
	opI64LtU       = 0x54
	opI64GtS       = 0x55
	opI64GtU       = 0x56
	opI64LeS       = 0x57
	opI64GeS       = 0x59
	opI64GeU       = 0x5A
	opF64Eq        = 0x61
	opF64Ne        = 0x62
	opF64Lt        = 0x63
	opF64Gt        = 0x64
	opF64Le        = 0x65
	opF64Ge        = 0x66
	opI32Add       = 0x6A
	opI32Sub       = 0x6B
	opI32Mul       = 0x6C
	opI32And       = 0x71
	opI32Or        = 0x72
	opI64Add       = 0x7C
	opI64Sub       = 0x7D
	opI64Mul       = 0x7E
	opI64DivS      = 0x7F
	opI64RemS      = 0x81
	opI64And       = 0x83
	opI64Or        = 0x84
	opI64Xor       = 0x85
	opF64Neg       = 0x9A
	opF64Trunc     = 0x9D
	opF64Sqrt      = 0x9F
	opF64Add       = 0xA0
	opF64Sub       = 0xA1
	opF64Mul       = 0xA2
	opF64Div       = 0xA3
	opI32WrapI64   = 0xA7
	opI64ExtendU   = 0xAD
	opI64TruncF64  = 0xB0 // i64.trunc_f64_s
	opF64FromI64   = 0xB9 // f64.convert_i64_s
	opI64FromF64   = 0xBD // i64.reinterpret_f64
	opF64FromBits  = 0xBF // f64.reinterpret_i64
	opPrefixFC     = 0xFC
	fcMemoryFill   = 0x0B
	opI64Load8U    = 0x31
	opI32Store8    = 0x3A
	opI32GtU       = 0x4B
	opI32GeU       = 0x4F
	opI32Shl       = 0x74
	opI64DivU      = 0x80
	opI64RemU      = 0x82
	opI64Shl       = 0x86
	opI64ShrU      = 0x88
	fcMemoryCopy   = 0x0A
)

// code is a function body or a section being encoded.
type code []byte

func (c *code) byte(b ...byte) { *c = append(*c, b...) }

func (c *code) u32(v uint32) {
	for {
		b := byte(v & 0x7F)
		v >>= 7
		if v != 0 {
			*c = append(*c, b|0x80)
			continue
		}
		*c = append(*c, b)
		return
	}
}

func (c *code) s64(v int64) {
	for {
		b := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			*c = append(*c, b)
			return
		}
		*c = append(*c, b|0x80)
	}
}

func (c *code) name(s string) {
	c.u32(uint32(len(s)))
	*c = append(*c, s...)
}

// vec appends a length-prefixed copy of b.
func (c *code) vec(b []byte) {
	c.u32(uint32(len(b)))
	*c = append(*c, b...)
}

func (c *code) get(l uint32) { c.byte(opLocalGet); c.u32(l) }
func (c *code) set(l uint32) { c.byte(opLocalSet); c.u32(l) }
func (c *code) tee(l uint32) { c.byte(opLocalTee); c.u32(l) }
func (c *code) i32(v int32)  { c.byte(opI32Const); c.s64(int64(v)) }
func (c *code) i64(v int64)  { c.byte(opI64Const); c.s64(v) }
func (c *code) br(depth int) { c.byte(opBr); c.u32(uint32(depth)) }
func (c *code) brIf(depth int) {
	c.byte(opBrIf)
	c.u32(uint32(depth))
}
func (c *code) f64(v float64) {
	c.byte(opF64Const)
	b := math.Float64bits(v)
	for i := 0; i < 8; i++ {
		c.byte(byte(b >> (8 * i)))
	}
}

// mem emits a load or store with its alignment and offset.
func (c *code) mem(op byte, offset uint32) {
	c.byte(op)
	switch op {
	case opI32Load8U, opI64Load8U, opI32Store8:
		c.u32(0)
	case opI32Load, opI32Store:
		c.u32(2)
	default:
		c.u32(3)
	}
	c.u32(offset)
}

// block opens a block, loop or if with no result.
func (c *code) block(op byte) { c.byte(op, tEmpty) }
func (c *code) end()          { c.byte(opEnd) }

// succeed ends a helper whose body is in a block $fail: 1 returned where
// the body fell through, 0 where it branched to $fail.
func succeed(c *code) {
	c.i32(1)
	c.byte(opReturn)
	c.end() // $fail
	c.i32(0)
	c.end()
}

// section appends a section of id with body b to a module.
func (c *code) section(id byte, b code) {
	c.byte(id)
	c.vec(b)
}
