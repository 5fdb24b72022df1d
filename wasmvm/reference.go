// reference.go reads checkpoint headers with fxamacker/cbor, the reference
// codec, to cross-check what a guest wrote with the hand-written one.

package wasmvm

import (
	"errors"

	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/internal/detcbor"
)

var refDec = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		DupMapKey:   cbor.DupMapKeyEnforcedAPF,
		IndefLength: cbor.IndefLengthForbidden,
		// A header holds data values (result, act arguments, error data),
		// so it nests as deep and as wide as data may.
		MaxNestedLevels:   checkpoint.MaxNesting,
		MaxArrayElements:  checkpoint.MaxObjects,
		MaxMapPairs:       checkpoint.MaxObjects,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		UTF8:              cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// referenceHeader decodes a checkpoint's header with the reference decoder.
// The header is the item after the outer array's head; the body after it,
// which the hand-written decoder has read strictly, is not copied again.
func referenceHeader(b []byte) (*checkpoint.Header, error) {
	if len(b) == 0 || b[0] != 0x82 {
		return nil, errors.New("not an array of a header and a body")
	}
	var h checkpoint.Header
	rest, err := refDec.UnmarshalFirst(b[1:], &h)
	if err != nil {
		return nil, err
	}
	r := detcbor.Reader{B: rest}
	if _, err := r.Raw(detcbor.Bytes); err != nil || r.Off != len(rest) {
		return nil, errors.New("the header is not followed by the body and nothing else")
	}
	return &h, nil
}
