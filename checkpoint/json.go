// json.go converts data values to and from JSON, keeping map order.

package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// DataFromJSON parses JSON text into a data value: objects become ordered
// maps, integers that fit int64 become int64, other numbers float64.
func DataFromJSON(text []byte) (any, error) {
	if len(text) > MaxDataSize {
		return nil, fmt.Errorf("JSON of %d bytes exceeds the limit of %d", len(text), MaxDataSize)
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	v, err := jsonData(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: trailing data after the value")
	}
	return v, nil
}

func jsonData(d *json.Decoder, depth int) (any, error) {
	if depth > MaxDataDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", MaxDataDepth)
	}
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("invalid JSON: unexpected end of input")
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	switch t := tok.(type) {
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid JSON number %s", s)
		}
		return f, nil
	case json.Delim:
		switch t {
		case '[':
			list := []any{}
			for d.More() {
				v, err := jsonData(d, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := d.Token()
			return list, err
		case '{':
			m := &Map{}
			seen := make(map[string]bool)
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %v", err)
				}
				k := kt.(string)
				if seen[k] {
					return nil, fmt.Errorf("invalid JSON: duplicate key %q", k)
				}
				seen[k] = true
				v, err := jsonData(d, depth+1)
				if err != nil {
					return nil, err
				}
				m.Keys = append(m.Keys, k)
				m.Values = append(m.Values, v)
			}
			_, err := d.Token()
			return m, err
		}
	}
	return tok, nil // nil, bool, string
}

// DataToJSON writes a data value as JSON. Floats keep a decimal point so they
// read back as floats; map keys that are not strings are written as strings.
func DataToJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, v any, depth int) error {
	if depth > MaxDataDepth {
		return fmt.Errorf("value nested more than %d deep", MaxDataDepth)
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%v has no JSON form", v)
		}
		b.WriteString(FormatFloat(v))
	case string:
		b.Write(AppendJSONString(nil, v))
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, x, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *Map:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprint(k)
			}
			b.Write(AppendJSONString(nil, ks))
			b.WriteByte(':')
			if err := writeJSON(b, v.Values[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("not a data value: %T", v)
	}
	return nil
}
