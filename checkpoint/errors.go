// errors.go holds the sentinel errors and the one structured error type.

package checkpoint

import (
	"errors"
	"fmt"
)

// Sentinel errors; a *DecodeError wraps one of them.
var (
	ErrMalformed = errors.New("malformed checkpoint")
	ErrTooLarge  = errors.New("checkpoint exceeds a limit")
	ErrFormat    = errors.New("unsupported checkpoint format")
	ErrSemantics = errors.New("checkpoint of another semantics version")
	ErrProgram   = errors.New("checkpoint of another program")
	ErrValue     = errors.New("malformed value")
)

// DecodeError says what was wrong with encoded input and where.
type DecodeError struct {
	Err    error  // one of the sentinels
	Where  string // the part being decoded, e.g. "header", "body", "value"
	Detail string
}

func (e *DecodeError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %v", e.Where, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.Where, e.Err, e.Detail)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// SizeError is a checkpoint too large to write: Size bytes (or, with
// Objects, more than Limit heap objects) against the Limit. It wraps
// ErrTooLarge. A machine whose checkpoint cannot be written fails with it,
// as an error of kind "limit" (guest/port).
type SizeError struct {
	Size    int
	Limit   int
	Objects bool // Limit is MaxObjects, and Size is unknown beyond it
}

func (e *SizeError) Error() string {
	if e.Objects {
		return fmt.Sprintf("checkpoint of more than %d heap objects exceeds the limit", e.Limit)
	}
	return fmt.Sprintf("checkpoint of %d bytes exceeds the limit of %d", e.Size, e.Limit)
}

func (e *SizeError) Unwrap() error { return ErrTooLarge }

func decodeErr(sentinel error, where, format string, args ...any) error {
	return &DecodeError{Err: sentinel, Where: where, Detail: fmt.Sprintf(format, args...)}
}
