// claim.go holds claims: when many hosts share one store (store.Shared),
// which host drives each tree, renewed by the host's beat and taken over
// once it lapses, and the fence that keeps every other host from
// committing for a tree it does not hold.

package host

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runehost/runehost/store"
)

// ClaimFor is how long a host's claims last unless its beat is renewed;
// the beat is renewed every fifth of it, and a host whose beat has not
// been confirmed for a third of it drives nothing and commits nothing.
var ClaimFor = 10 * time.Second

// ErrClaimed is a tree another live host drives.
var ErrClaimed = errors.New("driven by another host")

// ClaimError names the host that drives a tree.
type ClaimError struct {
	Root string
	Host string // "" when this host's own beat lapsed
	Why  string
}

func (e *ClaimError) Error() string {
	if e.Host == "" {
		return fmt.Sprintf("tree %s: %s", e.Root, e.Why)
	}
	return fmt.Sprintf("tree %s is driven by host %s", e.Root, e.Host)
}

func (e *ClaimError) Unwrap() error { return ErrClaimed }

// claimRecord is claim/<root>: the host that drives the tree, and how many
// times it changed hands. It changes only when a host takes the tree, so
// that the commits that read it (the fence) are not disturbed by renewals.
type claimRecord struct {
	Host  string `cbor:"1,keyasint"`
	Epoch uint64 `cbor:"2,keyasint"`
}

// beatRecord is beat/<host>: the host's claims last until Until (unix ms).
type beatRecord struct {
	Until int64 `cbor:"1,keyasint"`
}

func claimKey(root string) store.Key { return store.K("claim", root) }
func beatKey(host string) store.Key  { return store.K("beat", host) }

// claims are what this engine holds on a shared store.
type claims struct {
	e    *Engine
	host string
	dur  time.Duration // ClaimFor when the engine opened
	mu   sync.Mutex
	mine map[string]uint64 // root: the epoch of this host's claim
	good time.Time         // when the beat was last confirmed
	stop chan struct{}
	done chan struct{}

	fenced atomic.Int64 // commits the fence refused
}

// startClaims makes e claim the trees it drives and fence its commits; its
// beat is renewed until stopClaims.
func (e *Engine) startClaims() error {
	c := &claims{e: e, host: fmt.Sprintf("h%d", e.Generation), dur: ClaimFor, mine: map[string]uint64{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := c.beat(time.Now(), c.dur); err != nil {
		return err
	}
	e.claims = c
	e.Store.SetCheck(c.fence)
	stopOps, err := e.serveOps(c.host)
	if err != nil {
		return err
	}
	go func() {
		defer close(c.done)
		defer stopOps() // a host that stops, or stops renewing, answers no more
		t := time.NewTicker(c.dur / 5)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.beat(time.Now(), c.dur)
			}
		}
	}()
	return nil
}

// Host is this engine's name among the hosts of a shared store ("" on a
// store of its own).
func (e *Engine) Host() string {
	if e.claims == nil {
		return ""
	}
	return e.claims.host
}

// Fenced is how many commits the claims' fence refused since the engine
// opened: writes of a tree this host no longer held, or made while its
// beat had lapsed (cut off from the store, or paused).
func (e *Engine) Fenced() int64 {
	if e.claims == nil {
		return 0
	}
	return e.claims.fenced.Load()
}

// beat renews the host's claims until now+d.
func (c *claims) beat(now time.Time, d time.Duration) error {
	err := c.e.Store.Update(store.Synced, func(tx *store.Tx) error {
		tx.NoCheck()
		return tx.Put(beatKey(c.host), beatRecord{Until: now.Add(d).UnixMilli()})
	})
	if err == nil {
		c.mu.Lock()
		c.good = now
		c.mu.Unlock()
	}
	return err
}

// valid says whether the beat was confirmed recently enough to act.
func (c *claims) valid(root string) error {
	c.mu.Lock()
	since := time.Since(c.good)
	c.mu.Unlock()
	if since > c.dur/3 {
		return &ClaimError{Root: root, Why: fmt.Sprintf("this host's beat has not been renewed for %s", since.Round(time.Millisecond))}
	}
	return nil
}

