// Package store keeps runehost's durable records in Badger, an embedded
// key-value store. Badger stays inside this package: callers see records
// (Go values encoded as deterministic CBOR), keys built with Key, and
// transactions with a stated durability, over a Backend (backend.go):
// Badger (badger.go), or NATS JetStream in the package store/jetstream,
// which only a program that uses it links. The key layout and the
// durability of each record kind are written down in docs/store.md. The
// package knows nothing of the engine above it, of Slack or of the sandbox.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Sentinel errors; a *RecordError or *LockedError wraps one of them.
var (
	ErrLocked   = errors.New("store is in use by another process")
	ErrCorrupt  = errors.New("corrupt record")
	ErrConflict = errors.New("transaction conflict")
	ErrTooLarge = errors.New("record too large")
	// ErrDamaged is a store whose files disagree with its seal or with
	// themselves: lost tables, a truncated or replaced MANIFEST, a table
	// that does not checksum, lost synced writes. Such a store is not
	// opened (runehost store verify reports every problem).
	ErrDamaged = errors.New("store damaged")
	// ErrNoSpace is a write refused because the disk's free space would
	// fall below the reserve (Options.Reserve).
	ErrNoSpace = errors.New("disk space below the store's reserve")
)

// MaxRecord bounds one encoded record.
const MaxRecord = 64 << 20

// Durability says what a committed transaction survives.
type Durability int

const (
	// Buffered survives a crash of the process (the write-ahead log is in
	// the operating system's page cache), not a crash of the machine.
	Buffered Durability = iota
	// Synced survives a crash of the machine too: the commit returns only
	// after the logs are flushed to disk. Attempt and outcome records of
	// acts use it, before an effect is dispatched or consumed.
	Synced
)

// Store is an open store. It is safe for concurrent use.
type Store struct {
	*badgerStore               // Badger; the Badger-only features below use it directly
	be           Backend       // what transactions go through
	other        *otherBackend // a backend other than Badger, when it is be (badgerStore is then an empty one)
	lock         *os.File      // holds the directory (lockName) from before Badger opens it until after it closed

	sealMu   sync.Mutex
	sealed   *seal
	sealMark [2]int64             // the MANIFEST's size and time when sealed
	verified map[uint64]fileStamp // tables read in full, by their contents
	sealStop chan struct{}
	sealDone chan struct{}

	check          func(tx *Tx, written []Key) error // SetCheck's
	committed      func(put []Key)                   // SetCommitted's
	committedUnder []Key                             // and the prefixes of the keys it sees

	logged    atomic.Int64 // bytes of values written to the value log since the last collection (compact.go)
	collectMu sync.Mutex   // one collection at a time
	collected atomic.Bool  // since the store opened
	written   atomic.Int64 // bytes of records put
}

// newStore is a Store over the Badger backend b.
func newStore(b *badgerStore) *Store { return &Store{badgerStore: b, be: badgerBackend{b}} }

// Options configure Open.
type Options struct {
	Dir      string // "" means DefaultDir()
	InMemory bool   // for tests: nothing touches the disk
	// Reserve is the free disk space, in bytes, that writes leave (beyond
	// what Badger's preallocated logs may still claim); 0 means
	// DefaultReserve. UpdateInReserve needs only an eighth of it free.
	Reserve uint64
	// FreeSpace, if set, replaces the file system's count of free bytes
	// (statfs): tests fill a disk with it.
	FreeSpace func() (uint64, error)
	// AcceptDamage opens a store whose files disagree with its seal and
	// seals it as it now is, accepting what was lost (runehost store
	// verify --accept). Tables that are missing or do not checksum are
	// dropped from the MANIFEST, their files renamed NAME.damaged.
	AcceptDamage bool
}

// DefaultDir is the embedded default: runehost/store under the user's data
// directory ($XDG_DATA_HOME, or ~/.local/share).
func DefaultDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("store: no data directory: %w (give --store DIR)", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "runehost", "store"), nil
}

// holderFile names the process that has the store open.
const holderFile = "HOLDER"

// Holder describes the process that has a store open.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s (%s), since %s", h.PID, h.Host, h.Command, h.Since.Format(time.RFC3339))
}

// LockedError says who holds a store.
type LockedError struct {
	Dir    string
	Holder *Holder // nil when unknown
}

