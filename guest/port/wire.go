// wire.go holds the encoding of RuntimePort calls as bytes, for a port whose
// machine runs elsewhere: inside the WebAssembly sandbox (guest/wasm).

package port

import (
	"context"
	"errors"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/syntax"
)

// MaxWire bounds an encoded call or answer.
const MaxWire = checkpoint.MaxSize + 2*checkpoint.MaxDataSize + syntax.MaxSource + 1<<20

type wireInput struct {
	Source     []byte `cbor:"1,keyasint,omitempty"`
	Input      []byte `cbor:"2,keyasint,omitempty"`
	State      []byte `cbor:"3,keyasint,omitempty"`
	Context    []byte `cbor:"4,keyasint,omitempty"`
	Invocation string `cbor:"5,keyasint,omitempty"`
	Seed       uint64 `cbor:"6,keyasint,omitempty"`
	Limit      uint64 `cbor:"7,keyasint,omitempty"`
}

type wireRequest struct {
	Checkpoint []byte `cbor:"1,keyasint,omitempty"`
	Reply      []byte `cbor:"2,keyasint,omitempty"`
	Slice      uint64 `cbor:"3,keyasint,omitempty"`
	Clock      int64  `cbor:"4,keyasint,omitempty"`
	Lazy       bool   `cbor:"5,keyasint,omitempty"`
	Invocation string `cbor:"6,keyasint,omitempty"`
	Slices     uint64 `cbor:"7,keyasint,omitempty"`
}

type wireEmit struct {
	_    struct{} `cbor:",toarray"`
	Kind string
	Data []byte
}

type wireResult struct {
	Kind       Kind              `cbor:"1,keyasint"`
	Used       uint64            `cbor:"2,keyasint"`
	Checkpoint []byte            `cbor:"3,keyasint,omitempty"`
	Result     []byte            `cbor:"4,keyasint,omitempty"`
	Tag        string            `cbor:"5,keyasint,omitempty"`
	Args       []byte            `cbor:"6,keyasint,omitempty"`
	Seq        uint64            `cbor:"7,keyasint,omitempty"`
	Err        *checkpoint.Error `cbor:"8,keyasint,omitempty"`
	Emits      []wireEmit        `cbor:"9,keyasint,omitempty"`
}

type wireInfo struct {
	Hash    []byte   `cbor:"1,keyasint"`
	ActTags []string `cbor:"2,keyasint,omitempty"`
}

// Error codes of an answer, so the caller gets the same sentinels back.
const (
	codeOK = iota
	codeSyntax
	codeUnknownProgram
	codeReply
	codeFault
	codeMalformed
	codeTooLarge
	codeFormat
	codeSemantics
	codeProgram
	codeExpired
	codeOther
)

var codeSentinels = map[int]error{
	codeUnknownProgram: ErrUnknownProgram,
	codeReply:          ErrReply,
	codeFault:          ErrFault,
	codeMalformed:      checkpoint.ErrMalformed,
	codeTooLarge:       checkpoint.ErrTooLarge,
	codeFormat:         checkpoint.ErrFormat,
	codeSemantics:      checkpoint.ErrSemantics,
	codeProgram:        checkpoint.ErrProgram,
	codeExpired:        ErrExpired,
}

// wireAnswer is what the guest sends back: a body, or an error.
type wireAnswer struct {
	Code int    `cbor:"1,keyasint,omitempty"`
	Msg  string `cbor:"2,keyasint,omitempty"`
	Line int32  `cbor:"3,keyasint,omitempty"` // syntax errors
	Col  int32  `cbor:"4,keyasint,omitempty"`
	Body []byte `cbor:"5,keyasint,omitempty"`
	File string `cbor:"6,keyasint,omitempty"` // syntax errors in a module
}

// Operations a wire call can name.
const (
	OpLoad  = 1
	OpStart = 2
	OpStep  = 3
)

// Serve answers one encoded call against rt: the guest side of the wire.
// It keeps nothing of call once it returns.
func Serve(rt RuntimePort, op int, call []byte) []byte {
	if op == OpStep { // the hot call: its answer is written in one piece
		req, err := decodeRequest(call)
		if err != nil {
			return encodeAnswer(nil, fmt.Errorf("step: %w", err))
		}
		res, err := rt.Step(context.Background(), Request(*req))
		if err != nil {
			return encodeAnswer(nil, err)
		}
		return encodeStepAnswer(wireResultOf(res))
	}
	body, err := serve(rt, op, call)
	return encodeAnswer(body, err)
}

// EncodeStepAnswer encodes a step's result as a guest answers it (tests use
// it to build misbehaving guests).
func EncodeStepAnswer(res *Result) []byte {
	body, err := encodeResult(res)
	return encodeAnswer(body, err)
}

