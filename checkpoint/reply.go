// reply.go holds the encoding of the reply that resumes an act or await.

package checkpoint

import "github.com/runehost/runehost/internal/detcbor"

// Reply is the outcome delivered to a suspended machine: a data value, or
// an error (kind "denied", "failed", "unknown_outcome", "timeout", ...)
// that the prog sees thrown at its act or await.
type Reply struct {
	Value any
	Err   *Error // only Kind, Msg and Data are used
}

// EncodeReply encodes a reply: [true, value] or [false, kind, msg, data].
func EncodeReply(r Reply) ([]byte, error) {
	if r.Err == nil {
		b := append(detcbor.AppendHead(nil, detcbor.Array, 2), simpleTrue)
		return AppendData(b, r.Value)
	}
	b := append(detcbor.AppendHead(nil, detcbor.Array, 4), simpleFalse)
	b = detcbor.AppendText(b, r.Err.Kind)
	b = detcbor.AppendText(b, r.Err.Msg)
	if r.Err.Data == nil {
		return append(b, simpleNull), nil
	}
	if _, err := DecodeData(r.Err.Data); err != nil {
		return nil, err
	}
	return append(b, r.Err.Data...), nil
}

// DecodeReply decodes a reply strictly.
func DecodeReply(b []byte) (Reply, error) {
	if len(b) > MaxDataSize {
		return Reply{}, decodeErr(ErrTooLarge, "reply", "%d bytes", len(b))
	}
	r := &reader{Reader: detcbor.Reader{B: b}, where: "reply"}
	major, n, _, err := r.head()
	if err != nil {
		return Reply{}, err
	}
	if major != detcbor.Array || (n != 2 && n != 4) {
		return Reply{}, r.fail("a reply is [true, value] or [false, kind, msg, data]")
	}
	ok, err := r.data(0)
	if err != nil {
		return Reply{}, err
	}
	var out Reply
	switch {
	case ok == true && n == 2:
		if out.Value, err = r.data(0); err != nil {
			return Reply{}, err
		}
	case ok == false && n == 4:
		kind, err := r.data(0)
		if err != nil {
			return Reply{}, err
		}
		msg, err := r.data(0)
		if err != nil {
			return Reply{}, err
		}
		ks, ok1 := kind.(string)
		ms, ok2 := msg.(string)
		if !ok1 || !ok2 || ks == "" {
			return Reply{}, r.fail("a reply error needs a non-empty kind and a msg string")
		}
		if len(ks) > MaxKind {
			return Reply{}, r.fail("a reply error's kind is %d bytes, more than %d", len(ks), MaxKind)
		}
		start := r.Off
		d, err := r.data(0)
		if err != nil {
			return Reply{}, err
		}
		out.Err = &Error{Kind: ks, Msg: ms}
		if d != nil {
			out.Err.Data = append([]byte(nil), b[start:r.Off]...)
		}
	default:
		return Reply{}, r.fail("a reply is [true, value] or [false, kind, msg, data]")
	}
	if r.Off != len(b) {
		return Reply{}, r.fail("trailing bytes")
	}
	return out, nil
}
