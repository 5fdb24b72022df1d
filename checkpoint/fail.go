// fail.go holds Fail: a checkpoint rewritten as failed, for a machine the host had to stop.

package checkpoint

// Fail returns the checkpoint b rewritten as a machine that failed with e
// after used steps (at most its step limit): frames, operands and handlers gone, globals kept, as an
// uncaught error leaves a machine. The host writes it when the machine could
// not fail by itself: the sandbox ran out of memory in the middle of a slice.
func Fail(b []byte, e *Error, used uint64) ([]byte, error) {
	h0, err := DecodeHeader(b)
	if err != nil {
		return nil, err
	}
	c, err := Decode(b, Expect{Semantics: h0.Semantics})
	if err != nil {
		return nil, err
	}
	h, m := &c.Header, c.Machine
	if m.Limit > 0 {
		used = min(used, m.Limit)
	}
	h.Status, h.Pending, h.Result, h.Error, h.Used = Failed, nil, nil, e, used
	m.Steps = max(m.Steps, used)
	m.Stack, m.Frames, m.Handlers = nil, nil, nil
	return Encode(c)
}
