// Package crashtest holds what the crash harness (cmd/crashtest) shares with
// the runehost it tests: the journal of effects, kept outside the store, and
// the test adapters that write it: one without and one with the
// reconciliation contract, and a metered one that spends model tokens. runehost registers them only when it is built
// with the crashtest tag (cmd/runehost/testadapter_crashtest.go).
package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
)

// The environment of a crash-test build of runehost.
const (
	JournalEnv = "RUNEHOST_CRASH_JOURNAL"  // the journal's path; unset, no test adapter is registered
	DelayEnv   = "RUNEHOST_CRASH_DELAY_MS" // a pause before and after each effect: a window for kills
)

// The test adapters' act tags.
const (
	RecordTag = "test.record" // {n: N} answers N*2; no reconciliation: an unknown outcome waits for an operator
	LookupTag = "test.lookup" // {n: N, pad: P} answers {v: N*2, pad: P bytes}; reconciled by looking the journal up
	ModelTag  = "test.model"  // as test.lookup, and host.Metered: it reserves ModelReserve tokens and spends N+1 (usage.total_tokens)
)

// ModelReserve is what an act of test.model reserves of the token allowance.
const ModelReserve = 1000

// Sentinel errors; an *Error wraps one of them.
var (
	ErrArgs    = errors.New("bad arguments")
	ErrJournal = errors.New("journal")
)

// Error says what went wrong with an act or the journal.
type Error struct {
	Op  string // operation id, INV#ORD; "" for the journal as a whole
	Err error  // ErrArgs or ErrJournal
	Msg string
}

func (e *Error) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("crashtest: %v: %s", e.Err, e.Msg)
	}
	return fmt.Sprintf("crashtest: %s: %v: %s", e.Op, e.Err, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Journal is the world's record of effects: one line "INV#ORD TAG N" per
// effect, appended and synced before the adapter answers. It lives outside
// the store, and the harness never rolls it back: a line written twice is an
// act dispatched twice.
type Journal struct{ Path string }

// Entry is one line of the journal.
type Entry struct {
	Op  string // INV#ORD
	Tag string
	N   int64
}

// Append records an effect, synced. An effect whose attempt a lookup
// declared never to have happened (Void) is refused, as the idempotency key
// of a real service refuses it: a host stopped in the middle of the effect,
// going on after another took its tree over, must not land it.
func (j Journal) Append(e Entry) error { return j.appendAttempt(e, -1) }

func (j Journal) appendAttempt(e Entry, attempt int64) error {
	f, err := os.OpenFile(j.Path, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return &Error{Op: e.Op, Err: ErrJournal, Msg: err.Error()}
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil { // the hosts' processes share it
		return &Error{Op: e.Op, Err: ErrJournal, Msg: err.Error()}
	}
	if attempt >= 0 {
		lines, err := j.lines()
		if err != nil {
			return err
		}
		for _, l := range lines {
			if l.Op == e.Op && l.Tag == voidTag && l.N == attempt {
				return &Error{Op: e.Op, Err: ErrJournal, Msg: fmt.Sprintf("attempt %d was declared never to have happened: refused", attempt)}
			}
		}
	}
	// One write: a kill never leaves half a line.
	if _, err := fmt.Fprintf(f, "%s %s %d\n", e.Op, e.Tag, e.N); err != nil {
		return &Error{Op: e.Op, Err: ErrJournal, Msg: err.Error()}
	}
	if err := f.Sync(); err != nil {
		return &Error{Op: e.Op, Err: ErrJournal, Msg: err.Error()}
	}
	return nil
}

// voidTag marks a line "INV#ORD void A": attempt A of the operation was
// looked up, not found, and so may never happen.
const voidTag = "void"

// Entries reads the journal's effects; a missing journal has none.
func (j Journal) Entries() ([]Entry, error) {
	lines, err := j.lines()
	out := lines[:0]
	for _, l := range lines {
		if l.Tag != voidTag {
			out = append(out, l)
		}
	}
	return out, err
}

// lines reads every line of the journal, void ones included.
func (j Journal) lines() ([]Entry, error) {
	b, err := os.ReadFile(j.Path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Err: ErrJournal, Msg: err.Error()}
	}
	var out []Entry
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) != 3 {
			return nil, &Error{Err: ErrJournal, Msg: fmt.Sprintf("line %q", s.Text())}
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, &Error{Err: ErrJournal, Msg: fmt.Sprintf("line %q", s.Text())}
		}
		out = append(out, Entry{Op: f[0], Tag: f[1], N: n})
	}
	return out, nil
}

