// Package fuel rewrites a WebAssembly module so that it meters itself: it
// adds a mutable i64 global, exported as "runehost_fuel", and at the entry of
// every function and the head of every loop subtracts one and traps with
// `unreachable` once the count goes below zero. The host sets the global
// before a call and reads it after; a guest that never returns runs out.
//
// wazero can stop a running module only by checking a context at every loop
// header (WithCloseOnContextDone), which costs 4-5x on the Rune guest; the
// injected counter costs next to nothing and traps deterministically. With
// Options.Safepoint it also lets the host stop a module on a clock (the
// tools' sandbox, wasmvm/tool).
//
// Wasm branches address enclosing blocks by depth, so inserting straight-line
// code needs no offset fix-ups; the work is decoding every instruction's
// immediates, to find the loops. Sections other than global, export and code
// are copied byte for byte (the DataCount section included).
package fuel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ExportName is the name under which the fuel global is exported.
const ExportName = "runehost_fuel"

// Version is bumped on each change to what Inject writes (modules kept on
// disk are keyed by it).
const Version = 1

// ErrMalformed wraps every decoding error.
var ErrMalformed = errors.New("malformed wasm module")

// Section ids.
const (
	secCustom    = 0
	secImport    = 2
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secCode      = 10
	secDataCount = 12
	secTag       = 13
)

// order is the position a section id must take in a module.
var order = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

type section struct {
	id   byte
	body []byte
}

// InitialFuel is the value the fuel global starts with: the budget of the
// module's start function, which runs before the host can set it.
const InitialFuel = 1 << 32

// Options change what the check does.
type Options struct {
	// Safepoint, a power of two, makes the module enter the host every
	// Safepoint units of fuel (a memory.grow of 0 pages, which wazero runs in
	// Go): code that never calls the host otherwise holds its goroutine
	// where Go cannot preempt it, so neither the garbage collector nor a
	// timer could run until it returned. With it, the check tests the
	// count's low bits (all ones: every Safepoint units, -1 included)
	// instead of its sign, and only then whether it is below zero; fuel is
	// counted as without it, and a host that sets the count to 0 stops the
	// module at its next check. Zero: the plain check, as the Rune guest
	// has it. A module without memory gets the plain check.
	Safepoint uint64
}

// Inject returns module rewritten to meter itself. It fails on a module it
// cannot fully decode, or one that already exports ExportName.
func Inject(module []byte) ([]byte, error) { return InjectWith(module, Options{}) }

// InjectWith is Inject with options.
func InjectWith(module []byte, o Options) ([]byte, error) {
	if o.Safepoint != 0 && (o.Safepoint&(o.Safepoint-1) != 0 || o.Safepoint > 1<<62) {
		return nil, fmt.Errorf("fuel: safepoint %d is not a power of two", o.Safepoint)
	}
	if len(module) < 8 || !bytes.Equal(module[:8], []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) {
		return nil, fmt.Errorf("%w: not a wasm 1.0 binary", ErrMalformed)
	}
	var secs []section
	r := &reader{b: module, off: 8}
	last := 0
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, err
		}
		if id != secCustom {
			pos, ok := order[id]
			if !ok {
				return nil, fmt.Errorf("%w: unknown section id %d", ErrMalformed, id)
			}
			if pos <= last {
				return nil, fmt.Errorf("%w: section %d out of order", ErrMalformed, id)
			}
			last = pos
		}
		secs = append(secs, section{id, body})
	}

	importedGlobals, definedGlobals, memories := 0, 0, 0
	for _, s := range secs {
		switch s.id {
		case secImport:
			n, mems, err := countImports(s.body)
			if err != nil {
				return nil, err
			}
			importedGlobals, memories = n, memories+mems
		case secMemory:
			n, _, err := (&reader{b: s.body}).vecLen()
			if err != nil {
				return nil, err
			}
			memories += n
		case secGlobal:
			n, _, err := (&reader{b: s.body}).vecLen()
			if err != nil {
				return nil, err
			}
			definedGlobals = n
		case secExport:
			if err := checkExports(s.body); err != nil {
				return nil, err
			}
		}
	}
	fuelIndex := uint32(importedGlobals + definedGlobals)

	// The new global: mutable i64 initialised to InitialFuel.
	newGlobal := appendS64([]byte{0x7e, 0x01, 0x42}, InitialFuel)
	newGlobal = append(newGlobal, 0x0b)
	newExport := appendName(nil, ExportName)
	newExport = append(newExport, 0x03)
	newExport = appendU32(newExport, fuelIndex)

	out := append([]byte(nil), module[:8]...)
	emitted := map[byte]bool{}
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
		emitted[id] = true
	}
	// insertMissing emits the global or export section if the module has
	// none and the next section must come after it.
	insertMissing := func(next byte) {
		for _, id := range []byte{secGlobal, secExport} {
			if !emitted[id] && (next == 0xff || order[next] > order[id]) {
				if id == secGlobal {
					emit(id, appendVec(nil, 1, newGlobal))
				} else {
					emit(id, appendVec(nil, 1, newExport))
				}
			}
		}
	}
	for _, s := range secs {
		if s.id != secCustom {
			insertMissing(s.id)
		}
		switch s.id {
		case secGlobal:
			body, err := appendToVec(s.body, newGlobal)
			if err != nil {
				return nil, err
			}
			emit(s.id, body)
		case secExport:
			body, err := appendToVec(s.body, newExport)
			if err != nil {
				return nil, err
			}
			emit(s.id, body)
		case secCode:
			chk := check(fuelIndex)
			if o.Safepoint != 0 && memories > 0 {
				chk = checkSafepoint(fuelIndex, o.Safepoint)
			}
			body, err := rewriteCode(s.body, chk)
			if err != nil {
				return nil, err
			}
			emit(s.id, body)
		default:
			emit(s.id, s.body)
		}
	}
	insertMissing(0xff)
	return out, nil
}

