// badger.go holds the Badger backend: its transactions, what a commit adds
// (the disk reserve, the seal's mark, the group sync), and how a value
// Badger cannot read is reported (the file that holds it, never a panic).

package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// badgerStore is the Badger backend. Store embeds it: the Badger-only
// features (seal, compaction, backup, file checks) use it directly.
type badgerStore struct {
	db    *badger.DB
	dir   string     // "" in memory
	logs  logState   // the logs the last sync left (sync.go)
	log   *badgerLog // the errors Badger logs instead of returning
	space *reserve   // nil in memory

	synced atomic.Uint64 // at most the mark's version, as of the newest synced commit that wrote it
	group  syncGroup     // Synced commits waiting for one shared sync (sync.go)
	marked atomic.Int64  // when a synced transaction last carried the mark (unix ns)
	syncs  atomic.Uint64 // syncs made for Synced commits (Syncs)

	valueWrites atomic.Uint64 // commits that may have written the value log (sync.go)
	collecting  atomic.Int32  // collections of the value log under way
}

// badgerOptions are Badger's options for a store in dir.
func badgerOptions(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(false).
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20).
		WithValueLogFileSize(64 << 20).
		// Values of 16 KiB and more (checkpoints' chunks, replies,
		// arguments) go to the value log, so that a transaction's size,
		// which Badger caps at 15% of a memtable, counts them as pointers.
		WithValueThreshold(valueThreshold).
		WithNumVersionsToKeep(1).
		WithNumCompactors(2).
		// Checksums on every read: a damaged block or value is found, not
		// read as garbage.
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true)
}

// storeOptions are badgerOptions as the build wants them (the crash-test
// build shrinks the logs).
func storeOptions(dir string) badger.Options { return testOptions(badgerOptions(dir)) }

// openBadger opens Badger, a panic of its (over a file it could not read)
// an error.
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			db, err = nil, damaged(bo.Dir, "Badger failed opening it: %s", firstLine(fmt.Errorf("%v", r)))
		}
	}()
	db, err = badger.Open(bo)
	if err != nil && (strings.Contains(err.Error(), "sanity text") || strings.Contains(err.Error(), "key registry")) {
		return nil, damaged(filepath.Join(bo.Dir, badger.KeyRegistryFileName), "Badger cannot read it: %v", firstLine(err))
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", bo.Dir, err)
	}
	return db, nil
}

// badgerBackend is the Backend over a badgerStore: a type of its own, so
// that Store, which embeds the badgerStore, does not export Begin.
type badgerBackend struct{ b *badgerStore }

func (a badgerBackend) Begin(update bool) (BackendTx, error) { return a.b.begin(update) }
func (a badgerBackend) Close() error                         { return a.b.close() }

func (b *badgerStore) close() error {
	err := b.db.Close()
	b.logs.closeLogs()
	return err
}

// begin starts a transaction; a read-only one on a closed store fails, as
// Badger's View does.
func (b *badgerStore) begin(update bool) (BackendTx, error) {
	if !update && b.db.IsClosed() {
		return nil, badger.ErrDBClosed
	}
	return &badgerTx{b: b, t: b.db.NewTransaction(update)}, nil
}

// badgerTx is a Badger transaction.
type badgerTx struct {
	b     *badgerStore
	t     *badger.Txn
	large bool // a value set may go to the value log
}

func (t *badgerTx) Discard() { t.t.Discard() }

func (t *badgerTx) Set(key Key, val []byte) error {
	// Badger puts values from valueThreshold up in the value log; half of
	// it leaves room for any rounding of its own.
	t.large = t.large || len(val) >= valueThreshold/2
	return t.t.Set(bytes.Clone(key), val)
}

func (t *badgerTx) Delete(key Key) error { return t.t.Delete(bytes.Clone(key)) }

// get reads (a copy of) the value at key.
func (t *badgerTx) Get(key Key) (b []byte, found bool, err error) {
	defer t.b.readFault(key, &err, debug.SetPanicOnFault(true))
	item, err := t.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b, err = item.ValueCopy(nil)
	if err == nil && len(b) == 0 && item.ValueSize() > 0 {
		err = t.unreadable(key)
	}
	return b, err == nil, err
}

