// Package checkpoint defines the Rune machine's checkpoint: its schema, its
// deterministic CBOR codec, and strict, bounded decoding.
//
// A checkpoint is a CBOR array of two items: a header and a body. The header
// (format, semantics version, program hash, invocation, context, used steps,
// status and any pending act or await) is readable without the body; the body
// (a byte string holding the CBOR-encoded Machine) is decoded only after the
// header has been checked against what the caller expects. Heap objects are
// stored once and referenced by index, so aliasing and cycles survive and the
// encoded nesting depth is fixed by the schema, not by the data.
//
// Encoding is deterministic (RFC 8949 core deterministic encoding): the same
// machine state always gives the same bytes. The package knows nothing of the
// host, of the store, or of how the machine runs.
package checkpoint
