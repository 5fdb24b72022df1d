// verify.go holds the store's own half of `runehost store verify`: every
// file checked against the seal with every table read in full, and a walk
// over every record that reads each value (the caller decodes them by
// their kind: the store knows nothing of what they hold).

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckFiles checks the files of the store in dir as Open would, except
// that every table is read in full whatever the seal says. It opens
// nothing for writing and changes nothing; a store held by another process
// is a *LockedError.
func CheckFiles(dir string) ([]*RecordError, error) {
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer lock.Close()
	if err := lockFile(lock); errors.Is(err, errBusy) {
		return nil, &LockedError{Dir: dir, Holder: readHolder(dir)}
	} else if err != nil {
		return nil, fmt.Errorf("store %s: lock: %w", dir, err)
	}
	var problems []*RecordError
	var rerr *RecordError
	sl, err := readSeal(dir)
	if errors.As(err, &rerr) {
		problems = append(problems, rerr)
	} else if err != nil {
		return nil, err
	}
	var prefix int64
	if sl != nil {
		prefix = sl.Manifest.Size
	}
	files, err := readFiles(dir, prefix)
	if errors.As(err, &rerr) {
		return append(problems, rerr), nil
	} else if err != nil {
		return nil, err
	}
	if sl != nil {
		// Forget the verdicts: every table is read again.
		unverified := *sl
		unverified.Tables = nil
		for _, t := range sl.Tables {
			t.Verified = false
			unverified.Tables = append(unverified.Tables, t)
		}
		sl = &unverified
	}
	p, _ := preflight(files, sl)
	return append(problems, p...), nil
}

// Record is one record as Records walks them.
type Record struct {
	Key   Key
	Value []byte // nil when Err is set
	Err   error  // the value could not be read (ErrCorrupt, in a *RecordError)
}

// Records calls fn for every record of the store but its own, in key
// order, with the value read (and checksummed by Badger); fn's error stops
// the walk. A value that cannot be read is passed with its Err. Each
// record is passed once, though the View under the walk may run again
// (JetStream, with writes going on): a walk of a live store is not one
// snapshot there.
func (s *Store) Records(fn func(r Record) error) error {
	seen := map[string]bool{}
	return s.View(func(tx *Tx) error {
		return tx.b.Scan(Key{}, Key{}, func(key Key, val func() ([]byte, error)) (bool, error) {
			if ownKey(key) || seen[string(key)] {
				return true, nil
			}
			seen[string(key)] = true
			r := Record{Key: key}
			if r.Value, r.Err = val(); r.Err != nil {
				r.Value = nil
			}
			return true, fn(r)
		})
	})
}

// LoggedErrors is how many errors Badger logged (rather than returned)
// since the store opened, and the last: reads that failed in its value log.
func (s *Store) LoggedErrors() (int, string) { return s.log.count() }

// Decode decodes a record's value as Get does, strictly: ErrCorrupt, with
// the key, when it does not decode into v.
func Decode(key Key, b []byte, v any) error {
	if err := recDec.Unmarshal(b, v); err != nil {
		return &RecordError{Key: key, Err: ErrCorrupt, Msg: err.Error()}
	}
	return nil
}

// Encode encodes a record's value as Put does (deterministic CBOR), for a
// caller that stores it with PutRaw beside its own bytes.
func Encode(v any) ([]byte, error) { return recEnc.Marshal(v) }
