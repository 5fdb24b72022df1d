// cpstore.go holds how an invocation's checkpoint is stored: a small one
// inline, a large one as content-defined chunks, each written once per
// invocation under its SHA-256 and named by a manifest, so that a slice
// that changes little of a large heap writes little. It also keeps the
// invocation's store quota: bytes of checkpoint and of replies it holds.

package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// Chunking. A checkpoint over inlineMax is cut where a gear hash of its
// bytes says (FastCDC's normalized chunking: a stricter mask before
// chunkAvg, a looser one after), so an edit moves only the cuts near it.
// chunkMin is the store's value threshold: every chunk but a checkpoint's
// last goes to Badger's value log, and a transaction counts it as a
// pointer, so a whole new 64 MiB checkpoint fits in one transaction.
// The first chunk is the first headMax bytes: what changes at every slice
// (the header, the step count, the clock, the stack) comes first, and a
// long run of equal bytes after it has no cut before chunkMax.
const (
	inlineMax = 64 << 10
	headMax   = 4 << 10
	chunkMin  = 16 << 10
	chunkAvg  = 32 << 10
	chunkMax  = 128 << 10
	maskHard  = uint64(1<<17-1) << (64 - 17) // before chunkAvg: a cut every 128 KiB on average
	maskEasy  = uint64(1<<13-1) << (64 - 13) // after: every 8 KiB
)

// gear is the rolling hash's table: fixed (splitmix64 from a constant), so
// that cuts do not move between builds and a restarted host dedups against
// the chunks of the one before.
var gear = func() (g [256]uint64) {
	x := uint64(0x72756e65686f7374) // "runehost"
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g[i] = z ^ z>>31
	}
	return g
}()

// cut returns the length of the chunk that b starts with. The hash's high
// bits are tested: a gear hash's bit k depends on the last k+1 bytes only.
func cut(b []byte) int {
	n := len(b)
	if n <= chunkMin {
		return n
	}
	end, mid := min(n, chunkMax), min(n, chunkAvg)
	var fp uint64
	i := chunkMin
	for ; i < mid; i++ {
		if fp = fp<<1 + gear[b[i]]; fp&maskHard == 0 {
			return i + 1
		}
	}
	for ; i < end; i++ {
		if fp = fp<<1 + gear[b[i]]; fp&maskEasy == 0 {
			return i + 1
		}
	}
	return end
}

// cpRecord is the cp record: the checkpoint inline, or the manifest of its
// chunks. A record that begins with a CBOR array (0x82) is a checkpoint
// stored whole by an earlier host, read as inline.
type cpRecord struct {
	Inline []byte     `cbor:"1,keyasint,omitempty"`
	Len    int        `cbor:"2,keyasint,omitempty"` // of the whole, when chunked
	Sum    []byte     `cbor:"3,keyasint,omitempty"` // manifestSum of the chunks, when chunked
	Chunks []chunkRef `cbor:"4,keyasint,omitempty"`
	// Replies is the bytes of replies (acts' and awaits') the machine
	// consumed on the way to this checkpoint: what the ledger and the
	// mailbox hold for it. It rides with the checkpoint, so a slice re-run
	// after a crash counts its reply once.
	Replies int64 `cbor:"5,keyasint,omitempty"`
}

// chunkRef names one chunk: its SHA-256 and length.
type chunkRef struct {
	_   struct{} `cbor:",toarray"`
	Sum []byte
	Len int
}

func chunkKey(inv string, sum []byte) store.Key {
	return store.K("chk", inv, hex.EncodeToString(sum))
}

// manifestSum is the hash of the whole checkpoint: SHA-256 over its length
// and its chunks' sums and lengths, in order. With every chunk checked
// against its own SHA-256 when read, bytes that read back under it are the
// bytes written (a hash tree of one level), and the whole is hashed once.
func manifestSum(n int, refs []chunkRef) []byte {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	for _, r := range refs {
		h.Write(r.Sum)
		binary.BigEndian.PutUint64(b[:], uint64(r.Len))
		h.Write(b[:])
	}
	return h.Sum(nil)
}

// chunked is a checkpoint cut into chunks, each with its sum.
type chunked struct {
	refs   []chunkRef
	data   [][]byte // each ref's bytes (aliasing the checkpoint)
	stored int64    // bytes of the distinct chunks
}

func chunk(cp []byte) chunked {
	var c chunked
	seen := map[[sha256.Size]byte]bool{}
	for off := 0; off < len(cp); {
		n := min(len(cp), headMax)
		if off > 0 {
			n = cut(cp[off:])
		}
		sum := sha256.Sum256(cp[off : off+n])
		c.refs = append(c.refs, chunkRef{Sum: sum[:], Len: n})
		c.data = append(c.data, cp[off:off+n])
		if !seen[sum] {
			seen[sum] = true
			c.stored += int64(n)
		}
		off += n
	}
	return c
}

