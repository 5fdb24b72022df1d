// grants.go holds the engine's grant commands: grant and revoke, the
// grants an invocation's prog has, and the hint for a missing one.

package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Grant records a grant, its target first checked and normalized by the
// adapter of its tag when that adapter is a GrantChecker.
func (e *Engine) Grant(subject, statement string) (*Grant, error) {
	tag, target, _ := strings.Cut(statement, ":")
	if err := checkStatement(subject, statement); err != nil {
		return nil, err
	}
	if e.StatementTags != nil && e.Adapters[tag] == nil && !e.StatementTags[tag] {
		return nil, fmt.Errorf("%w: %q: no act is called %s%s", ErrBadStatement, statement, tag, e.didYouMean(tag))
	}
	if gc, isGC := e.Adapters[tag].(GrantChecker); isGC {
		t, err := gc.CheckGrant(tag, target)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrBadStatement, statement, err)
		}
		statement = tag + ":" + t
	}
	return e.ward.Grant(subject, statement)
}

// GrantHint says how to grant prog the act tag before any act is asked
// for: the command, when a grant of the tag needs no target; otherwise what
// a target is (the denial of an act then names the exact one).
func (e *Engine) GrantHint(prog, tag string) string {
	if e.Adapters[tag] == nil {
		return "no act is called " + tag + " on this host" + e.didYouMean(tag)
	}
	gc, ok := e.Adapters[tag].(GrantChecker)
	if !ok {
		return fmt.Sprintf("runehost grant --prog %s %s", ShellWord(prog), ShellWord(tag))
	}
	if _, err := gc.CheckGrant(tag, ""); err != nil {
		if strings.HasPrefix(err.Error(), "want ") {
			return "its grant names a target: " + err.Error()
		}
		return "it cannot be granted here: " + err.Error()
	}
	return ""
}

// didYouMean names the act tag or statement tag nearest to tag, or "".
func (e *Engine) didYouMean(tag string) string {
	known := slices.Sorted(maps.Keys(e.StatementTags))
	for t := range e.Adapters {
		known = append(known, t)
	}
	if near := nearest(tag, known); near != "" {
		return fmt.Sprintf(" (did you mean %s?)", near)
	}
	return ""
}

// nearest returns the one of names closest to s, within two edits, or "".
func nearest(s string, names []string) string {
	slices.Sort(names)
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Revoke removes a grant, named as stored or as it was given to Grant.
func (e *Engine) Revoke(subject, statement string) (bool, error) {
	ok, err := e.ward.Revoke(subject, statement)
	if ok || err != nil {
		return ok, err
	}
	tag, target, _ := strings.Cut(statement, ":")
	if gc, isGC := e.Adapters[tag].(GrantChecker); isGC {
		if t, cerr := gc.CheckGrant(tag, target); cerr == nil && tag+":"+t != statement {
			return e.ward.Revoke(subject, tag+":"+t)
		}
	}
	return false, nil
}

// GrantsFor returns the grants of an invocation's prog for a tag, as the
// ward holds them (an act's attempt checked them: Ward).
func (e *Engine) GrantsFor(inv, tag string) ([]Grant, error) {
	i, err := e.invs.get(inv)
	if err != nil {
		return nil, err
	}
	return e.ward.For(i.Prog, tag)
}
