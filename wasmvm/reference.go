// reference.go reads checkpoint headers with fxamacker/cbor, the reference
// codec, to cross-check what a guest wrote with the hand-written one.

package wasmvm

import (
	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/checkpoint"
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
func referenceHeader(b []byte) (*checkpoint.Header, error) {
	var w struct {
		_      struct{} `cbor:",toarray"`
		Header cbor.RawMessage
		Body   []byte
	}
	if err := refDec.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	var h checkpoint.Header
	if err := refDec.Unmarshal(w.Header, &h); err != nil {
		return nil, err
	}
	return &h, nil
}