// errQuota is an invocation holding more than its store quota.
var errQuota = errors.New("store quota")

// cpUse is what an invocation holds in the store (bytes of its checkpoint
// and of the replies it consumed) before and after a checkpoint is put.
type cpUse struct{ Before, After int64 }

// held is the bytes a record and the replies it counts hold.
func (r *cpRecord) held(size int) int64 { return int64(size) + r.Replies }

// putCheckpointTx stores inv's checkpoint cp in tx: inline when small, else
// only the chunks its previous checkpoint did not have, deleting those the
// new one no longer names. consumed is the bytes of the replies the
// machine took since its last stored checkpoint. Past the store quota
// (Bounds.Store) nothing is written and the error is errQuota.
func (e *Engine) putCheckpointTx(tx *store.Tx, inv string, cp []byte, consumed int) (cpUse, error) {
	return e.putCheckpoint(tx, inv, cp, consumed, false)
}

// replaceCheckpointTx is putCheckpointTx writing every chunk again (for
// migrate: a damaged chunk the new checkpoint shares is replaced).
func (e *Engine) replaceCheckpointTx(tx *store.Tx, inv string, cp []byte) (cpUse, error) {
	return e.putCheckpoint(tx, inv, cp, 0, true)
}

func (e *Engine) putCheckpoint(tx *store.Tx, inv string, cp []byte, consumed int, rewrite bool) (cpUse, error) {
	var use cpUse
	key := cpKey(inv)
	prev, prevSize, err := readCPRecord(tx, inv)
	old := map[string]bool{} // chunk keys that may go: the previous checkpoint's
	have := old              // chunks known written: the same, unless rewriting
	switch {
	case errors.Is(err, store.ErrCorrupt):
		// Unreadable: which chunks it named is unknown; every chunk of
		// inv may go, none is known sound, and it held nothing known.
		prev, have = &cpRecord{}, map[string]bool{}
		if old, err = chunkKeys(tx, inv); err != nil {
			return use, err
		}
	case err != nil:
		return use, err
	case prev == nil:
		prev = &cpRecord{}
	default:
		use.Before = prev.held(prevSize)
		for _, r := range prev.Chunks {
			old[string(chunkKey(inv, r.Sum))] = true
		}
	}
	if rewrite {
		have = map[string]bool{}
	}
	rec := cpRecord{Replies: prev.Replies + int64(consumed)}
	var c chunked
	if len(cp) <= inlineMax {
		rec.Inline = cp
	} else {
		c = chunk(cp)
		rec.Len, rec.Chunks, rec.Sum = len(cp), c.refs, manifestSum(len(cp), c.refs)
	}
	b, err := store.Encode(rec)
	if err != nil {
		return use, fmt.Errorf("record %s: %w", key, err)
	}
	size := len(b)
	if len(cp) > inlineMax {
		size += int(c.stored)
	}
	use.After = rec.held(size)
	if q := e.Bounds.Store; q > 0 && use.After > q && use.After > use.Before {
		return use, fmt.Errorf("%w: invocation %s would hold %d bytes of checkpoint and replies, over its quota of %d", errQuota, inv, use.After, q)
	}
	fresh := map[string]bool{}
	for i, r := range c.refs {
		k := chunkKey(inv, r.Sum)
		if fresh[string(k)] {
			continue
		}
		fresh[string(k)] = true
		if have[string(k)] {
			continue // written by an earlier checkpoint
		}
		if err := tx.PutRaw(k, c.data[i]); err != nil {
			return use, err
		}
	}
	for k := range old {
		if !fresh[k] {
			if err := tx.Delete(store.Key(k)); err != nil {
				return use, err
			}
		}
	}
	return use, tx.PutRaw(key, b)
}

// chunkKeys lists every chunk stored for inv.
func chunkKeys(tx *store.Tx, inv string) (map[string]bool, error) {
	keys := map[string]bool{}
	err := tx.Scan(store.K("chk", inv), func(k store.Key, _ func(any) error) (bool, error) {
		keys[string(k)] = true
		return true, nil
	})
	return keys, err
}

// readCPRecord reads inv's cp record (nil when none) and its size. A
// checkpoint stored whole by an earlier host reads as inline.
func readCPRecord(tx *store.Tx, inv string) (*cpRecord, int, error) {
	key := cpKey(inv)
	b, ok, err := tx.GetRaw(key)
	if err != nil || !ok {
		return nil, 0, err
	}
	rec, err := decodeCPRecord(key, b)
	return rec, len(b), err
}