func (e *LockedError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("store %s is in use by another process", e.Dir)
	}
	return fmt.Sprintf("store %s is in use by %s", e.Dir, e.Holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// lockName is the file the store locks for as long as it is open. Badger
// locks the directory too, but only once it opens it: the files are
// checked before that, under this lock.
const lockName = "RUNEHOST.LOCK"

// errBusy is a lock another process holds.
var errBusy = errors.New("busy")

// Open opens (creating if need be) the store in opts.Dir. If another
// process has it open, Open fails at once with a *LockedError naming it.
// Before Badger may touch the files, they are checked against the store's
// seal: a store that lost tables or synced writes fails with ErrDamaged,
// in a *RecordError naming the file, and nothing is changed.
func Open(opts Options) (*Store, error) {
	if st, ok, err := openFromEnv(opts); ok {
		return st, err
	}
	if opts.InMemory {
		bo := storeOptions("").WithInMemory(true).WithDir("").WithValueDir("").WithValueThreshold(1 << 20) // in memory, a value cannot go to a log
		db, err := badger.Open(bo)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return newStore(&badgerStore{db: db, log: &badgerLog{}}), nil
	}
	if opts.Dir == "" {
		dir, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
	}
	lock, err := lockDirFile(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := keptInBadger(opts.Dir); err != nil {
		lock.Close()
		return nil, err
	}
	s, err := open(opts, lock)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return s, nil
}

// open is Open under the lock.
func open(opts Options, lock *os.File) (*Store, error) {
	dir := opts.Dir
	if err := removeEmptyLogs(dir); err != nil {
		return nil, err
	}
	sl, err := readSeal(dir)
	var rerr *RecordError
	if errors.As(err, &rerr) && !opts.AcceptDamage {
		return nil, joinDamage(dir, []*RecordError{rerr}, false)
	} else if err != nil && !opts.AcceptDamage {
		return nil, err
	}
	var prefix int64
	if sl != nil {
		prefix = sl.Manifest.Size
	}
	files, err := readFiles(dir, prefix)
	if err != nil && !opts.AcceptDamage {
		return nil, err
	}
	var verified map[uint64]fileStamp
	if files != nil {
		var problems []*RecordError
		problems, verified = preflight(files, sl)
		if len(problems) > 0 && !opts.AcceptDamage {
			return nil, joinDamage(dir, problems, false)
		}
		if opts.AcceptDamage {
			// The tables Badger cannot open with are set aside, and lost.
			var bad []uint64
			for id := range files.manifest.tables {
				if _, ok := verified[id]; !ok {
					bad = append(bad, id)
				}
			}
			if err := setAside(dir, bad); err != nil {
				return nil, err
			}
			files = nil // changed: not checked again after Badger opens
		}
	}
	log := &badgerLog{}
	db, err := openBadger(storeOptions(dir).WithLogger(log))
	if err != nil {
		return nil, err
	}
	s := newStore(&badgerStore{db: db, dir: dir, log: log, space: newReserve(dir, opts.Reserve, opts.FreeSpace)})
	s.lock, s.verified, s.sealStop, s.sealDone = lock, verified, make(chan struct{}), make(chan struct{})
	if err := s.afterOpen(files, sl); err != nil && !opts.AcceptDamage {
		db.Close()
		return nil, err
	}
	if sl != nil && !opts.AcceptDamage {
		s.sealed = sl
		s.synced.Store(sl.Synced)
	}
	s.synced.Store(max(s.synced.Load(), s.markVersion()))
	if err := s.renewSeal(opts.AcceptDamage || sl == nil, opts.AcceptDamage); err != nil {
		db.Close()
		return nil, err
	}
	if err := writeHolder(s.dir); err != nil {
		db.Close()
		return nil, err
	}
	go s.sealLoop()
	return s, nil
}

// afterOpen checks what only an open Badger can tell: that it kept every
// table its MANIFEST lists (it skips some it cannot read), and that the
// newest synced commit the seal recorded is there.
func (s *Store) afterOpen(files *dirFiles, sl *seal) error {
	var problems []*RecordError
	if files != nil {
		open := map[uint64]bool{}
		for _, t := range s.db.Tables() {
			open[t.ID] = true
		}
		for id := range files.manifest.tables {
			if !open[id] {
				problems = append(problems, damaged(filepath.Join(s.dir, tableName(id)), "listed by the MANIFEST, and Badger did not open it"))
			}
		}
	}
	v := s.markVersion()
	switch {
	case sl != nil && v < sl.Synced:
		problems = append(problems, damaged(s.dir, "the newest synced commit is %d, and the seal recorded %d: synced writes were lost (a write-ahead log (.mem) or a table was damaged)", v, sl.Synced))
	case sl == nil && v > 0:
		problems = append(problems, damaged(filepath.Join(s.dir, sealFile), "missing, while the store was sealed before: its checks cannot be made"))
	}
	if len(problems) > 0 {
		return joinDamage(s.dir, problems, true)
	}
	return nil
}

// joinDamage is the error of a damaged store: the first problem, and how
// many more there are; opened says Badger had opened the store.
func joinDamage(dir string, problems []*RecordError, opened bool) error {
	e := *problems[0]
	if len(problems) > 1 {
		e.Msg += fmt.Sprintf(" (and %d more problems)", len(problems)-1)
	}
	if opened {
		e.Msg += "; the store was closed again before any write"
	} else {
		e.Msg += "; the store was not opened and nothing was changed"
	}
	e.Msg += ": runehost store verify --store " + dir + " lists every problem (docs/store.md: recovering a damaged store)"
	return &e
}

func readHolder(dir string) *Holder {
	b, err := os.ReadFile(filepath.Join(dir, holderFile))
	if err != nil {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

// command is a command line up to its first flag: a flag's value may be a
// secret (--bot-token), and the holder file is read by whoever opens next.
func command(args []string) string {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			return strings.Join(args[:i], " ")
		}
	}
	return strings.Join(args, " ")
}

// ThisProcess describes this process as a store's holder: its command up
// to the first flag, since a flag's value may be a secret.
func ThisProcess() Holder {
	host, _ := os.Hostname()
	h := Holder{PID: os.Getpid(), Host: host, Command: command(os.Args), Since: time.Now().UTC().Truncate(time.Second)}
	if len(h.Command) > 200 {
		h.Command = h.Command[:200] + "…"
	}
	return h
}

func writeHolder(dir string) error {
	b, _ := json.Marshal(ThisProcess())
	tmp := filepath.Join(dir, holderFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, holderFile))
}

// Dir returns the store's directory ("" in memory).
func (s *Store) Dir() string {
	if s.other != nil {
		if s.other.lock == nil {
			return ""
		}
		return s.other.lock.dir
	}
	return s.dir
}

// Close flushes and closes the store, and seals it as it is then.
func (s *Store) Close() error {
	if s.other != nil {
		err := s.be.Close()
		if s.other.lock != nil {
			s.other.lock.Unlock()
		}
		return err
	}
	if s.dir == "" {
		return s.be.Close()
	}
	close(s.sealStop)
	<-s.sealDone
	s.synced.Store(max(s.synced.Load(), s.markVersion()))
	// Sync first: Badger's close writes the memtable to a table, which can
	// name values in the value log, before it syncs that log, so a crash in
	// between would leave the table naming values never on disk.
	err := s.sync()
	if err == nil {
		err = s.be.Close()
	} else {
		s.be.Close()
	}
	if err == nil {
		err = s.renewSeal(true, false)
	}
	os.Remove(filepath.Join(s.dir, holderFile))
	s.lock.Close()
	return err
}

// Update runs fn in a read-write transaction and commits it with the given
// durability. A conflict with a concurrent transaction returns ErrConflict
// and nothing is written; the caller may retry. A transaction that would
// bring the disk's free space below the reserve returns ErrNoSpace and
// writes nothing.
func (s *Store) Update(d Durability, fn func(tx *Tx) error) error {
	return s.update(d, false, fn)
}

// UpdateInReserve is Update for the few small writes that stop or clean up
// work (a pause, a cancel, a revoke, an act's outcome, deletions): they may
// use the disk reserve that Update keeps free, as long as the free space
// itself stays above an eighth of it.
func (s *Store) UpdateInReserve(d Durability, fn func(tx *Tx) error) error {
	return s.update(d, true, fn)
}

// Room says whether a write would be admitted now, the disk measured
// afresh: nil, or ErrNoSpace as Update (inReserve: UpdateInReserve) would
// return it. A command that makes several writes asks first, so that on a
// full disk it refuses with nothing written rather than stop halfway with
// part of its effect applied.
func (s *Store) Room(inReserve bool) error {
	var r *reserve
	if s.other != nil {
		r = s.other.space
	} else if s.badgerStore != nil {
		r = s.badgerStore.space
	}
	if r == nil { // in memory
		return nil
	}
	return r.room(inReserve)
}

// update runs fn in a backend transaction; one that wrote nothing has
// nothing to commit or to sync.
func (s *Store) update(d Durability, inReserve bool, fn func(tx *Tx) error) error {
	b, err := s.be.Begin(true)
	if err != nil {
		return err
	}
	defer b.Discard()
	tx := &Tx{b: b, s: s}
	if err := fn(tx); err != nil {
		return b.Abort(err)
	}
	if tx.size == 0 {
		if st, ok := b.(interface{ Settle() error }); ok {
			return st.Settle() // reads a backend kept from before are checked
		}
		return nil
	}
	if s.check != nil && !tx.noCheck {
		if err := s.check(tx, tx.written); err != nil {
			return b.Abort(err)
		}
	}
	if s.other != nil && s.other.space != nil { // Badger's commit admits its own
		if err := s.other.space.admit(tx.size, inReserve); err != nil {
			return err
		}
	}
	if err := b.Commit(d, inReserve, tx.size); err != nil {
		return err
	}
	if s.committed != nil && len(tx.put) > 0 {
		s.committed(tx.put)
	}
	return nil
}

func firstLine(err error) string {
	m, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(m, ". Value:")
}

// Trips counts the requests a store's backend made to its servers since it
// was opened: JetStream's reads (a direct get each), scans (a consumer
// each: three requests) and commits (an atomic batch each, of Messages in
// all). An embedded Badger store makes none: all zero.
type Trips struct {
	Reads, Scans, Commits, Messages uint64
}

// Trips returns the requests the store's backend made so far.
func (s *Store) Trips() Trips {
	if c, ok := s.be.(interface{ Trips() Trips }); ok {
		return c.Trips()
	}
	return Trips{}
}

// SetCheck sets a function every update transaction that wrote something
// runs just before it commits, unless it called NoCheck, with the keys it
// wrote: what the function reads is part of the transaction (a change to
// it before the commit is a conflict), and its error fails the commit.
// Set it before the store is used.
func (s *Store) SetCheck(check func(tx *Tx, written []Key) error) { s.check = check }

// Hurry bounds how long the store's operations keep trying while its
// servers do not answer: after by, each gives up with its error. A process
// that drains (runehost serve stopping) sets it, so that a cluster that is
// gone does not hold it for the backend's whole patience at every write;
// what it did not write is recovered as after a crash. A store of this
// process alone (Badger) has no servers to wait for: nothing changes.
func (s *Store) Hurry(by time.Time) {
	if h, ok := s.be.(interface{ Hurry(time.Time) }); ok {
		h.Hurry(by)
	}
}

// SetCommitted sets a function every update transaction calls once it
// committed, with the keys it put (not those it deleted) under one of
// prefixes (every key, when none is given): a hint to the process of what
// changed, which needs no read. Only those keys are kept as a transaction
// goes. Set it before the store is used.
func (s *Store) SetCommitted(fn func(put []Key), prefixes ...Key) {
	s.committed, s.committedUnder = fn, prefixes
}

// Shared reports whether the store was opened to be shared by many host
// processes (a JetStream store opened Shared): its users must coordinate
// above it.
func (s *Store) Shared() bool {
	sh, ok := s.be.(interface{ Shared() bool })
	return ok && sh.Shared()
}

// Retry is Update, run again from the start after a conflict until it
// commits: fn must depend only on what it reads in its transaction.
func (s *Store) Retry(d Durability, fn func(tx *Tx) error) error {
	return s.retry(d, false, fn)
}

// RetryInReserve is UpdateInReserve, retried as Retry is.
func (s *Store) RetryInReserve(d Durability, fn func(tx *Tx) error) error {
	return s.retry(d, true, fn)
}

func (s *Store) retry(d Durability, inReserve bool, fn func(tx *Tx) error) error {
	for {
		err := s.update(d, inReserve, fn)
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
}

// View runs fn in a read-only transaction, which sees the records as they
// stood at one moment. A backend without snapshots (JetStream) checks
// afterwards that nothing fn read changed meanwhile, and runs fn again if
// something did: fn, like Retry's, must depend only on what it reads.
func (s *Store) View(fn func(tx *Tx) error) error {
	for runs := 1; ; runs++ {
		b, err := s.be.Begin(false)
		if err != nil {
			return err
		}
		err = func() error {
			defer b.Discard() // a panic in fn must not leave the transaction open (Badger's read mark)
			return fn(&Tx{b: b, s: s, readOnly: true})
		}()
		v, ok := b.(checked)
		if !ok {
			return err
		}
		if errors.Is(err, ErrConflict) && runs < maxViewRuns {
			continue
		}
		same, verr := v.Unchanged()
		if verr != nil && err == nil {
			return verr
		}
		if same || runs >= maxViewRuns {
			if !same && err == nil {
				return fmt.Errorf("%w: the records a read needed changed %d times while it read them", ErrConflict, runs)
			}
			return err
		}
	}
}

// checked is a transaction whose reads can be checked again.
type checked interface{ Unchanged() (bool, error) }

// maxViewRuns bounds how often a View runs again.
const maxViewRuns = 100

// RecordError says which record, or which file of the store, could not be
// read or written.
type RecordError struct {
	Key  Key    // the record; nil for a file
	File string // the file (a path), when the problem is one of the store's files
	Err  error  // ErrCorrupt, ErrTooLarge or ErrDamaged
	Msg  string
}

func (e *RecordError) Error() string {
	if e.Key == nil {
		return fmt.Sprintf("%s: %v: %s", e.File, e.Err, e.Msg)
	}
	if e.File != "" {
		return fmt.Sprintf("record %s (in %s): %v: %s", e.Key, filepath.Base(e.File), e.Err, e.Msg)
	}
	return fmt.Sprintf("record %s: %v: %s", e.Key, e.Err, e.Msg)
}
func (e *RecordError) Unwrap() error { return e.Err }
