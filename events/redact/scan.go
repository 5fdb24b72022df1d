// scan.go holds the one pass over a text: an Aho-Corasick automaton over
// every trigger (secret words, vendor prefixes, "://", PEM and flag
// markers), ASCII case folded, that calls a trigger's reader where it
// matches; and the edit that replaces what the readers found.

package redact

import (
	"slices"
	"strings"
)

// A kind says which reader a trigger calls.
type kind uint8

const (
	kWord   kind = iota // a component of a name that may mark a secret: assign.go
	kVendor             // a vendor's token prefix: formats.go
	kScheme             // "://": a URL's userinfo
	kPEM                // "-----begin ": a private key block
	kBearer             // "bearer": a bearer token after the word
	kUser               // "-u", "--user", "--proxy-user": curl's credentials
	kCookie             // "-b", "--cookie": curl's cookies
)

type trigger struct {
	text   string // as matched, ASCII case folded
	kind   kind
	format int // kVendor: its index in vendorFormats
}

// triggers lists what the automaton looks for. Words are matched anywhere
// (a name is read around them); the readers check case and boundaries.
var triggers = func() []trigger {
	var ts []trigger
	for _, w := range []string{"secret", "token", "pass", "pwd", "key", "auth", "cred", "sig", "dsn", "cookie", "private", "pat"} {
		ts = append(ts, trigger{w, kWord, 0})
	}
	for i, f := range vendorFormats {
		ts = append(ts, trigger{strings.ToLower(f.prefix), kVendor, i})
	}
	for _, t := range []struct {
		text string
		kind kind
	}{
		{"://", kScheme}, {"-----begin ", kPEM}, {"bearer", kBearer},
		{"-u", kUser}, {"--user", kUser}, {"--proxy-user", kUser}, {"-b", kCookie}, {"--cookie", kCookie},
	} {
		ts = append(ts, trigger{t.text, t.kind, 0})
	}
	return ts
}()

// automaton is a dense DFA over byte classes. A state is the offset of its
// row, state*classes, so that a step is one add and one load:
// next = delta[state+class[b]], with the hit bit set when triggers end in
// next (out[next/classes] lists them).
type automaton struct {
	class   [256]uint8
	classes int
	delta   []uint16   // small enough to stay in the L1 cache
	out     [][]uint16 // per state number: the triggers that end there
	// starts has bit a<<8|b set when a trigger can begin with bytes a, b
	// (in either case): from the root, the scan skips to the next such
	// pair without stepping the automaton.
	starts [1 << 16 / 64]uint64
}

const hit = 1 << 15

var machine = build(triggers)