// claim makes this host the one that drives root's tree: it is already, or
// the tree is free, or its host's beat lapsed (a takeover: what that host
// left is recovered as a crash's). A tree another live host drives is a
// *ClaimError.
func (c *claims) claim(root string) error {
	if err := c.valid(root); err != nil {
		return err
	}
	c.mu.Lock()
	epoch, held := c.mine[root]
	c.mu.Unlock()
	var took claimRecord
	err := c.e.Store.Retry(store.Synced, func(tx *store.Tx) error {
		tx.NoCheck()
		took = claimRecord{}
		var r claimRecord
		if _, err := tx.Get(claimKey(root), &r); err != nil {
			return err
		}
		if r.Host == c.host && held && r.Epoch == epoch {
			return nil // still this host's: nothing to write
		}
		if r.Host != "" && r.Host != c.host {
			if live, err := liveTx(tx, r.Host); err != nil || live {
				if err == nil {
					err = &ClaimError{Root: root, Host: r.Host}
				}
				return err
			}
		}
		took = claimRecord{Host: c.host, Epoch: r.Epoch + 1}
		return tx.Put(claimKey(root), took)
	})
	if err != nil {
		if errors.Is(err, ErrClaimed) {
			c.forget(root)
		}
		return err
	}
	if took.Host == "" {
		return nil
	}
	c.forget(root) // what this host kept of the tree from an earlier claim is stale
	c.mu.Lock()
	c.mine[root] = took.Epoch
	c.mu.Unlock()
	if err := c.e.recoverTree(root); err != nil {
		c.forget(root) // claimed again, it is recovered again
		return err
	}
	return nil
}

// forget drops what this host keeps of root's tree: its live machines
// (their step counts are stale; the tree's next holder recovers them), its
// events kept in memory, and its claim.
func (c *claims) forget(root string) {
	c.mu.Lock()
	delete(c.mine, root)
	c.mu.Unlock()
	e := c.e
	e.runsMu.Lock()
	for inv := range e.runs {
		if rootOf(inv) == root {
			delete(e.runs, inv)
		}
	}
	e.runsMu.Unlock()
	e.mu.Lock()
	for inv := range e.backlogs { // another host may write its events now: Kept must not answer for them
		if rootOf(inv) == root {
			delete(e.backlogs, inv)
		}
	}
	e.mu.Unlock()
}

// admitted notes a root this host admits: its claim is written with it.
func (c *claims) admitted(tx *store.Tx, root string) error {
	c.mu.Lock()
	c.mine[root] = 1
	c.mu.Unlock()
	return tx.Put(claimKey(root), claimRecord{Host: c.host, Epoch: 1})
}

// release gives up root's claim, for another host to take at once.
func (c *claims) release(root string) error {
	c.mu.Lock()
	epoch, held := c.mine[root]
	delete(c.mine, root)
	c.mu.Unlock()
	if !held {
		return nil
	}
	return c.e.Store.Retry(store.Synced, func(tx *store.Tx) error {
		tx.NoCheck()
		var r claimRecord
		if _, err := tx.Get(claimKey(root), &r); err != nil || r.Host != c.host || r.Epoch != epoch {
			return err
		}
		return tx.Put(claimKey(root), claimRecord{Epoch: epoch}) // free, its epoch kept
	})
}

// stopClaims releases every claim this host holds and ends its beat.
func (e *Engine) stopClaims() error {
	c := e.claims
	if c == nil {
		return nil
	}
	c.mu.Lock()
	roots := make([]string, 0, len(c.mine))
	for r := range c.mine {
		roots = append(roots, r)
	}
	c.mu.Unlock()
	var errs []error
	for _, r := range roots {
		errs = append(errs, c.release(r))
	}
	close(c.stop)
	<-c.done
	errs = append(errs, c.beat(time.Now(), 0)) // gone: its claims are free now
	return errors.Join(errs...)
}

// fence is the store's check on a shared store: a transaction that writes a
// tree's records commits only while this host holds that tree's claim. The
// claim is read in the transaction, so a takeover that commits first makes
// this one conflict, and then fail here.
func (c *claims) fence(tx *store.Tx, written []store.Key) error {
	err := c.check(tx, written)
	var ce *ClaimError
	if errors.As(err, &ce) {
		c.fenced.Add(1)
	}
	return err
}

