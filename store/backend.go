// backend.go holds the boundary between a transaction's records and what
// keeps them: Badger (badger.go), or a backend of a package of its own
// (store/jetstream), which a program links only if it uses it.

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Backend keeps a Store's records. Store and Tx put CBOR, size accounting,
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
//
// A backend shared by processes may also have the methods of messenger
// (ask.go), Trips() Trips and Shared() bool; see OpenBackend.
type Backend interface {
	// Begin starts a transaction: a read-only one unless update.
	Begin(update bool) (BackendTx, error)
	Close() error
}

// BackendTx is a backend's transaction. Keys passed in may be reused by the
// caller once the call returns.
//
// A transaction whose reads are not from one snapshot also has
// Unchanged() (bool, error), which a View calls when its function returns,
// to run it again if something it read changed; Settle() error, which
// checks an update that wrote nothing; and Peek(Key), a read the commit does
// not check (Tx.Peek).
type BackendTx interface {
	// Get reads (a copy of) the value at key; found is false when there is
	// none. An unreadable value is ErrCorrupt in a *RecordError.
	Get(key Key) (val []byte, found bool, err error)
	// Scan calls fn for every key under prefix at or after start, in byte
	// order, until fn returns false or an error; val reads the key's value
	// (a copy) while fn runs, as Get does.
	Scan(prefix, start Key, fn func(key Key, val func() ([]byte, error)) (more bool, err error)) error
	// Set writes val at key; val is the transaction's from then on.
	Set(key Key, val []byte) error
	Delete(key Key) error
	// Commit applies the writes, size bytes of keys and values, with
	// durability d: nil, ErrConflict (nothing written), ErrTooLarge or
	// ErrNoSpace (below the reserve; inReserve may use most of it).
	Commit(d Durability, inReserve bool, size int) error
	// Abort is the error of a transaction whose function failed with err,
	// mapped as Commit maps its own: a set refused because the
	// transaction grew too large is ErrTooLarge.
	Abort(err error) error
	// Discard ends the transaction; after a commit it does nothing.
	Discard()
}

// OpenBackend makes a Store of the records b keeps. dir, if not nil, is
// the store's directory, locked until the store closes: its free space is
// kept above opts.Reserve, as a Badger store's is. b is closed with the
// Store.
func OpenBackend(b Backend, dir *DirLock, opts Options) *Store {
	st := &Store{badgerStore: &badgerStore{log: &badgerLog{}}, be: b, other: &otherBackend{lock: dir}}
	if dir != nil {
		st.other.space = newReserve(dir.dir, opts.Reserve, opts.FreeSpace)
	}
	return st
}

// otherBackend is what a Store keeps of a backend other than Badger.
type otherBackend struct {
	lock  *DirLock // nil when the backend has no directory here
	space *reserve // nil unless it has one, on a disk
}

// DirLock is a store directory locked by this process, with a note of who
// holds it (HOLDER) for a process that finds it locked.
type DirLock struct {
	dir  string
	f    *os.File
	once sync.Once
}

// LockDir locks dir (creating it if need be) for this process: a
// *LockedError naming the holder when another process has it.
func LockDir(dir string) (*DirLock, error) {
	f, err := lockDirFile(dir)
	if err != nil {
		return nil, err
	}
	if err := writeHolder(dir); err != nil {
		f.Close()
		return nil, err
	}
	return &DirLock{dir: dir, f: f}, nil
}

// lockDirFile takes dir's lock file (lockName), creating dir if need be.
func lockDirFile(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errBusy) {
			return nil, &LockedError{Dir: dir, Holder: readHolder(dir)}
		}
		return nil, fmt.Errorf("store %s: lock: %w", dir, err)
	}
	return f, nil
}

// Dir is the locked directory.
func (l *DirLock) Dir() string { return l.dir }

// Unlock removes the holder's note and frees the directory; only the first
// call does anything.
func (l *DirLock) Unlock() {
	l.once.Do(func() {
		os.Remove(filepath.Join(l.dir, holderFile))
		l.f.Close()
	})
}

// envBackend names the backend every store of the process is opened on when
// Open is given no other: "jetstream" runs the test suites on an embedded
// JetStream node (make test-jetstream).
const envBackend = "RUNEHOST_STORE_BACKEND"

var (
	envMu     sync.Mutex
	envOpener func(v string, opts Options) (*Store, error)
)

// RegisterEnv makes open the opener of the stores Open is asked for by
// RUNEHOST_STORE_BACKEND, set to anything but "badger". Its package calls
// it when it is linked (store/jetstream's init), so that Open, which does
// not link it, can still open a store there.
func RegisterEnv(open func(v string, opts Options) (*Store, error)) {
	envMu.Lock()
	envOpener = open
	envMu.Unlock()
}

// openFromEnv opens the store the environment asks for; ok is false when
// it asks for Badger.
func openFromEnv(opts Options) (st *Store, ok bool, err error) {
	v := os.Getenv(envBackend)
	if v == "" || v == "badger" {
		return nil, false, nil
	}
	envMu.Lock()
	open := envOpener
	envMu.Unlock()
	if open == nil {
		if v != "jetstream" && !strings.HasPrefix(v, "nats://") {
			return nil, true, fmt.Errorf("store: %s=%q: want badger, jetstream or nats://URL", envBackend, v)
		}
		return nil, true, fmt.Errorf("store: %s=%q: this program was built without the JetStream backend (store/jetstream)", envBackend, v)
	}
	st, err = open(v, opts)
	return st, true, err
}