// build makes the automaton of the triggers (at most 32767 rows' worth).
func build(ts []trigger) *automaton {
	a := &automaton{classes: 1}
	for _, t := range ts {
		for i := 0; i < len(t.text); i++ {
			c := t.text[i]
			if a.class[c] == 0 {
				a.class[c] = uint8(a.classes)
				if 'a' <= c && c <= 'z' {
					a.class[c-'a'+'A'] = uint8(a.classes)
				}
				a.classes++
			}
		}
	}
	// The trie, with goto as a sparse map first.
	type node struct {
		next map[uint8]int
		fail int
		out  []uint16
	}
	nodes := []node{{next: map[uint8]int{}}}
	for id, t := range ts {
		n := 0
		for i := 0; i < len(t.text); i++ {
			c := a.class[t.text[i]]
			nx, ok := nodes[n].next[c]
			if !ok {
				nodes = append(nodes, node{next: map[uint8]int{}})
				nx = len(nodes) - 1
				nodes[n].next[c] = nx
			}
			n = nx
		}
		nodes[n].out = append(nodes[n].out, uint16(id))
	}
	delta := make([]uint16, len(nodes)*a.classes)
	a.out = make([][]uint16, len(nodes))
	// Breadth first, so that a node's fail state is complete before it.
	queue := []int{}
	for c := 1; c < a.classes; c++ {
		if nx, ok := nodes[0].next[uint8(c)]; ok {
			delta[c] = uint16(nx)
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		f := nodes[n].fail
		a.out[n] = append(slices.Clone(nodes[n].out), a.out[f]...)
		for c := 0; c < a.classes; c++ {
			if nx, ok := nodes[n].next[uint8(c)]; ok && c != 0 {
				nodes[nx].fail = int(delta[f*a.classes+c])
				delta[n*a.classes+c] = uint16(nx)
				queue = append(queue, nx)
			} else {
				delta[n*a.classes+c] = delta[f*a.classes+c]
			}
		}
	}
	for _, t := range ts {
		for _, x := range cases(t.text[0]) {
			for _, y := range cases(t.text[1]) {
				k := int(x)<<8 | int(y)
				a.starts[k/64] |= 1 << (k % 64)
			}
		}
	}
	if len(nodes)*a.classes >= hit {
		panic("redact: too many triggers for the automaton")
	}
	a.delta = make([]uint16, len(delta))
	for i, nx := range delta {
		a.delta[i] = uint16(int(nx) * a.classes)
		if a.out[nx] != nil {
			a.delta[i] |= hit
		}
	}
	return a
}

// cases is c and, for a letter, its other case.
func cases(c byte) []byte {
	switch {
	case 'a' <= c && c <= 'z':
		return []byte{c, c - 'a' + 'A'}
	case 'A' <= c && c <= 'Z':
		return []byte{c, c - 'A' + 'a'}
	}
	return []byte{c}
}

// A cut is a part of the text to replace with Mark.
type cut struct{ start, end int }

// scanner is one pass's state: the text and what its readers found.
type scanner struct {
	s    string
	cuts []cut
	// done is where the last name read ended: a name holding two
	// triggers (secret_key) is read once.
	done int
	// reach is the end of the furthest cut: a token, a URL or a curl
	// flag that begins inside a cut is not read, so that a long secret
	// full of prefixes costs one read (each of those readers cuts all of
	// what it finds, from its trigger on). Names, PEM blocks and bearer
	// tokens are read still: a cut that ended too soon (the first word of
	// PRIVATE_KEY=-----BEGIN …, a URL's userinfo) is extended by them.
	reach int
	// pemEnd is where the last PEM block read ends: one inside it is
	// part of it.
	pemEnd int
	// What the readers of formats.go keep, so that a long run of token
	// characters full of prefixes is read once (each is a stretch from
	// from to end where a property holds, or ends): the body runs, by
	// charset; the next digit; the next dot; the end of the header of the
	// last prefix that was no JWT.
	bodies [jwtSet + 1]span
	digit  span
	dot    dotRun
	notJWT int
	run    run // the last run of a value read to its stop (assign.go)
}

// A span is a stretch of the text, from from to end.
type span struct {
	valid     bool
	from, end int
}

// A dotRun is where the first dot at or after from is (-1: none).
type dotRun struct {
	valid    bool
	from, at int
}

// A run is a stretch of the text read up to a stop of its kind.
type run struct {
	kind      string
	from, end int
}

func (sc *scanner) cut(start, end int) {
	if start < end {
		sc.cuts = append(sc.cuts, cut{start, end})
		sc.reach = max(sc.reach, end)
	}
}

// scan finds every secret in s and returns s with each replaced by Mark.
func scan(s string) string {
	a := machine
	sc := scanner{s: s}
	delta, class, starts := a.delta, &a.class, &a.starts
	for i := 0; i+1 < len(s); {
		// At the root: to the next pair of bytes a trigger may begin with
		// (every trigger is two bytes or more).
		for i+1 < len(s) {
			k := int(s[i])<<8 | int(s[i+1])
			if starts[k/64]&(1<<(k%64)) != 0 {
				break
			}
			i++
		}
		// Then step until the automaton is back at the root.
		for st := uint16(0); i < len(s); {
			st = delta[st+uint16(class[s[i]])]
			i++
			if st&hit != 0 {
				st &^= hit
				for _, id := range a.out[int(st)/a.classes] {
					t := &triggers[id]
					sc.found(t, i-len(t.text), i)
				}
			}
			if st == 0 {
				break
			}
		}
	}
	if len(sc.cuts) == 0 {
		return s
	}
	return sc.apply()
}

// found calls the reader of trigger t, matched at s[start:end].
func (sc *scanner) found(t *trigger, start, end int) {
	switch t.kind {
	case kVendor, kScheme, kUser, kCookie:
		if start < sc.reach {
			return
		}
	case kPEM:
		if start < sc.pemEnd {
			return
		}
	}
	switch t.kind {
	case kWord:
		if start >= sc.done {
			sc.assignment(start, end)
		}
	case kVendor:
		sc.vendor(start, t.format)
	case kScheme:
		sc.userinfo(start)
	case kPEM:
		sc.pem(start)
	case kBearer:
		sc.bearer(start, end)
	case kUser:
		sc.curlUser(start, end)
	case kCookie:
		sc.curlCookie(start, end)
	}
}

// apply replaces the cuts, merged where they overlap or touch.
func (sc *scanner) apply() string {
	cuts := sc.cuts
	slices.SortFunc(cuts, func(a, b cut) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(sc.s))
	last := 0
	for i := 0; i < len(cuts); {
		start, end := cuts[i].start, cuts[i].end
		for i++; i < len(cuts) && cuts[i].start <= end; i++ {
			end = max(end, cuts[i].end)
		}
		if start < last { // inside an earlier cut
			start = last
		}
		if start < end {
			b.WriteString(sc.s[last:start])
			b.WriteString(Mark)
			last = end
		}
	}
	b.WriteString(sc.s[last:])
	return b.String()
}
