// format.go holds str(), repr() and the JSON codec of values.

package machine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/runehost/runehost/checkpoint"
)

func formatFloat(f float64) string { return checkpoint.FormatFloat(f) }

// toStr is str(v): strings as they are, everything else as repr.
func (m *Machine) toStr(v Value, depth int) (string, *rtError) {
	if v.k == Str {
		return v.str(), nil
	}
	return m.repr(v)
}

func (m *Machine) repr(v Value) (string, *rtError) {
	var b strings.Builder
	if err := m.writeRepr(&b, v, 0); err != nil {
		return "", err
	}
	if b.Len() > MaxString {
		return "", errorf(KindLimit, "string of %d bytes exceeds the limit of %d", b.Len(), MaxString)
	}
	m.chargeBytes(b.Len())
	return b.String(), nil
}

func (m *Machine) writeRepr(b *strings.Builder, v Value, depth int) *rtError {
	if depth > MaxDepth {
		return errorf(KindLimit, "value nested more than %d deep", MaxDepth)
	}
	if b.Len() > MaxString {
		return errorf(KindLimit, "string exceeds the limit of %d bytes", MaxString)
	}
	switch v.k {
	case Nil:
		b.WriteString("nil")
	case Bool:
		b.WriteString(strconv.FormatBool(v.n != 0))
	case Int:
		b.WriteString(strconv.FormatInt(v.int(), 10))
	case Float:
		b.WriteString(formatFloat(v.float()))
	case Str:
		b.WriteString(checkpoint.Quote(v.str()))
	case List:
		b.WriteByte('[')
		for i, e := range v.list().elems {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := m.writeRepr(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case Map:
		mo := v.mapv()
		b.WriteByte('{')
		for i, k := range mo.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			m.writeRepr(b, k, depth+1)
			b.WriteString(": ")
			if err := m.writeRepr(b, mo.vals[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case Func:
		b.WriteString("<fn " + v.fn().fn.Name + ">")
	case Builtin:
		b.WriteString("<fn " + builtins[v.n].name + ">")
	case Error:
		e := v.errObj()
		b.WriteString("error(" + checkpoint.Quote(e.kind) + ", " + checkpoint.Quote(e.msg) + ")")
	default:
		b.WriteString("<" + v.k.String() + ">")
	}
	return nil
}

// jsonEncode writes v as JSON; maps keep their order, keys must be strings.
func (m *Machine) jsonEncode(v Value) (string, *rtError) {
	var b bytes.Buffer
	if err := m.writeJSON(&b, v, 0); err != nil {
		return "", err
	}
	if b.Len() > MaxString {
		return "", errorf(KindLimit, "string of %d bytes exceeds the limit of %d", b.Len(), MaxString)
	}
	m.chargeBytes(b.Len())
	return b.String(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	var buf [64]byte
	b.Write(checkpoint.AppendJSONString(buf[:0], s))
}

func (m *Machine) writeJSON(b *bytes.Buffer, v Value, depth int) *rtError {
	if depth > MaxDepth {
		return errorf(KindLimit, "value nested more than %d deep", MaxDepth)
	}
	if b.Len() > MaxString {
		return errorf(KindLimit, "string exceeds the limit of %d bytes", MaxString)
	}
	switch v.k {
	case Nil:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.n != 0))
	case Int:
		b.WriteString(strconv.FormatInt(v.int(), 10))
	case Float:
		f := v.float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errorf(KindValue, "json_encode: %s has no JSON form", formatFloat(f))
		}
		b.WriteString(formatFloat(f))
	case Str:
		writeJSONString(b, v.str())
	case List:
		b.WriteByte('[')
		for i, e := range v.list().elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := m.writeJSON(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case Map:
		mo := v.mapv()
		b.WriteByte('{')
		for i, k := range mo.keys {
			if k.k != Str {
				return errorf(KindValue, "json_encode: map key %s is not a string", quoteKey(k))
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k.str())
			b.WriteByte(':')
			if err := m.writeJSON(b, mo.vals[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return errorf(KindValue, "json_encode: %s has no JSON form", typeName(v))
	}
	return nil
}

// jsonDecode parses JSON text into values; objects keep their key order.
// Integers that fit int64 become ints, other numbers floats.
func (m *Machine) jsonDecode(s string) (Value, *rtError) {
	m.chargeBytes(len(s))
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	v, err := m.jsonValue(d, 0)
	if err != nil {
		return nilValue, err
	}
	if _, e := d.Token(); e != io.EOF {
		return nilValue, errorf(KindValue, "json_decode: trailing data after the value")
	}
	return v, nil
}

func (m *Machine) jsonValue(d *json.Decoder, depth int) (Value, *rtError) {
	if depth > MaxDepth {
		return nilValue, errorf(KindLimit, "json_decode: nested more than %d deep", MaxDepth)
	}
	tok, err := d.Token()
	if err != nil {
		return nilValue, jsonError(err)
	}
	switch t := tok.(type) {
	case nil:
		return nilValue, nil
	case bool:
		return boolValue(t), nil
	case string:
		return strValue(t), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return intValue(i), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nilValue, errorf(KindValue, "json_decode: number %s out of range", string(t))
		}
		return floatValue(f), nil
	case json.Delim:
		switch t {
		case '[':
			var elems []Value
			for d.More() {
				e, err := m.jsonValue(d, depth+1)
				if err != nil {
					return nilValue, err
				}
				if len(elems) >= MaxList {
					return nilValue, errorf(KindLimit, "json_decode: list exceeds the limit of %d", MaxList)
				}
				elems = append(elems, e)
			}
			if _, err := d.Token(); err != nil { // ]
				return nilValue, jsonError(err)
			}
			return listValue(elems), nil
		case '{':
			mo := &mapObj{}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nilValue, jsonError(err)
				}
				k, _ := kt.(string)
				v, rerr := m.jsonValue(d, depth+1)
				if rerr != nil {
					return nilValue, rerr
				}
				if len(mo.keys) >= MaxMap {
					return nilValue, errorf(KindLimit, "json_decode: map exceeds the limit of %d", MaxMap)
				}
				mo.set(strValue(k), v)
			}
			if _, err := d.Token(); err != nil { // }
				return nilValue, jsonError(err)
			}
			return Value{k: Map, p: ptr(mo)}, nil
		}
	}
	return nilValue, errorf(KindValue, "json_decode: unexpected %v", tok)
}

// jsonError words a decoding error; every way of running out of input
// reads the same.
func jsonError(err error) *rtError {
	var se *json.SyntaxError
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return errorf(KindValue, "json_decode: unexpected end of input")
	case errors.As(err, &se):
		if strings.Contains(se.Error(), "unexpected end of JSON input") {
			return errorf(KindValue, "json_decode: unexpected end of input")
		}
		return errorf(KindValue, "json_decode: %s at offset %d", se.Error(), se.Offset)
	}
	return errorf(KindValue, "json_decode: %s", err.Error())
}
