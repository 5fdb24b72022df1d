// ward.go holds the ward: grants, the host's authority for acts, kept apart
// from prog data (never in a checkpoint, a prog's state or an event), and
// checked in the transaction of each attempt, so a revoked grant denies the
// next act on every host.

package host

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// AnyProg is the subject of a grant that holds for every prog.
const AnyProg = "*"

// Grant lets a prog (or every prog) perform an act. Its statement is the act
// tag, alone ("test.record": any target) or with a target the act's adapter
// checks after resolving it ("fs.read:./data").
type Grant struct {
	Subject   string `cbor:"1,keyasint"` // a prog name, or AnyProg
	Statement string `cbor:"2,keyasint"`
	At        int64  `cbor:"3,keyasint"` // unix ms

	// Damage, never stored, is why the grant's record cannot be read (List
	// only): such a grant allows nothing until granted again or revoked.
	Damage string `cbor:"-"`
}

// Tag is the act tag a grant's statement names.
func (g Grant) Tag() string { tag, _, _ := strings.Cut(g.Statement, ":"); return tag }

// Target is the statement's target, "" when the grant holds for any.
func (g Grant) Target() string { _, t, _ := strings.Cut(g.Statement, ":"); return t }

// Errors of the ward.
var (
	ErrDenied       = errors.New("denied")
	ErrBadStatement = errors.New("bad grant statement")
)

// Authorizer is an adapter that checks its act's concrete target against
// the grants for its tag, and names the statement that allows it. An adapter
// that is not one is allowed only by a grant without a target.
type Authorizer interface {
	Authorize(ctx context.Context, op *Operation, grants []Grant) (statement string, err error)
}

// Suggester is an adapter that can name the grant statement that would
// allow an act it was asked for ("" when it cannot), so that a denial says
// what to grant as a command that works as printed.
type Suggester interface {
	Suggest(op *Operation) string
}

// suggest is the command that grants prog what op asks for, in brackets,
// or "": an adapter that checks targets and cannot name one says nothing.
func suggest(prog string, op *Operation, adapter Adapter) string {
	st := op.Tag
	_, checks := adapter.(GrantChecker)
	_, authorizes := adapter.(Authorizer)
	if s, ok := adapter.(Suggester); ok {
		st = s.Suggest(op)
	} else if checks || authorizes {
		st = "" // its grants have targets, and it cannot say which
	}
	for _, g := range op.Grants {
		if g.Statement == st {
			return "" // granted already: the grant is not what is missing
		}
	}
	if st == "" {
		return ""
	}
	return fmt.Sprintf(" (runehost grant --prog %s %s)", ShellWord(prog), ShellWord(st))
}

// ShellWord quotes s for a POSIX shell when it needs it: the commands the
// host suggests work as printed.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// GrantChecker is an adapter that checks and normalizes the target of a
// grant statement for its tag when it is granted (a relative path made
// absolute, say), so that the statement recorded on attempts is exact.
type GrantChecker interface {
	CheckGrant(tag, target string) (string, error)
}

// Ward keeps grants in a store, and what it read of them: every grant and
// revoke, through any ward on any host, writes a new stamp, and an act's
// attempt reads the stamp in its own transaction (checkGrantsTx). A stamp
// other than the one its grants were read at sends the act back to read
// them again; a grant revoked before that read never allows the act.
// So in steady state an act reads one record for its grants, not a scan.
type Ward struct {
	s     *store.Store
	clock func() int64

	mu      sync.Mutex
	version uint64             // what this ward dropped: a read begun before a drop is not kept
	cached  map[string][]Grant // by subject, as of stamp
	stamp   uint64
}

// NewWard returns the ward of a store.
func NewWard(s *store.Store, clock func() int64) *Ward { return &Ward{s: s, clock: clock} }

// changed drops what the ward keeps: a grant was made or revoked (or the
// attempt failed, which leaves it unknown), or an act found the stamp moved.
func (w *Ward) changed() {
	w.mu.Lock()
	w.version++
	w.cached = nil
	w.mu.Unlock()
}

// stampKey holds the grants' stamp: a random number each grant and revoke
// replaces (random, not counted: one rewritten over damage cannot come back
// to a value a ward still keeps).
var stampKey = store.K("grantv")

type grantStamp struct {
	N uint64 `cbor:"1,keyasint"`
}

// damagedStamp stands for a stamp that cannot be read: the next grant or
// revoke writes a good one over it, which every ward then sees as a change.
const damagedStamp = ^uint64(0)

func readStampTx(tx *store.Tx) (uint64, error) { return stampFrom(tx.Get) }

// peekStampTx is the stamp as it stands, read by tx but not checked by its
// commit (store.Tx.Peek): every act reads it, and on JetStream R3 a check
// of one subject by many batches in flight makes all but one conflict.
func peekStampTx(tx *store.Tx) (uint64, error) { return stampFrom(tx.Peek) }