// scan walks the items under prefix from start. Badger's own calls are
// guarded; a panic in fn is fn's, and goes on.
func (t *badgerTx) Scan(prefix, start Key, fn func(key Key, val func() ([]byte, error)) (bool, error)) (err error) {
	var key Key
	var item *badger.Item
	val := func() ([]byte, error) { return t.itemValue(key, item) } // one closure for the whole scan
	inFn := false
	defer func() {
		if inFn { // fn's panic, not Badger's: on it goes
			return
		}
		if r := recover(); r != nil {
			err = t.b.faultErr(start, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	it := t.t.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
		item = it.Item()
		key = Key(item.KeyCopy(nil))
		start = key
		inFn = true
		more, err := fn(key, val)
		inFn = false
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// itemValue reads an item's value, as get does.
func (t *badgerTx) itemValue(key Key, item *badger.Item) (b []byte, err error) {
	defer t.b.readFault(key, &err, debug.SetPanicOnFault(true))
	b, err = item.ValueCopy(nil)
	if err == nil && len(b) == 0 && item.ValueSize() > 0 {
		err = t.unreadable(key)
	}
	return b, err
}

// fidRE finds the value log file in Badger's message about a value.
var fidRE = regexp.MustCompile(`Fid:(\d+)`)

// unreadable says why an empty value Badger read for a record that has
// one could not be read: Badger reads a value it could not find in its
// value log as empty, with no error, and logs why.
func (t *badgerTx) unreadable(key Key) error {
	_, last := t.b.log.count()
	e := &RecordError{Key: key, Err: ErrCorrupt, Msg: "its value could not be read from the value log: " + last}
	if f := t.b.log.lastLog(); f != "" && t.b.dir != "" {
		e.File = filepath.Join(t.b.dir, f)
	}
	return e
}

// commit admits the transaction's size above the reserve, adds the mark
// when due, commits, and syncs a Synced commit with the group.
func (t *badgerTx) Commit(d Durability, inReserve bool, size int) error {
	b := t.b
	var err error
	if b.space != nil {
		err = b.space.admit(size, inReserve)
	}
	begun := err == nil && d == Synced
	if begun {
		b.group.begin()
	}
	var after uint64
	if err == nil && d == Synced && b.markDue() {
		err = t.t.Set(markKey, markValue)
		// The commit's version, and so the mark's after it, is above the
		// transaction's read timestamp.
		after = t.t.ReadTs() + 1
	}
	if err == nil {
		err = t.t.Commit()
	}
	if err != nil {
		if begun {
			b.group.end()
		}
		return t.Abort(err)
	}
	if t.large {
		// Counted once its value is in the file, before it is synced: a
		// sync that reads the count after this flushes the value log with
		// the value in it (counted before, a sync could flush the log
		// before the value came, and call it synced).
		b.valueWrites.Add(1)
	}
	if d == Synced {
		return b.syncCommit(after)
	}
	return nil
}

// abort maps Badger's errors: its conflict is ErrConflict, and a
// transaction or value over its limits (refused by a set, or at commit)
// ErrTooLarge.
func (t *badgerTx) Abort(err error) error {
	if errors.Is(err, badger.ErrConflict) {
		return ErrConflict
	}
	if errors.Is(err, badger.ErrTxnTooBig) || err != nil && strings.HasPrefix(err.Error(), "Value with size") {
		return fmt.Errorf("%w: one transaction's records are too large together (%v)", ErrTooLarge, firstLine(err))
	}
	return err
}

// syncCommit makes a commit, and every one before it, survive a crash of the
// machine: the one place a Synced transaction is flushed to disk. Commits
// that finish while a sync runs share the next one (group commit). version
// is at most the mark's version once the commit that wrote it is synced:
// the seal records it as synced.
func (b *badgerStore) syncCommit(version uint64) error {
	return b.group.wait(version, func(upTo uint64) error {
		if err := b.sync(); err != nil { // synchook.go
			return fmt.Errorf("store: sync: %w", err)
		}
		b.syncs.Add(1)
		for old := b.synced.Load(); upTo > old && !b.synced.CompareAndSwap(old, upTo); old = b.synced.Load() {
		}
		return nil
	})
}

// markKey is the store's own record, written by a synced commit every
// markEvery: its version is that commit's.
var markKey = K("seal")

// markValue is the mark's value: CBOR true.
var markValue = []byte{0xf5}

// markEvery is how often a synced transaction carries the mark: often
// enough that a lost write-ahead log's tail holds one, seldom enough to
// cost nothing (a one-record transaction with the mark is three entries).
const markEvery = 100 * time.Millisecond

// markDue reports whether this synced transaction is to carry the mark.
func (b *badgerStore) markDue() bool {
	if b.dir == "" {
		return false
	}
	now := time.Now().UnixNano()
	last := b.marked.Load()
	return now-last >= int64(markEvery) && b.marked.CompareAndSwap(last, now)
}

// markVersion is the version of the mark as it stands (0 when none).
func (b *badgerStore) markVersion() (v uint64) {
	defer func() { recover() }() // a damaged table under an open store: unknown, 0
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	b.db.View(func(t *badger.Txn) error {
		if item, err := t.Get(markKey); err == nil {
			v = item.Version()
		}
		return nil
	})
	return v
}

// badgerLog keeps the errors Badger logs instead of returning them: a value
// it could not read from its value log is logged, and read as empty.
type badgerLog struct {
	mu     sync.Mutex
	errors int
	last   string
	fid    string // the value log file the last message named
}

func (l *badgerLog) Errorf(format string, args ...any) {
	m := firstLine(fmt.Errorf(format, args...))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors++
	if f := fidRE.FindStringSubmatch(m); f != nil {
		l.fid = f[1]
	}
	if _, after, ok := strings.Cut(m, " Error: "); ok {
		l.last = strings.TrimSpace(after) // an unreadable value; the lines after it list its versions
	} else if !strings.HasPrefix(m, "Key: ") {
		l.last = strings.TrimSpace(m)
	}
}
func (*badgerLog) Warningf(string, ...any) {}
func (*badgerLog) Infof(string, ...any)    {}
func (*badgerLog) Debugf(string, ...any)   {}

// count returns how many errors Badger logged, and the last.
func (l *badgerLog) count() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors, l.last
}

// lastLog is the value log file Badger's last message named ("" if none).
func (l *badgerLog) lastLog() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fid == "" {
		return ""
	}
	return fmt.Sprintf("%06s.vlog", l.fid)
}

// readFault is deferred, with the previous SetPanicOnFault, by every call
// into Badger for the record at key: it turns a panic of Badger's (a
// damaged file, or one shorter than its mapping) into an error naming the
// record and the tables that may hold it. A deferred call, not a closure:
// reads pay no allocation for it.
func (b *badgerStore) readFault(key Key, err *error, old bool) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		*err = b.faultErr(key, r)
	}
}

