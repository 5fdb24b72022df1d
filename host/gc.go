// gc.go holds the retention of finished invocations: GC deletes the trees of
// roots that ended before a cutoff, then the blobs and sources nothing left
// names.

package host

import (
	"errors"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// GCReport counts what GC deleted (or, dry, would delete).
type GCReport struct {
	Invocations int // including children
	Records     int // all records of those invocations
	Blobs       int
	Sources     int
	// Damaged lists the records GC could not read, each with why: an
	// unreadable invocation is kept (its age is unknown), and while any
	// operation, prog or checkpoint is unreadable no blob or source is
	// swept (one of them might name it).
	Damaged []string
}

// gcChunk bounds the deletes of one transaction.
const gcChunk = 1000

// GC deletes every tree whose root is terminal and ended before before
// (unix ms), all of its records with it. Invocations that have not ended,
// and their trees, are never touched. A tree is deleted children first and
// root last, so an interrupted GC leaves a root that the next one finishes.
func (e *Engine) GC(before int64, dryRun bool) (GCReport, error) {
	var rep GCReport
	if !dryRun {
		// Deletions free space and may use the reserve, but not past its
		// floor: on a disk that full, gc refuses before deleting any.
		if err := e.Store.Room(true); err != nil {
			return rep, fmt.Errorf("gc: nothing deleted: %w", err)
		}
	}
	var roots []string
	err := e.Store.View(func(tx *store.Tx) error {
		rep, roots = GCReport{}, nil // a View may run again
		return tx.Scan(store.K("inv"), func(_ store.Key, decode func(any) error) (bool, error) {
			var i Invocation
			if err := decode(&i); errors.Is(err, store.ErrCorrupt) {
				rep.Damaged = append(rep.Damaged, err.Error())
				return true, nil
			} else if err != nil {
				return false, err
			}
			ended := i.Ended
			if ended == 0 {
				ended = i.Admitted
			}
			if i.Parent == "" && i.Status.Terminal() && ended < before {
				roots = append(roots, i.ID)
			}
			return true, nil
		})
	})
	if err != nil {
		return rep, err
	}
	doomed := map[string]bool{}
	for _, root := range roots {
		var tree []string
		err := e.Store.View(func(tx *store.Tx) error {
			tree = nil // a View may run again
			return tx.Scan(append(store.K("inv"), root+"."...), func(k store.Key, _ func(any) error) (bool, error) {
				parts := k.Parts()
				tree = append(tree, parts[len(parts)-1])
				return true, nil
			})
		})
		if err != nil {
			return rep, err
		}
		for _, id := range append(tree, root) {
			doomed[id] = true
			n, err := e.deleteInvocation(id, dryRun)
			if err != nil {
				return rep, fmt.Errorf("gc %s: %w", id, err)
			}
			rep.Invocations++
			rep.Records += n
		}
	}
	b, s, damage, err := e.sweep(dryRun, doomed)
	rep.Blobs, rep.Sources = b, s
	rep.Damaged = append(rep.Damaged, damage...)
	return rep, err
}

// deleteInvocation deletes an invocation's records, the invocation last.
func (e *Engine) deleteInvocation(id string, dryRun bool) (int, error) {
	var keys []store.Key
	err := e.Store.View(func(tx *store.Tx) error {
		keys = nil // a View may run again
		for _, kind := range []string{"op", "open", "ev", "rcv", "kid"} {
			err := tx.Scan(store.K(kind, id), func(k store.Key, _ func(any) error) (bool, error) {
				keys = append(keys, k)
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		cks, err := deleteCheckpointKeys(tx, id) // the manifest, then its chunks
		if err != nil {
			return err
		}
		keys = append(keys, cks...)
		for _, k := range []store.Key{allowanceKey(id), tokenKey(id), store.K("evn", id), store.K("box", id), waitKey(id), runKey(id), claimKey(id), invKey(id)} {
			if _, ok, err := tx.GetRaw(k); errors.Is(err, store.ErrCorrupt) || ok {
				keys = append(keys, k) // unreadable, it goes with the rest
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || dryRun {
		return len(keys), err
	}
	return len(keys), e.deleteKeys(keys)
}

// deleteKeys deletes keys in order, gcChunk to a transaction.
func (e *Engine) deleteKeys(keys []store.Key) error {
	for len(keys) > 0 {
		n := min(len(keys), gcChunk)
		err := e.Store.UpdateInReserve(store.Buffered, func(tx *store.Tx) error { // deleting frees space
			tx.NoCheck() // an ended tree's records: no host drives it
			for _, k := range keys[:n] {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// sweep deletes the blobs no outcome names and the sources no prog or
// stored checkpoint names, counting those of doomed invocations as gone.
// An unreadable operation keeps every blob, an unreadable prog or
// checkpoint every source.
func (e *Engine) sweep(dryRun bool, doomed map[string]bool) (blobs, sources int, damage []string, err error) {
	usedBlobs, usedSrc := map[string]bool{}, map[string]bool{}
	keep := map[string]bool{}
	unreadable := func(kind string, err error) bool {
		if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, checkpoint.ErrMalformed) {
			return false
		}
		damage = append(damage, err.Error())
		keep[kind] = true
		return true
	}
	var dead []store.Key
	err = e.Store.View(func(tx *store.Tx) error {
		// A View may run again: start over (the used sets only grow, which
		// keeps more, never less).
		dead, blobs, sources, damage = nil, 0, 0, damage[:0:0]
		err := tx.Scan(store.K("op"), func(k store.Key, decode func(any) error) (bool, error) {
			var op Operation
			if err := decode(&op); unreadable("blob", err) {
				return true, nil
			} else if err != nil {
				return false, err
			}
			if op.Outcome != nil && op.Outcome.Ref != "" && !doomed[op.Invocation] {
				usedBlobs[op.Outcome.Ref] = true
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		err = tx.Scan(store.K("prog"), func(_ store.Key, decode func(any) error) (bool, error) {
			var p Prog
			if err := decode(&p); unreadable("src", err) {
				return true, nil
			} else if err != nil {
				return false, err
			}
			usedSrc[p.Source] = true
			return true, nil
		})
		if err != nil {
			return err
		}
		var cps []store.Key
		err = tx.Scan(store.K("cp"), func(k store.Key, _ func(any) error) (bool, error) {
			if parts := k.Parts(); !doomed[parts[len(parts)-1]] {
				cps = append(cps, k)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, k := range cps {
			parts := k.Parts()
			b, _, err := getCheckpoint(tx, parts[len(parts)-1])
			if unreadable("src", err) {
				continue
			} else if err != nil {
				return err
			}
			h, err := checkpoint.DecodeHeader(b)
			if err != nil {
				unreadable("src", fmt.Errorf("record %s: %w: %v", k, store.ErrCorrupt, err))
				continue
			}
			usedSrc[fmt.Sprintf("%x", h.Program)] = true
		}
		for kind, used := range map[string]map[string]bool{"blob": usedBlobs, "src": usedSrc} {
			if keep[kind] {
				continue
			}
			err := tx.Scan(store.K(kind), func(k store.Key, _ func(any) error) (bool, error) {
				parts := k.Parts()
				if !used[parts[len(parts)-1]] {
					dead = append(dead, k)
					if kind == "blob" {
						blobs++
					} else {
						sources++
					}
				}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || dryRun {
		return blobs, sources, damage, err
	}
	return blobs, sources, damage, e.deleteKeys(dead)
}