func encodeAnswer(body []byte, err error) []byte {
	var a wireAnswer
	if err != nil {
		a.Code, a.Msg = codeOther, err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			a.Code, a.Msg, a.Line, a.Col, a.File = codeSyntax, se.Msg, se.Pos.Line, se.Pos.Col, se.File
		} else {
			for code, s := range codeSentinels {
				if errors.Is(err, s) {
					a.Code = code
					break
				}
			}
		}
	} else {
		a.Body = body
	}
	return encodeWireAnswer(&a)
}

func serve(rt RuntimePort, op int, call []byte) ([]byte, error) {
	switch op {
	case OpLoad:
		info, err := rt.Load(context.Background(), call)
		if err != nil {
			return nil, err
		}
		return encodeInfo(&wireInfo{Hash: info.Hash[:], ActTags: info.ActTags}), nil
	case OpStart:
		in, err := decodeInput(call)
		if err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
		return rt.Start(context.Background(), Input(*in))
	case OpStep:
		req, err := decodeRequest(call)
		if err != nil {
			return nil, fmt.Errorf("step: %w", err)
		}
		res, err := rt.Step(context.Background(), Request(*req))
		if err != nil {
			return nil, err
		}
		return encodeResult(res)
	}
	return nil, fmt.Errorf("unknown operation %d", op)
}

func encodeResult(res *Result) ([]byte, error) {
	return encodeWireResult(wireResultOf(res)), nil
}

func wireResultOf(res *Result) *wireResult {
	w := &wireResult{Kind: res.Kind, Used: res.Used, Checkpoint: res.Checkpoint, Result: res.Result,
		Tag: res.Tag, Args: res.Args, Seq: res.Seq, Err: res.Err}
	for _, e := range res.Emits {
		w.Emits = append(w.Emits, wireEmit{Kind: e.Kind, Data: e.Data})
	}
	return w
}

// EncodeCall encodes the argument of a call: source for OpLoad, an Input
// for OpStart, a Request for OpStep.
func EncodeCall(op int, arg any) ([]byte, error) {
	switch op {
	case OpLoad:
		return arg.([]byte), nil
	case OpStart:
		in := arg.(Input)
		return encodeInput((*wireInput)(&in)), nil
	case OpStep:
		req := arg.(Request)
		return encodeRequest((*wireRequest)(&req)), nil
	}
	return nil, fmt.Errorf("unknown operation %d", op)
}

// DecodeAnswer decodes the guest's answer to a call. Everything in it is
// untrusted: it is decoded strictly, and the caller validates the result.
func DecodeAnswer(op int, b []byte) (any, error) {
	if len(b) > MaxWire {
		return nil, fmt.Errorf("%w: guest answer of %d bytes", ErrGuest, len(b))
	}
	a, err := decodeWireAnswer(b)
	if err != nil {
		return nil, fmt.Errorf("%w: undecodable answer: %v", ErrGuest, err)
	}
	if a.Code != codeOK {
		switch {
		case a.Code == codeSyntax:
			return nil, &syntax.Error{File: a.File, Pos: syntax.Pos{Line: a.Line, Col: a.Col}, Msg: a.Msg}
		case codeSentinels[a.Code] != nil:
			return nil, &wireError{sentinel: codeSentinels[a.Code], msg: a.Msg}
		case a.Code == codeOther:
			return nil, errors.New(a.Msg)
		}
		return nil, fmt.Errorf("%w: unknown error code %d", ErrGuest, a.Code)
	}
	switch op {
	case OpLoad:
		w, err := decodeInfo(a.Body)
		if err != nil || len(w.Hash) != 32 {
			return nil, fmt.Errorf("%w: bad load answer", ErrGuest)
		}
		return Info{Hash: [32]byte(w.Hash), ActTags: w.ActTags}, nil
	case OpStart:
		return a.Body, nil
	case OpStep:
		w, err := decodeWireResult(a.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: bad step answer: %v", ErrGuest, err)
		}
		res := &Result{Kind: w.Kind, Used: w.Used, Checkpoint: w.Checkpoint, Result: w.Result,
			Tag: w.Tag, Args: w.Args, Seq: w.Seq, Err: w.Err}
		for _, e := range w.Emits {
			res.Emits = append(res.Emits, machine.Emit{Kind: e.Kind, Data: e.Data})
		}
		return res, nil
	}
	return nil, fmt.Errorf("unknown operation %d", op)
}

// ErrGuest says the guest answered something malformed.
var ErrGuest = errors.New("malformed answer from the guest")

// wireError carries a sentinel across the wire with the guest's message.
type wireError struct {
	sentinel error
	msg      string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.sentinel }
