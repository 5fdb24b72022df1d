// bounds.go holds the caps users can read: checkpoint size, act argument and
// reply size, journal length, store quota, bytes of the run log. Crossing 80% of a cap logs a warning; passing
// it is a clear error of kind "limit". Large replies are stored once, by
// reference, so that ledger records stay small.

package host

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/store"
)

// Bounds are an engine's caps. docs/store.md lists the defaults.
type Bounds struct {
	Checkpoint int    // bytes of one stored checkpoint; past it the invocation fails
	ActArgs    int    // bytes of an act's encoded arguments; past it the act is refused
	ActReply   int    // bytes of an act's encoded reply; past it the reply is an error
	Journal    uint64 // acts and awaits of one invocation; past it each is refused
	ByRef      int    // replies larger than this are stored once, by reference
	// Store is the bytes of checkpoint and of consumed replies one
	// invocation may hold in the store; past it the invocation fails.
	Store int64
	// Events is the bytes of run-log events one invocation may store
	// (counted as stored, with the run: a resumed run goes on from its
	// count); a slice that leaves more stored fails the invocation. It is
	// per invocation, not per tree: each child has its own. 0: no cap.
	Events int64
}

// DefaultBounds are the caps of a new engine.
var DefaultBounds = Bounds{
	Checkpoint: 16 << 20,
	ActArgs:    1 << 20,
	ActReply:   16 << 20,
	Journal:    100_000,
	ByRef:      64 << 10,
	Store:      256 << 20,
	Events:     64 << 20,
}

// nearly reports whether n has just crossed 80% of limit, coming from prev.
func nearly(prev, n, limit uint64) bool {
	w := limit - limit/5
	return prev < w && n >= w && n <= limit
}

// warn logs a warning and tells OnWarn.
func (e *Engine) warn(inv, bound, msg string) {
	e.log(inv, e.note(events.NoteBudget, bound+": "+msg))
	if e.OnWarn != nil {
		e.OnWarn(inv, msg)
	}
}

// Size is n bytes as a person reads a cap: "64 MiB", "512 KiB", else
// "1000 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// errEvents is an invocation's run log past Bounds.Events.
var errEvents = errors.New("events over the cap")

// eventsError is the limit error of a run past Bounds.Events.
func eventsError(limit int64) *checkpoint.Error {
	return &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf("events: the run stored more than %s of events (%d bytes)", Size(limit), limit)}
}

// eventsWarn warns once an invocation's run log crosses 80% of its cap.
func (e *Engine) eventsWarn(inv string, before, after uint64) {
	if q := e.Bounds.Events; q > 0 && nearly(before, after, uint64(q)) {
		e.warn(inv, "events", fmt.Sprintf("%d bytes of events stored, near the cap of %s", after, Size(q)))
	}
}

func limitReply(format string, args ...any) []byte {
	b, _ := checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "limit", Msg: fmt.Sprintf(format, args...)}})
	return b
}

func blobKey(hash string) store.Key { return store.K("blob", hash) }

// byRef stores a large reply once under its hash (synced, as the outcome
// that names it will be) and returns the outcome naming it.
func (e *Engine) byRef(o Outcome) (Outcome, error) {
	if len(o.Reply) <= e.Bounds.ByRef {
		return o, nil
	}
	hash := fmt.Sprintf("%x", sha256.Sum256(o.Reply))
	err := e.Store.RetryInReserve(store.Synced, func(tx *store.Tx) error { // an outcome's: the effect happened
		if _, ok, err := tx.GetRaw(blobKey(hash)); err != nil || ok {
			return err
		}
		return tx.PutRaw(blobKey(hash), o.Reply)
	})
	o.Ref, o.Size, o.Reply = hash, len(o.Reply), nil
	return o, err
}

// reply returns an outcome's reply, reading it from its blob when stored by
// reference; a blob that does not match its hash is ErrCorrupt.
func (e *Engine) reply(o *Outcome) ([]byte, error) {
	if o.Ref == "" {
		return o.Reply, nil
	}
	var b []byte
	err := e.Store.View(func(tx *store.Tx) error {
		var ok bool
		var err error
		b, ok, err = tx.GetRaw(blobKey(o.Ref))
		if err == nil && (!ok || fmt.Sprintf("%x", sha256.Sum256(b)) != o.Ref) {
			err = fmt.Errorf("blob %.16s: missing or not what its hash says: %w", o.Ref, store.ErrCorrupt)
		}
		return err
	})
	return b, err
}
