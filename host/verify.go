// verify.go holds the host's half of `runehost store verify`: every record
// decoded by its key's kind into what the host stores there, and checked
// as the host would check it when reading it.

package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/store"
)

// RegisterRecordKind makes VerifyRecords check a kind of record that a
// layer above the engine keeps in the same store (the server's page
// links), so that `store verify` does not call it unknown. Call it from an
// init function: the kinds are read without a lock.
func RegisterRecordKind(kind string, parts int, check func(key store.Key, b []byte) error) {
	recordKinds[kind] = struct {
		parts int
		check func(parts []string, key store.Key, b []byte) error
	}{parts, func(_ []string, k store.Key, b []byte) error { return check(k, b) }}
}

// recordKinds decodes and checks the value of each kind of record, given
// its key's parts after the kind. docs/store.md lists the kinds.
var recordKinds = map[string]struct {
	parts int
	check func(parts []string, key store.Key, b []byte) error
}{
	"prog": {1, func(p []string, k store.Key, b []byte) error {
		var v Prog
		return same(k, store.Decode(k, b, &v), v.Name, p[0])
	}},
	"src": {1, raw},
	"inv": {1, func(p []string, k store.Key, b []byte) error {
		var v Invocation
		if err := same(k, store.Decode(k, b, &v), v.ID, p[0]); err != nil {
			return err
		}
		if v.Status < Running || v.Status > Conflict {
			return corrupt(k, "status %d", v.Status)
		}
		return nil
	}},
	"run":  {2, flag},
	"kid":  {2, flag},
	"open": {2, flag},
	"due":  {2, flag},
	"alw":  {1, decodes[Allowance]},
	"tok":  {1, decodes[Allowance]},
	"cp":   {1, nil}, // verifyCheckpoint
	"chk": {2, func(p []string, k store.Key, b []byte) error {
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != p[1] {
			return corrupt(k, "a chunk of %d bytes that does not hash to its key", len(b))
		}
		return nil
	}},
	"op": {2, func(p []string, k store.Key, b []byte) error {
		var v Operation
		if err := store.Decode(k, b, &v); err != nil {
			return err
		}
		n, err := strconv.ParseUint(p[1], 16, 64)
		if err != nil {
			return corrupt(k, "not an ordinal: %q", p[1])
		}
		return v.check(OpID{p[0], n})
	}},
	"blob": {1, raw},
	"rcv": {2, func(p []string, k store.Key, b []byte) error {
		var v Event
		return same(k, store.Decode(k, b, &v), v.Invocation, p[0])
	}},
	"box":  {1, decodes[mailbox]},
	"wait": {1, decodes[wait]},
	"ev": {2, func(p []string, k store.Key, b []byte) error {
		var v events.Event
		if err := store.Decode(k, b, &v); err != nil {
			return err
		}
		if err := v.Check(); err != nil {
			return corrupt(k, "%v", err)
		}
		if v.Run != p[0] {
			return corrupt(k, "an event of run %s", v.Run)
		}
		return nil
	}},
	"evn": {1, decodes[logCounter]},
	"grant": {2, func(p []string, k store.Key, b []byte) error {
		var v Grant
		if err := store.Decode(k, b, &v); err != nil {
			return err
		}
		if v.Subject != p[0] || v.Statement != p[1] {
			return corrupt(k, "a grant of %s to %s", v.Statement, v.Subject)
		}
		return nil
	}},
	"grantv": {0, decodes[grantStamp]},
	"gen":    {0, decodes[generation]},
	"seq":    {0, decodes[generation]},
	"sched":  {1, decodes[cursor]},
	"claim":  {1, decodes[claimRecord]}, // shared stores (claim.go)
	"beat":   {1, decodes[beatRecord]},
	"role":   {1, decodes[roleRecord]}, // role.go
}

// checkCheckpoint checks a checkpoint's bytes as the host reads them.
func checkCheckpoint(p []string, k store.Key, b []byte) error {
	h, err := checkpoint.DecodeHeader(b)
	if err != nil {
		return corrupt(k, "%v", err)
	}
	if h.Semantics == semantics {
		if _, err := checkpoint.Decode(b, checkpoint.Expect{Semantics: semantics}); err != nil {
			return corrupt(k, "%v", err)
		}
	}
	if h.Invocation != "" && h.Invocation != p[0] {
		return corrupt(k, "a checkpoint of invocation %s", h.Invocation)
	}
	return nil
}

func corrupt(k store.Key, format string, args ...any) error {
	return &store.RecordError{Key: k, Err: store.ErrCorrupt, Msg: fmt.Sprintf(format, args...)}
}

// same is a decoding's error, else a mismatch of the name a record holds
// and the one its key gives.
func same(k store.Key, err error, held, keyed string) error {
	if err == nil && held != keyed {
		return corrupt(k, "it names %q", held)
	}
	return err
}

func raw(_ []string, k store.Key, b []byte) error { return nil }

func flag(_ []string, k store.Key, b []byte) error {
	var v bool
	return store.Decode(k, b, &v)
}

func decodes[T any](_ []string, k store.Key, b []byte) error {
	var v T
	return store.Decode(k, b, &v)
}

// VerifyRecords reads every record of a store and decodes it by its kind,
// as the host reads it, and returns each that is not sound, and how many
// records it read.
func VerifyRecords(s *store.Store) (problems []error, n int, err error) {
	bad := map[string]bool{} // chunks found damaged: chk sorts before cp
	err = s.Records(func(r store.Record) error {
		n++
		if r.Err != nil {
			problems = append(problems, r.Err)
			return nil
		}
		parts := r.Key.Parts()
		kind, ok := recordKinds[parts[0]]
		switch {
		case !ok:
			problems = append(problems, corrupt(r.Key, "a record of no kind this host knows"))
		case len(parts)-1 != kind.parts:
			problems = append(problems, corrupt(r.Key, "a key of %d parts, where %s has %d", len(parts)-1, parts[0], kind.parts))
		case parts[0] == "cp":
			if err := verifyCheckpoint(s, parts[1], r.Key, r.Value, bad); err != nil {
				problems = append(problems, err)
			}
		default:
			if err := kind.check(parts[1:], r.Key, r.Value); err != nil {
				problems = append(problems, err)
				if parts[0] == "chk" {
					bad[string(r.Key)] = true
				}
			}
		}
		return nil
	})
	return problems, n, err
}

// verifyCheckpoint checks a cp record: inline, its checkpoint; a manifest,
// its chunks all there and the checkpoint they make. A manifest naming a
// chunk already found damaged is not reported again.
func verifyCheckpoint(s *store.Store, inv string, k store.Key, b []byte, bad map[string]bool) error {
	rec, err := decodeCPRecord(k, b)
	if err != nil {
		return err
	}
	if rec.Inline != nil {
		return checkCheckpoint([]string{inv}, k, rec.Inline)
	}
	for _, r := range rec.Chunks {
		if bad[string(chunkKey(inv, r.Sum))] {
			return nil
		}
	}
	var cp []byte
	if err := s.View(func(tx *store.Tx) (err error) { cp, _, err = getCheckpoint(tx, inv); return err }); err != nil {
		return err
	}
	return checkCheckpoint([]string{inv}, k, cp)
}
