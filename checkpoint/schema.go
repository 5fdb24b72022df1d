// schema.go holds the checkpoint schema: header, machine body, frames and heap objects.

package checkpoint

// Format is the version of this schema. It changes only when the layout
// of the checkpoint itself changes; the machine's semantics version is
// recorded separately in the header.
const Format = 1

// Status is where a checkpointed machine stands.
type Status uint8

// The statuses.
const (
	Runnable Status = iota // stopped at a slice boundary; Step continues it
	Acting                 // suspended at an act; Pending says which
	Awaiting               // suspended at an await; Pending says for what
	Done                   // returned; Header.Result holds the result
	Failed                 // ended with an uncaught error; Header.Error says which
	numStatus
)

var statusNames = [...]string{"runnable", "acting", "awaiting", "done", "failed"}

func (s Status) String() string {
	if s < numStatus {
		return statusNames[s]
	}
	return "invalid"
}

// Checkpoint is a decoded checkpoint.
type Checkpoint struct {
	Header  Header
	Machine *Machine // nil when only the header was decoded
}

// Header is the part of a checkpoint readable without decoding the machine.
type Header struct {
	Format     uint64   `cbor:"1,keyasint"`
	Semantics  uint64   `cbor:"2,keyasint"`
	Program    []byte   `cbor:"3,keyasint"` // sha256 of the source
	Invocation string   `cbor:"4,keyasint,omitempty"`
	Context    []byte   `cbor:"5,keyasint,omitempty"` // opaque application context
	Used       uint64   `cbor:"6,keyasint"`           // cumulative steps reported so far
	Status     Status   `cbor:"7,keyasint"`
	Pending    *Pending `cbor:"8,keyasint,omitempty"`
	Result     RawData  `cbor:"9,keyasint,omitzero"` // data value, when Done
	Error      *Error   `cbor:"10,keyasint,omitempty"`
}

// PendingKind says what a suspended machine waits for.
type PendingKind uint8

// The pending kinds.
const (
	PendingAct   PendingKind = 1
	PendingAwait PendingKind = 2
)

// Pending is the act or await a machine is suspended at.
type Pending struct {
	Kind PendingKind `cbor:"1,keyasint"`
	Seq  uint64      `cbor:"2,keyasint"` // 1 for the first suspension of an invocation
	Tag  string      `cbor:"3,keyasint,omitempty"`
	Args RawData     `cbor:"4,keyasint"` // data value: act arguments or await selector
}

// Error is an uncaught error that ended a machine, or one a reply delivers.
type Error struct {
	Kind  string   `cbor:"1,keyasint"`
	Msg   string   `cbor:"2,keyasint"`
	Pos   string   `cbor:"3,keyasint,omitempty"` // line:col where it was raised
	Trace []string `cbor:"4,keyasint,omitempty"` // innermost call first
	Data  RawData  `cbor:"5,keyasint,omitzero"`  // data value
}

func (e *Error) Error() string {
	if e.Pos != "" {
		return e.Pos + ": " + e.Kind + ": " + e.Msg
	}
	return e.Kind + ": " + e.Msg
}

// Machine is the body: the whole state of a running machine.
type Machine struct {
	Steps    uint64    `cbor:"1,keyasint"` // cumulative steps charged (>= Header.Used)
	Limit    uint64    `cbor:"2,keyasint"` // step limit of the invocation
	Clock    int64     `cbor:"3,keyasint"` // host clock of the current slice, unix ms
	RNG      uint64    `cbor:"4,keyasint"` // PRNG state
	Seq      uint64    `cbor:"5,keyasint"` // suspensions so far
	Globals  []Val     `cbor:"6,keyasint"`
	Stack    []Val     `cbor:"7,keyasint"`
	Frames   []Frame   `cbor:"8,keyasint"`
	Handlers []Handler `cbor:"9,keyasint"`
	Heap     []Object  `cbor:"10,keyasint"`
	// Strings holds each long string once, however many slots refer to it
	// (by content, so the table does not depend on how the machine ran).
	Strings []string `cbor:"11,keyasint"`
}

// Frame is one activation record. Its locals and operands are the stack
// slots from Base up to the next frame's Base (or the stack top).
type Frame struct {
	_       struct{} `cbor:",toarray"`
	Fn      uint32   // function index in the program
	PC      uint32
	Base    uint32
	Closure uint32 // 1 + heap index of the closure being run; 0 for none
}

// Handler is an active try block.
type Handler struct {
	_     struct{} `cbor:",toarray"`
	Frame uint32   // index of the frame that owns it
	PC    uint32   // start of the catch block
	SP    uint32   // stack height to restore
}

// ObjKind says what a heap object is.
type ObjKind uint8

// The object kinds and the meaning of Aux and Items for each.
const (
	ObjList    ObjKind = iota + 1 // Items: elements
	ObjMap                        // Items: k1, v1, k2, v2, ... in insertion order
	ObjClosure                    // Aux: function index; Items: captured cells (refs)
	ObjCell                       // Items: [value]
	ObjIter                       // Aux: position; Items: [iterated value]
	ObjError                      // Items: [kind, msg, data, pos]
	numObjKinds
)

// Object is one heap object.
type Object struct {
	_     struct{} `cbor:",toarray"`
	Kind  ObjKind
	Aux   int64
	Items []Val
}

// RawData is an encoded data value embedded as itself (not as a byte
// string) in the header, as fxamacker/cbor's RawMessage is; the methods let
// that library read and write these structs too, for the reference tests and
// the host's cross-check, without the machine's code depending on it.
type RawData []byte

// MarshalCBOR returns the embedded item.
func (r RawData) MarshalCBOR() ([]byte, error) {
	if len(r) == 0 {
		return []byte{0xf6}, nil
	}
	return r, nil
}

// UnmarshalCBOR keeps a copy of the item.
func (r *RawData) UnmarshalCBOR(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