// decodeCPRecord decodes a cp record's bytes and checks its manifest's
// shape (not its chunks).
func decodeCPRecord(key store.Key, b []byte) (*cpRecord, error) {
	if len(b) == 0 || b[0]>>5 != 5 { // not a CBOR map: a checkpoint as written (or garbage, for its decoder)
		return &cpRecord{Inline: b}, nil
	}
	parts := key.Parts()
	bad := func(format string, args ...any) error {
		return &store.RecordError{Key: key, Err: store.ErrCorrupt, Msg: fmt.Sprintf("invocation %s: stored checkpoint: ", parts[len(parts)-1]) + fmt.Sprintf(format, args...)}
	}
	var rec cpRecord
	if err := store.Decode(key, b, &rec); err != nil {
		if re := (*store.RecordError)(nil); errors.As(err, &re) {
			return nil, bad("%s", re.Msg)
		}
		return nil, bad("%v", err)
	}
	if rec.Inline != nil {
		if rec.Chunks != nil || rec.Len != 0 || rec.Sum != nil {
			return nil, bad("both inline and chunked")
		}
		return &rec, nil
	}
	if rec.Len <= 0 || rec.Len > checkpoint.MaxSize || len(rec.Sum) != sha256.Size || len(rec.Chunks) == 0 {
		return nil, bad("a manifest of %d bytes in %d chunks, sum of %d bytes", rec.Len, len(rec.Chunks), len(rec.Sum))
	}
	total := 0
	for i, r := range rec.Chunks {
		if len(r.Sum) != sha256.Size || r.Len <= 0 || r.Len > store.MaxRecord {
			return nil, bad("chunk %d: a sum of %d bytes, length %d", i, len(r.Sum), r.Len)
		}
		if total += r.Len; total > rec.Len {
			return nil, bad("chunks longer than the %d bytes it names", rec.Len)
		}
	}
	if total != rec.Len {
		return nil, bad("chunks of %d bytes, where it names %d", total, rec.Len)
	}
	if !bytes.Equal(manifestSum(rec.Len, rec.Chunks), rec.Sum) {
		return nil, bad("its chunks do not hash to its sum")
	}
	return &rec, nil
}

// getCheckpoint reads inv's checkpoint, byte for byte as it was put; found
// is false when there is none. A chunk that is missing or not what its sum
// says is ErrCorrupt naming the chunk's record and the checkpoint's.
func getCheckpoint(tx *store.Tx, inv string) (cp []byte, found bool, err error) {
	rec, _, err := readCPRecord(tx, inv)
	if err != nil || rec == nil {
		return nil, false, err
	}
	if rec.Inline != nil {
		return rec.Inline, true, nil
	}
	out := make([]byte, 0, rec.Len)
	for _, r := range rec.Chunks {
		k := chunkKey(inv, r.Sum)
		b, ok, err := tx.GetRaw(k)
		if err == nil {
			err = checkChunk(k, r, b, ok)
		}
		if err != nil {
			return nil, false, fmt.Errorf("record %s: invocation %s: stored checkpoint: %w", cpKey(inv), inv, err)
		}
		out = append(out, b...)
	}
	return out, true, nil
}

// checkChunk is the error of a chunk that is missing or not r.
func checkChunk(k store.Key, r chunkRef, b []byte, found bool) error {
	msg := ""
	switch sum := sha256.Sum256(b); {
	case !found:
		msg = "missing"
	case len(b) != r.Len || !bytes.Equal(sum[:], r.Sum):
		msg = fmt.Sprintf("%d bytes that do not hash to their key", len(b))
	default:
		return nil
	}
	return &store.RecordError{Key: k, Err: store.ErrCorrupt, Msg: msg}
}

// deleteCheckpointKeys lists inv's checkpoint records for deletion: the
// manifest first, so that an interrupted deletion leaves chunks nothing
// names rather than a manifest naming missing chunks.
func deleteCheckpointKeys(tx *store.Tx, inv string) ([]store.Key, error) {
	var keys []store.Key
	if _, ok, err := tx.GetRaw(cpKey(inv)); errors.Is(err, store.ErrCorrupt) || ok {
		keys = append(keys, cpKey(inv))
	} else if err != nil {
		return nil, err
	}
	err := tx.Scan(store.K("chk", inv), func(k store.Key, _ func(any) error) (bool, error) {
		keys = append(keys, k)
		return true, nil
	})
	return keys, err
}

// quotaWarn warns once an invocation's store use crosses 80% of its quota.
func (e *Engine) quotaWarn(inv string, u cpUse) {
	if q := e.Bounds.Store; q > 0 && nearly(uint64(max(u.Before, 0)), uint64(u.After), uint64(q)) {
		e.warn(inv, "store", fmt.Sprintf("%d bytes of checkpoint and replies, near the quota of %d", u.After, q))
	}
}