// stampFrom reads the stamp with get (Get or Peek).
func stampFrom(get func(store.Key, any) (bool, error)) (uint64, error) {
	var st grantStamp
	_, err := get(stampKey, &st)
	if errors.Is(err, store.ErrCorrupt) {
		return damagedStamp, nil
	}
	return st.N, err
}

func newStampTx(tx *store.Tx) error {
	n := rand.Uint64()
	for n == 0 || n == damagedStamp {
		n = rand.Uint64()
	}
	return tx.Put(stampKey, grantStamp{N: n})
}

// errGrantsChanged is an attempt whose grants were read before a grant or
// revoke: they are read again and the act decided again.
var errGrantsChanged = errors.New("the grants changed since the act's were read")

// maxRegrants bounds how many times in a row one act reads its grants
// again: more is grants changed without pause, reported as it is.
const maxRegrants = 8

// checkGrantsTx fails with errGrantsChanged unless the grants' stamp is
// still stamp, read from the store as it stands, in the act's transaction
// just before it commits: a grant or revoke committed before that read is
// seen. One committed between the read and the act's commit (a commit's
// time) is not: that act counts as begun before it, as one in flight does.
func checkGrantsTx(tx *store.Tx, stamp uint64) error {
	now, err := peekStampTx(tx)
	if err == nil && now != stamp {
		err = errGrantsChanged
	}
	return err
}

func grantKey(subject, statement string) store.Key { return store.K("grant", subject, statement) }

// checkStatement refuses statements that cannot be grants.
func checkStatement(subject, statement string) error {
	tag, _, _ := strings.Cut(statement, ":")
	switch {
	case subject == "" || strings.ContainsRune(subject, 0):
		return fmt.Errorf("%w: the prog is empty or has a zero byte", ErrBadStatement)
	case tag == "" || strings.ContainsAny(tag, " \t\r\n\x00") || strings.ContainsAny(statement, "\r\n\x00"):
		return fmt.Errorf("%w: %q: want TAG or TAG:TARGET", ErrBadStatement, statement)
	case tag == SpawnTag && !strings.Contains(statement, ":"):
		return fmt.Errorf("%w: %q: spawning its own prog needs no grant; spawning another needs spawn:NAME", ErrBadStatement, statement)
	case tag == "tool.env" && hostOwnVariable(statement[len(tag)+1:]):
		return fmt.Errorf("%w: %q: the host's own configuration is never given to a tool", ErrBadStatement, statement)
	}
	return nil
}

// hostOwnVariable reports whether an environment variable is the host's own
// configuration, secrets included, for refusing a tool.env statement at
// grant; the sandbox applies the same rule at every run (tool.HostOwn).
func hostOwnVariable(name string) bool {
	return strings.HasPrefix(name, "RUNEHOST_") || strings.HasPrefix(name, "SLACK_")
}

// Grant records a grant (synced). Granting it again changes nothing.
func (w *Ward) Grant(subject, statement string) (*Grant, error) {
	if err := checkStatement(subject, statement); err != nil {
		return nil, err
	}
	g := &Grant{Subject: subject, Statement: statement, At: w.clock()}
	defer w.changed()
	err := w.s.Retry(store.Synced, func(tx *store.Tx) error {
		var old Grant
		found, err := tx.Get(grantKey(subject, statement), &old)
		if found {
			*g = old
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			return err
		}
		if err := tx.Put(grantKey(subject, statement), g); err != nil { // new, or over an unreadable record of it
			return err
		}
		return newStampTx(tx)
	})
	return g, err
}

// Revoke removes a grant (synced) and reports whether there was one; an
// unreadable record of it is removed too. It may use the disk reserve:
// taking authority back is never refused for space.
func (w *Ward) Revoke(subject, statement string) (bool, error) {
	var found bool
	defer w.changed()
	err := w.s.RetryInReserve(store.Synced, func(tx *store.Tx) error {
		var g Grant
		var err error
		found, err = tx.Get(grantKey(subject, statement), &g)
		if errors.Is(err, store.ErrCorrupt) {
			found, err = true, nil
		}
		if err != nil || !found {
			return err
		}
		if err := tx.Delete(grantKey(subject, statement)); err != nil {
			return err
		}
		return newStampTx(tx)
	})
	return found, err
}

// List returns the grants of a subject, or of all when subject is "". A
// grant whose record cannot be read is listed with its subject and
// statement (from its key) and its Damage.
func (w *Ward) List(subject string) ([]Grant, error) {
	var out []Grant
	err := w.s.View(func(tx *store.Tx) error {
		var err error
		out, err = listTx(tx, subject)
		return err
	})
	return out, err
}

func listTx(tx *store.Tx, subject string) ([]Grant, error) {
	prefix := store.K("grant")
	if subject != "" {
		prefix = store.K("grant", subject)
	}
	var out []Grant
	err := tx.Scan(prefix, func(k store.Key, decode func(any) error) (bool, error) {
		var g Grant
		if err := decode(&g); err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				return false, err
			}
			g = Grant{Damage: err.Error()}
			if parts := k.Parts(); len(parts) == 3 {
				g.Subject, g.Statement = parts[1], parts[2]
			}
		}
		out = append(out, g)
		return true, nil
	})
	return out, err
}