// check is the fence's test.
func (c *claims) check(tx *store.Tx, written []store.Key) error {
	var roots []string
	for _, k := range written {
		if r := treeOf(k); r != "" && !contains(roots, r) {
			roots = append(roots, r)
		}
	}
	for _, root := range roots {
		if err := c.valid(root); err != nil {
			return err
		}
		var r claimRecord
		if _, err := tx.Get(claimKey(root), &r); err != nil {
			return err
		}
		c.mu.Lock()
		epoch, held := c.mine[root]
		c.mu.Unlock()
		if !held || r.Host != c.host || r.Epoch != epoch {
			return &ClaimError{Root: root, Host: r.Host, Why: "this host does not hold it"}
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// treeOf is the root of the tree whose record key is ("" for the records
// of no tree: progs, sources, blobs, grants, counters, claims).
func treeOf(key store.Key) string {
	p := key.Parts()
	if len(p) < 2 {
		return ""
	}
	switch p[0] {
	case "inv", "kid", "alw", "tok", "cp", "chk", "op", "open", "rcv", "box", "wait", "ev", "evn":
		return rootOf(p[1])
	case "run", "sched":
		return p[1] // already a root ("" for the scheduler of every tree)
	case "due":
		if len(p) == 3 {
			return rootOf(p[2])
		}
	}
	return ""
}

// recoverTree is what a host taking a tree does first: the attempts left
// open become Unresolved, as after a crash (reported through OnRecovered),
// and the steps held are charged as lost (none is kept here). Every open attempt is stale then, this host's own too: its
// acts run within turns, under the tree's lock, which the claim holds, and
// what it kept of the tree was forgotten.
func (e *Engine) recoverTree(root string) error {
	ids, err := e.Tree(root)
	if err != nil {
		return err
	}
	for _, inv := range ids {
		ops, err := e.ledger.recoverUnder(store.K("open", inv), func(*Operation) bool { return true })
		if err != nil {
			return err
		}
		for _, op := range ops {
			if e.OnRecovered != nil {
				e.OnRecovered(op)
			}
		}
		if _, err := e.accounts.Recover(inv); err != nil && !errors.Is(err, ErrNoAllowance) { // whichever entry point turns it next
			return err
		}
	}
	return nil
}

// lockTree takes inv's tree in this process and, on a shared store, its
// claim: a tree another live host drives is a *ClaimError.
func (e *Engine) lockTree(inv string) (unlock func(), err error) {
	unlock = e.holds.lock(inv)
	if e.claims == nil {
		return unlock, nil
	}
	if err := e.claims.claim(rootOf(inv)); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// Drivers lists, of a store shared by hosts, the host each tree's claim
// names, by root ("" for a tree freed), whether or not that host lives:
// for operators and the chaos harness.
func Drivers(s *store.Store) (map[string]string, error) {
	out := map[string]string{}
	err := s.View(func(tx *store.Tx) error {
		clear(out) // a View may run again
		return tx.Scan(store.K("claim"), func(k store.Key, get func(any) error) (bool, error) {
			var r claimRecord
			if err := get(&r); err != nil {
				return false, err
			}
			p := k.Parts()
			out[p[len(p)-1]] = r.Host
			return true, nil
		})
	})
	return out, err
}

// liveTx says, within tx, whether host's beat has not lapsed: its claims
// and roles are its still.
func liveTx(tx *store.Tx, host string) (bool, error) {
	var b beatRecord
	if _, err := tx.Get(beatKey(host), &b); err != nil {
		return false, err
	}
	return b.Until > time.Now().UnixMilli(), nil
}

// holdsClaim says whether this host holds root's claim on a shared store.
func (e *Engine) holdsClaim(root string) bool {
	c := e.claims
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mine[root]
	return ok
}

// claimedElsewhere says whether another live host drives root's tree: the
// scheduler leaves it to that host.
func (e *Engine) claimedElsewhere(root string) bool {
	c := e.claims
	if c == nil {
		return false
	}
	if e.holdsClaim(root) {
		return false
	}
	var live bool
	e.Store.View(func(tx *store.Tx) error {
		live = false
		var r claimRecord
		if _, err := tx.Get(claimKey(root), &r); err != nil || r.Host == "" || r.Host == c.host {
			return err
		}
		var err error
		live, err = liveTx(tx, r.Host)
		return err
	})
	return live
}
