// backend.go holds the boundary between a transaction's records and what
// keeps them: Badger (badger.go) today, JetStream later (docs/store.md).

package store

// backend keeps the records. Store and Tx put CBOR, size accounting,
// MaxRecord, RecordError and the retry loops above it, so that the engine
// does not know which backend it has. Every backend must give:
//   - serializable update transactions over the keys they get, set and
//     delete: a key read and changed by another commit since fails the
//     commit with ErrConflict;
//   - a commit that applies every write or none;
//   - scans in key (byte) order with early stop, that validate the keys
//     they visit but not inserts into the range: a decision made on absence
//     must read a counter key that every inserter writes (as Take reads a
//     mailbox's delivery counter).
type backend interface {
	// begin starts a transaction: a read-only one unless update.
	begin(update bool) (btx, error)
	close() error
}

// btx is a backend's transaction. Keys passed in may be reused by the
// caller once the call returns.
type btx interface {
	// get reads (a copy of) the value at key; found is false when there is
	// none. An unreadable value is ErrCorrupt in a *RecordError.
	get(key Key) (val []byte, found bool, err error)
	// scan calls fn for every key under prefix at or after start, in byte
	// order, until fn returns false or an error; val reads the key's value
	// (a copy) while fn runs, as get does.
	scan(prefix, start Key, fn func(key Key, val func() ([]byte, error)) (more bool, err error)) error
	// set writes val at key; val is the transaction's from then on.
	set(key Key, val []byte) error
	delete(key Key) error
	// commit applies the writes, size bytes of keys and values, with
	// durability d: nil, ErrConflict (nothing written), ErrTooLarge or
	// ErrNoSpace (below the reserve; inReserve may use most of it).
	commit(d Durability, inReserve bool, size int) error
	// abort is the error of a transaction whose function failed with err,
	// mapped as commit maps its own: a set refused because the
	// transaction grew too large is ErrTooLarge.
	abort(err error) error
	// discard ends the transaction; after a commit it does nothing.
	discard()
}
