// Package port defines the RuntimePort, the contract between the host and
// a Rune machine, and implements it natively over guest/machine.
//
// The host starts an invocation and then steps its checkpoint in bounded
// slices; each step answers Done, Yield, Act, Event or Error. The same
// contract is implemented inside the WebAssembly sandbox by wasmvm; both
// must give byte-identical checkpoints.
package port

import (
	"context"
	"errors"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/machine"
)

// DefaultSlice is the usual number of steps in one slice.
const DefaultSlice = 1000

// Input starts an invocation.
type Input struct {
	Source     []byte
	Input      []byte // data value (checkpoint.EncodeData); nil means nil
	State      []byte // data value; nil means nil
	Context    []byte // opaque application context, kept in the checkpoint
	Invocation string
	Seed       uint64 // PRNG seed, recorded by the host
	Limit      uint64 // step limit; 0 means machine.DefaultLimit
}

// Request advances a checkpoint by one slice.
type Request struct {
	Checkpoint []byte
	Reply      []byte // checkpoint.EncodeReply; required when suspended, else nil
	Slice      uint64 // steps; 0 means DefaultSlice
	Clock      int64  // host clock for this slice, unix ms

	// Lazy says the caller does not need the checkpoint of a Yield: the
	// port may answer a Yield without one (Result.Checkpoint nil) and keep
	// the machine live. Writing a checkpoint at every slice costs more than
	// a slice of work in the sandbox; a host needs one only to park or
	// persist an invocation. Every other result carries its checkpoint,
	// and so does a Yield whose slice emitted events.
	Lazy bool
	// Invocation, with Checkpoint nil, continues the live machine that a
	// lazy Yield of this invocation left. If the port no longer has it
	// (ErrExpired), the caller resumes from the last checkpoint it has.
	Invocation string
	// Slices is how many slices of Slice steps the port runs back to back
	// in this one Step while each ends in a Yield that emitted nothing: a
	// crossing into the runtime costs more than a slice of compiled work.
	// The machine at each boundary is the one a Step per slice would give
	// (its steps, its limit, its clock); the result is the first slice's
	// that is not such a Yield, or the last's. 0 or 1 is one slice.
	Slices uint64
}

// Steps is the most steps req may run: Slices slices of Slice steps.
func (req *Request) Steps() uint64 {
	slice, n := req.Slice, max(req.Slices, 1)
	if slice == 0 {
		slice = DefaultSlice
	}
	if slice > ^uint64(0)/n {
		return ^uint64(0)
	}
	return slice * n
}

// ErrExpired says a live machine to continue is gone.
var ErrExpired = errors.New("live machine expired")

// Kind is the kind of a step's result.
type Kind uint8

// The result kinds.
const (
	Done  Kind = iota + 1 // Result holds the result
	Yield                 // the slice ran out; step again
	Act                   // suspended at act Tag with Args
	Event                 // suspended at an await for Args (the selector); Tag is its key
	Error                 // the prog failed with Err
)

var kindNames = [...]string{"", "done", "yield", "act", "event", "error"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Result is the outcome of one step.
type Result struct {
	Kind       Kind
	Used       uint64 // cumulative steps of the invocation
	Checkpoint []byte // always set: the state after this step
	Result     []byte // Done: data value
	Tag        string
	Args       []byte // Act: arguments; Event: selector (data values)
	Seq        uint64 // Act, Event: the suspension's ordinal, from 1
	Err        *checkpoint.Error
	Emits      []machine.Emit
}

// Info describes a loaded program.
type Info struct {
	Hash    [32]byte
	ActTags []string // every act tag the source uses, for grant preflight
}

// RuntimePort runs Rune machines. Errors returned (as opposed to a Result of
// kind Error) mean the request itself was bad: a malformed or foreign
// checkpoint, an unknown program, a missing reply.
type RuntimePort interface {
	// Load compiles source (if not already loaded) and describes it.
	Load(ctx context.Context, source []byte) (Info, error)
	// Start begins an invocation and returns its first checkpoint.
	Start(ctx context.Context, in Input) ([]byte, error)
	// Step advances a checkpoint by at most one slice.
	Step(ctx context.Context, req Request) (*Result, error)
}