// For returns the grants that can allow prog's act tag: its own, those of
// its scope (SCOPE/* for a prog named SCOPE/NAME, as Slack runs are: the
// channel's) and those for every prog.
func (w *Ward) For(prog, tag string) ([]Grant, error) {
	gs, _, err := w.forStamped(prog, tag)
	return gs, err
}

// forStamped is For with the stamp the grants were read at.
func (w *Ward) forStamped(prog, tag string) ([]Grant, uint64, error) {
	subjects := []string{prog, AnyProg}
	if scope, _, ok := strings.Cut(prog, "/"); ok {
		subjects = append(subjects, scope+"/*") // a Slack channel's grants: C123/* for every prog run there
	}
	lists, stamp, err := w.subjects(subjects)
	if err != nil {
		return nil, 0, err
	}
	var out []Grant
	for _, gs := range lists {
		for _, g := range gs {
			if g.Tag() == tag && g.Damage == "" { // an unreadable grant allows nothing
				out = append(out, g)
			}
		}
	}
	return out, stamp, nil
}

// subjects returns the grants of each subject and the stamp they are as
// of, read in one transaction, or kept from an earlier read (an act checks
// the stamp when it is attempted).
func (w *Ward) subjects(subjects []string) ([][]Grant, uint64, error) {
	out := make([][]Grant, len(subjects))
	w.mu.Lock()
	version, stamp, missing := w.version, w.stamp, false
	for i, subject := range subjects {
		gs, ok := w.cached[subject]
		out[i], missing = gs, missing || !ok
	}
	w.mu.Unlock()
	if !missing {
		return out, stamp, nil
	}
	err := w.s.View(func(tx *store.Tx) error {
		var err error
		if stamp, err = readStampTx(tx); err != nil {
			return err
		}
		for i, subject := range subjects {
			gs, err := listTx(tx, subject)
			if err != nil {
				return err
			}
			out[i] = gs
		}
		return nil
	})
	if err != nil {
		return out, 0, err
	}
	w.mu.Lock()
	if w.version == version { // nothing dropped while it read
		if w.cached == nil || w.stamp != stamp {
			w.cached, w.stamp = map[string][]Grant{}, stamp
		}
		for i, subject := range subjects {
			w.cached[subject] = slices.Clip(out[i])
		}
	}
	w.mu.Unlock()
	return out, stamp, nil
}

// Missing returns the tags (of a prog's static act tags) that no grant
// covers: the preflight report before a prog runs.
func (w *Ward) Missing(prog string, tags []string) ([]string, error) {
	var out []string
	for _, tag := range tags {
		if tag == SpawnTag || slices.Contains(out, tag) {
			continue
		}
		gs, err := w.For(prog, tag)
		if err != nil {
			return nil, err
		}
		if len(gs) == 0 {
			out = append(out, tag)
		}
	}
	return out, nil
}

// authorize decides, at the moment of an attempt, which grant statement
// allows an act, or why none does, and says the stamp of the grants it
// decided on, for the attempt to check (checkGrantsTx).
func (w *Ward) authorize(ctx context.Context, prog string, op *Operation, adapter Adapter) (string, uint64, error) {
	if op.Tag == SpawnTag {
		return SpawnTag, 0, nil // its grant is the spawned prog's, checked at the spawn
	}
	gs, stamp, err := w.forStamped(prog, op.Tag)
	if err != nil {
		return "", 0, err
	}
	st, err := w.decide(ctx, prog, op, adapter, gs)
	return st, stamp, err
}

// decide is authorize's choice among gs, the grants for op's tag.
func (w *Ward) decide(ctx context.Context, prog string, op *Operation, adapter Adapter, gs []Grant) (string, error) {
	op.Grants = gs
	if len(gs) == 0 {
		return "", fmt.Errorf("%w: no grant for act %s%s", ErrDenied, op.Tag, suggest(prog, op, adapter))
	}
	if adapter == nil {
		return "", fmt.Errorf("%w: act %s is granted but this host has no adapter for it", ErrDenied, op.Tag)
	}
	if a, ok := adapter.(Authorizer); ok {
		st, err := a.Authorize(ctx, op, gs)
		if err != nil && !errors.Is(err, ErrDenied) {
			var ce *checkpoint.Error
			hint := ""
			if !errors.As(err, &ce) { // not the act's own fault (bad arguments, say)
				hint = suggest(prog, op, adapter)
			}
			err = fmt.Errorf("%w: %w%s", ErrDenied, err, hint) // a *checkpoint.Error stays findable
		}
		return st, err
	}
	for _, g := range gs {
		if g.Target() == "" {
			return g.Statement, nil
		}
	}
	return "", fmt.Errorf("%w: act %s is granted only for targets, which its adapter cannot check", ErrDenied, op.Tag)
}
