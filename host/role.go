// role.go holds roles: on a store shared by hosts, work only one host may
// do at a time (the Slack dispatcher), held by the host whose claim names
// it for as long as that host's beat lives, taken by another once it lapses.

package host

import (
	"context"
	"fmt"
	"time"

	"github.com/runehost/runehost/store"
)

// roleRecord is role/<name>: the host that holds it.
type roleRecord struct {
	Host string `cbor:"1,keyasint"`
}

func roleKey(name string) store.Key { return store.K("role", name) }

// HoldRole waits until this host holds the role name, and returns a
// context that ends when it loses it (its beat lapsed and another host
// took it) or ctx ends. On a store of its own it holds every role at once.
// A host that stops frees its roles with its claims (its beat ends).
func (e *Engine) HoldRole(ctx context.Context, name string) (context.Context, error) {
	c := e.claims
	if c == nil {
		return ctx, nil
	}
	every := c.dur / 5
	for {
		holder, err := e.takeRole(name)
		if err != nil {
			return nil, err
		}
		if holder == c.host {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(every):
		}
	}
	held, lose := context.WithCancel(ctx)
	go func() {
		defer lose()
		for {
			select {
			case <-held.Done():
				return
			case <-time.After(every):
			}
			var r roleRecord
			err := e.Store.View(func(tx *store.Tx) error { _, err := tx.Get(roleKey(name), &r); return err })
			if (err == nil && r.Host != c.host) || c.valid("role "+name) != nil {
				return // taken by another, or this host's beat is not confirmed: stop before the other starts
			}
		}
	}()
	return held, nil
}

// takeRole makes this host the role's holder if no live host holds it, and
// returns who holds it.
func (e *Engine) takeRole(name string) (string, error) {
	c := e.claims
	if err := c.valid("role " + name); err != nil {
		return "", nil // no beat confirmed: take nothing, look again
	}
	var holder string
	err := e.Store.Retry(store.Synced, func(tx *store.Tx) error {
		tx.NoCheck()
		var r roleRecord
		if _, err := tx.Get(roleKey(name), &r); err != nil {
			return err
		}
		holder = r.Host
		if r.Host == c.host {
			return nil
		}
		if r.Host != "" {
			if live, err := liveTx(tx, r.Host); err != nil || live {
				return err // a live host holds it
			}
		}
		holder = c.host
		return tx.Put(roleKey(name), roleRecord{Host: c.host})
	})
	if err != nil {
		return "", fmt.Errorf("role %s: %w", name, err)
	}
	return holder, nil
}

// RoleHolder is the host that holds the role name on a shared store, or ""
// when none does or the store is this process's alone.
func (e *Engine) RoleHolder(name string) (string, error) {
	var r roleRecord
	err := e.Store.View(func(tx *store.Tx) error { _, err := tx.Get(roleKey(name), &r); return err })
	return r.Host, err
}