// faultErr is the error of a panic r while reading the record at key.
func (b *badgerStore) faultErr(key Key, r any) error {
	return &RecordError{Key: key, File: b.tablesHolding(key), Err: ErrCorrupt,
		Msg: fmt.Sprintf("Badger failed reading it (%s); runehost store verify checks every file", firstLine(fmt.Errorf("%v", r)))}
}

// tablesHolding names the tables whose key range covers key, or (if even
// their ranges cannot be read) every table.
func (b *badgerStore) tablesHolding(key Key) (names string) {
	if b == nil || b.dir == "" {
		return ""
	}
	defer func() {
		if recover() != nil {
			all, _ := filepath.Glob(filepath.Join(b.dir, "*.sst"))
			for i := range all {
				all[i] = filepath.Base(all[i])
			}
			names = filepath.Join(b.dir, strings.Join(all, ","))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var holding []string
	for _, t := range b.db.Tables() {
		if bytes.Compare(parseKey(t.Left), key) <= 0 && bytes.Compare(key, parseKey(t.Right)) <= 0 {
			holding = append(holding, tableName(t.ID))
		}
	}
	return filepath.Join(b.dir, strings.Join(holding, ","))
}

// parseKey strips the version Badger appends to a key inside a table.
func parseKey(k []byte) []byte {
	if len(k) < 8 {
		return k
	}
	return k[:len(k)-8]
}