// check is the metering sequence for a global index.
func check(g uint32) []byte {
	b := []byte{0x23} // global.get
	b = appendU32(b, g)
	b = append(b, 0x42, 0x01, 0x7d, 0x24) // i64.const 1; i64.sub; global.set
	b = appendU32(b, g)
	b = append(b, 0x23)
	b = appendU32(b, g)
	return append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b) // i64.const 0; i64.lt_s; if; unreachable; end
}

// checkSafepoint is the metering sequence that enters the host every
// `every` units and traps below zero (Options.Safepoint).
func checkSafepoint(g uint32, every uint64) []byte {
	mask := appendS64([]byte{0x42}, int64(every-1)) // i64.const every-1
	b := []byte{0x23}                               // global.get
	b = appendU32(b, g)
	b = append(b, 0x42, 0x01, 0x7d, 0x24) // i64.const 1; i64.sub; global.set
	b = appendU32(b, g)
	b = append(b, 0x23)
	b = appendU32(b, g)
	b = append(append(append(b, mask...), 0x83), mask...) // i64.and with the mask, the mask
	b = append(b, 0x51, 0x04, 0x40)                       // i64.eq; if
	b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1a)           // i32.const 0; memory.grow 0; drop
	b = append(b, 0x23)
	b = appendU32(b, g)
	return append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b, 0x0b) // i64.const 0; i64.lt_s; if; unreachable; end; end
}

func rewriteCode(body []byte, chk []byte) ([]byte, error) {
	r := &reader{b: body}
	n, _, err := r.vecLen()
	if err != nil {
		return nil, err
	}
	out := appendU32(nil, uint32(n))
	var fn []byte
	for i := 0; i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		code, err := r.bytes(int(size))
		if err != nil {
			return nil, err
		}
		fn, err = rewriteFunc(fn[:0], code, chk)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = appendU32(out, uint32(len(fn)))
		out = append(out, fn...)
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%w: trailing bytes in the code section", ErrMalformed)
	}
	return out, nil
}

// rewriteFunc copies one function body, inserting chk at its entry and after
// each loop header.
func rewriteFunc(out, code, chk []byte) ([]byte, error) {
	r := &reader{b: code}
	// Locals: vec of (count, valtype).
	n, _, err := r.vecLen()
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		if _, err := r.u32(); err != nil {
			return nil, err
		}
		if err := r.valtype(); err != nil {
			return nil, err
		}
	}
	out = append(out, code[:r.off]...)
	out = append(out, chk...)
	depth := 1 // the function body is a block ended by its last `end`
	for depth > 0 {
		start := r.off
		op, err := r.byte()
		if err != nil {
			return nil, err
		}
		isLoop := op == 0x03
		switch op {
		case 0x02, 0x03, 0x04: // block, loop, if
			depth++
		case 0x0b: // end
			depth--
		}
		if err := r.immediates(op); err != nil {
			return nil, fmt.Errorf("opcode 0x%02x at %d: %w", op, start, err)
		}
		out = append(out, code[start:r.off]...)
		if isLoop {
			out = append(out, chk...)
		}
	}
	if r.off != len(code) {
		return nil, fmt.Errorf("%w: code after the final end", ErrMalformed)
	}
	return out, nil
}

// countImports counts the globals and memories a module imports.
func countImports(body []byte) (int, int, error) {
	r := &reader{b: body}
	n, _, err := r.vecLen()
	if err != nil {
		return 0, 0, err
	}
	globals, memories := 0, 0
	for i := 0; i < n; i++ {
		if err := r.name(); err != nil {
			return 0, 0, err
		}
		if err := r.name(); err != nil {
			return 0, 0, err
		}
		kind, err := r.byte()
		if err != nil {
			return 0, 0, err
		}
		switch kind {
		case 0x00: // func: type index
			_, err = r.u32()
		case 0x01: // table: reftype, limits
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case 0x02: // memory: limits
			memories++
			err = r.limits()
		case 0x03: // global: valtype, mut
			globals++
			if err = r.valtype(); err == nil {
				_, err = r.byte()
			}
		case 0x04: // tag: attribute, type index
			if _, err = r.byte(); err == nil {
				_, err = r.u32()
			}
		default:
			err = fmt.Errorf("%w: import kind %d", ErrMalformed, kind)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return globals, memories, nil
}

func checkExports(body []byte) error {
	r := &reader{b: body}
	n, _, err := r.vecLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		start := r.off
		if err := r.name(); err != nil {
			return err
		}
		if bytes.Equal(body[start:r.off], appendName(nil, ExportName)) {
			return fmt.Errorf("module already exports %s", ExportName)
		}
		if _, err := r.byte(); err != nil {
			return err
		}
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// appendToVec adds one encoded item to an encoded vector.
func appendToVec(vec, item []byte) ([]byte, error) {
	r := &reader{b: vec}
	n, _, err := r.vecLen()
	if err != nil {
		return nil, err
	}
	out := appendU32(nil, uint32(n+1))
	out = append(out, vec[r.off:]...)
	return append(out, item...), nil
}

func appendVec(b []byte, n uint32, items []byte) []byte {
	return append(appendU32(b, n), items...)
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

func appendU32(b []byte, v uint32) []byte {
	return binary.AppendUvarint(b, uint64(v))
}

// appendS64 appends v as a signed LEB128.
func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
