// errors.go holds runtime error kinds, limits and the error constructors.

package machine

import (
	"fmt"

	"github.com/runehost/runehost/checkpoint"
)

// Error kinds a prog can catch; their texts are part of compile.Version.
const (
	KindType         = "type"          // an operand of the wrong type
	KindValue        = "value"         // a value out of its domain
	KindOverflow     = "overflow"      // int64 overflow
	KindZeroDivision = "zero_division" // division or modulo by zero
	KindIndex        = "index"         // index out of range
	KindKey          = "key"           // map key not found
	KindName         = "name"          // a name used before its declaration ran
	KindCall         = "call"          // wrong number of arguments
	KindLimit        = "limit"         // a size or depth limit
	KindSteps        = "steps"         // the step limit (cannot be caught)
	KindError        = "error"         // thrown by a prog without a kind
	KindFault        = "fault"         // an inconsistent machine state (cannot be caught)
)

// Limits, all deterministic: they count values, never bytes of Go memory.
const (
	MaxFrames = 1000    // call depth
	MaxString = 8 << 20 // bytes in one string
	MaxList   = 1 << 20 // elements in one list
	MaxMap    = 1 << 20 // entries in one map
	MaxDepth  = 100     // nesting walked by str, json, ==, and data conversion
	MaxEmit   = 64 << 10
	// MaxKind bounds the kind of an error value and of an emit, in bytes.
	MaxKind = checkpoint.MaxKind
	// MaxErrorText bounds the message of an uncaught error as it leaves
	// the machine: a longer one is cut at a character boundary, with "…".
	MaxErrorText = 64 << 10
)

// rtError is a runtime error on its way to becoming an error value.
type rtError struct {
	kind, msg string
	data      Value
}

func (e *rtError) Error() string { return e.kind + ": " + e.msg }

func errorf(kind, format string, args ...any) *rtError {
	return &rtError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func typeErrorf(format string, args ...any) *rtError { return errorf(KindType, format, args...) }