// Find returns the journal's entry for an operation.
func (j Journal) Find(op string) (Entry, bool, error) {
	es, err := j.Entries()
	for _, e := range es {
		if e.Op == op {
			return e, true, nil
		}
	}
	return Entry{}, false, err
}

// lookup finds op's effect; not found, it voids the attempt (its reopened
// count), under the journal's lock, so that it never lands later.
func (j Journal) lookup(op string, attempt int64) (bool, error) {
	f, err := os.OpenFile(j.Path, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, &Error{Op: op, Err: ErrJournal, Msg: err.Error()}
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return false, &Error{Op: op, Err: ErrJournal, Msg: err.Error()}
	}
	es, err := j.Entries()
	if err != nil {
		return false, err
	}
	for _, e := range es {
		if e.Op == op {
			return true, nil
		}
	}
	if _, err := fmt.Fprintf(f, "%s %s %d\n", op, voidTag, attempt); err != nil {
		return false, &Error{Op: op, Err: ErrJournal, Msg: err.Error()}
	}
	return false, f.Sync()
}

// OpID names an operation as the journal does.
func OpID(op *host.Operation) string { return fmt.Sprintf("%s#%d", op.Invocation, op.Ordinal) }

// Register adds the test adapters to an engine.
func Register(e *host.Engine, j Journal, delay time.Duration) {
	e.Adapters[RecordTag] = recorder{j, delay}
	e.Adapters[LookupTag] = looker{recorder{j, delay}}
	e.Adapters[ModelTag] = meter{looker{recorder{j, delay}}}
}

// meter is test.model: test.lookup's effect and contract, spending model
// tokens as host.Metered says. Its reservation is held with its attempt and
// charged with its outcome, so a kill between the two is what the harness
// checks the token allowance across.
type meter struct{ looker }

// Reserve holds ModelReserve tokens for any act.
func (meter) Reserve(*host.Operation) (uint64, error) { return ModelReserve, nil }

// Spent reads usage.total_tokens from a reply.
func (meter) Spent(reply any) uint64 {
	m, _ := reply.(*checkpoint.Map)
	u, _ := m.Get("usage")
	um, _ := u.(*checkpoint.Map)
	v, _ := um.Get("total_tokens")
	n, _ := v.(int64)
	return uint64(n)
}

// recorder is test.record: an effect with no way to look it up afterwards.
type recorder struct {
	j     Journal
	delay time.Duration // before and after the effect
}

func (a recorder) Do(_ context.Context, op *host.Operation) (any, error) {
	n, pad, err := args(op)
	if err != nil {
		return nil, err
	}
	time.Sleep(a.delay)
	defer time.Sleep(a.delay)
	if err := a.j.appendAttempt(Entry{Op: OpID(op), Tag: op.Tag, N: n}, int64(op.Reopened)); err != nil {
		return nil, err
	}
	return Reply(op.Tag, n, pad), nil
}

// looker is test.lookup: the same effect, and the reconciliation contract,
// its idempotency key being the operation id written in the journal.
type looker struct{ recorder }

// Lookup finds the effect of an attempt in the journal. The journal is synced
// before an effect is answered, so not finding it means it never happened.
func (a looker) Lookup(_ context.Context, op *host.Operation) (any, bool, error) {
	n, pad, err := args(op)
	if err != nil {
		return nil, false, err
	}
	found, err := a.j.lookup(OpID(op), int64(op.Reopened))
	if err != nil || !found {
		return nil, false, err
	}
	return Reply(op.Tag, n, pad), true, nil
}

// Reply is the answer of a test act to {n: N, pad: P}.
func Reply(tag string, n int64, pad int) any {
	if tag == RecordTag {
		return n * 2
	}
	m := &checkpoint.Map{}
	m.Set("v", n*2)
	m.Set("pad", strings.Repeat("y", pad))
	if tag == ModelTag {
		u := &checkpoint.Map{}
		u.Set("total_tokens", n+1)
		m.Set("usage", u)
	}
	return m
}

// args reads {n: int, pad: int} (pad optional).
func args(op *host.Operation) (int64, int, error) {
	bad := &Error{Op: OpID(op), Err: ErrArgs, Msg: op.Tag + " wants {n: int, pad: int}"}
	d, err := checkpoint.DecodeData(op.Args)
	if err != nil {
		return 0, 0, bad
	}
	m, ok := d.(*checkpoint.Map)
	if !ok {
		return 0, 0, bad
	}
	v, _ := m.Get("n")
	n, ok := v.(int64)
	if !ok {
		return 0, 0, bad
	}
	var pad int64
	if v, ok := m.Get("pad"); ok {
		if pad, ok = v.(int64); !ok || pad < 0 || pad > 1<<20 {
			return 0, 0, bad
		}
	}
	return n, int(pad), nil
}
