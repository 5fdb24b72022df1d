// property_test.go: over seeded random text, a planted secret of any covered
// family, in any syntax and place, never survives String (nor any 8-byte
// piece of it), nor events.Clean with a cap anywhere, inside the secret too,
// nor String of a JSON string holding it; and text made only of shapes that
// are not secrets comes out of String exactly as it went in.

package redact_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/events/redact"
)

var (
	seedFlag  = flag.Int64("redact.seed", 0, "seed of the property tests and the corpus (0: $REDACT_SEED, else a fixed one)")
	itersFlag = flag.Int("redact.iters", 2000, "cases per property test")
)

// A fixed default: a failure seen once is seen on every run.
const defaultSeed = 20260102

func propSeed(t testing.TB) int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("REDACT_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("REDACT_SEED=%q: %v", s, err)
		}
		return n
	}
	return defaultSeed
}

// Streams of the seed, one per test, so that each replays on its own.
const (
	leakStream  = 1 << 40
	cleanStream = 2 << 40
)

// failures counts cases per key (a family and syntax, or a kind of line,
// and a way in) and keeps the first failing case of each of a few shapes.
type failures struct {
	cases, failed map[string]int
	first         map[string][]string
	shapes        map[string]bool // key and shape of each kept example
}

func newFailures() *failures {
	return &failures{cases: map[string]int{}, failed: map[string]int{}, first: map[string][]string{}, shapes: map[string]bool{}}
}

// Examples kept per key, of distinct shapes.
const examplesPerKey = 5

// add counts a case. A failure of a shape not yet seen under key (shape ""
// for one example only) calls example to say what failed.
func (f *failures) add(key string, ok bool, shape string, example func() string) {
	f.cases[key]++
	if ok {
		return
	}
	f.failed[key]++
	if n := len(f.first[key]); n < examplesPerKey && (n == 0 || shape != "") && !f.shapes[key+"\x00"+shape] {
		f.shapes[key+"\x00"+shape] = true
		f.first[key] = append(f.first[key], example())
	}
}

func (f *failures) report(t *testing.T, what string, seed int64) {
	t.Logf("%d keys, %d cases (seed %d)", len(f.cases), sum(f.cases), seed)
	if len(f.failed) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (seed %d; -redact.seed or REDACT_SEED to change); first failures:", what, seed)
	// The first failure of each key, then the tally: last, where a tail
	// of the output shows it.
	keys := slices.Sorted(maps.Keys(f.failed))
	for _, k := range keys {
		for _, e := range f.first[k] {
			fmt.Fprintf(&b, "\n\n%s: %s", k, e)
		}
	}
	fmt.Fprintf(&b, "\n\n%s in %d of %d keys:", what, len(f.failed), len(f.cases))
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-48s %4d of %4d", k, f.failed[k], f.cases[k])
	}
	t.Error(b.String())
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// A leakCase is a planted line among clean ones, with where a cap falls
// and how a JSON log would carry it.
type leakCase struct {
	p             plant
	line          string // the plant as a log wrote it
	at            int    // the secret's byte offset in line
	before, after []string
	capDelta      int  // events.Clean's cap, in characters from the secret's start
	capOff        bool // no cap
	wrap          int  // the JSON around the text
}

func newLeakCase(seed int64, i int) leakCase {
	g := newGen(seed, leakStream+uint64(i))
	c := leakCase{p: g.plant()}
	c.line, c.at = g.situate(c.p)
	for range g.n(0, 2) {
		u, _ := g.clean()
		c.before = append(c.before, u)
	}
	for range g.n(0, 2) {
		u, _ := g.clean()
		c.after = append(c.after, u)
	}
	n := len(c.p.secret)
	switch k := g.r.IntN(10); {
	case k < 5:
		c.capDelta = 1 + g.r.IntN(n-1) // inside the secret
	case k < 7:
		c.capDelta = -g.r.IntN(20) // at its start or before
	case k < 9:
		c.capDelta = n + g.r.IntN(40) // after it
	default:
		c.capOff = true
	}
	c.wrap = g.r.IntN(3)
	return c
}

// text is the case's text with nb clean units before the planted line and
// na after it (at most as many as there are), and the secret's offset in it.
func (c leakCase) text(nb, na int) (string, int) {
	var pre, post string
	if nb = min(nb, len(c.before)); nb > 0 {
		pre = strings.Join(c.before[len(c.before)-nb:], "\n") + "\n"
	}
	if na = min(na, len(c.after)); na > 0 {
		post = "\n" + strings.Join(c.after[:na], "\n")
	}
	return pre + c.line + post, len(pre) + c.at
}

// The neighbours to try, smallest first, when a case fails: the planted
// line alone, then with the unit before or after it (a rule can take its
// value from the next line), then all of it.
var shrinks = [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {1 << 30, 1 << 30}}

// jsonString is s as a JSON string literal, as a log that holds a tool's
// output writes it.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wrapJSON puts text in a JSON string, in one of the envelopes a log of
// tool output uses: newlines become \n, quotes \".
func wrapJSON(k int, text string) string {
	js := jsonString(text)
	switch k {
	case 1:
		return `{"level":"info","msg":"tool output","output":` + js + `}`
	case 2:
		return `{"type":"tool_result","content":[{"type":"text","text":` + js + `}]}`
	}
	return js
}

// The ways a planted text reaches the redactor: input, a note on how, output.
var leakModes = []struct {
	name string
	run  func(c leakCase, nb, na int) (in, note, out string)
}{
	{"String", func(c leakCase, nb, na int) (string, string, string) {
		text, _ := c.text(nb, na)
		return text, "", redact.String(text)
	}},
	{"Clean+cap", func(c leakCase, nb, na int) (string, string, string) {
		text, at := c.text(nb, na)
		if c.capOff {
			return text, "events.Clean, no cap", events.Clean(nil, text, 0)
		}
		n := max(1, utf8.RuneCountInString(text[:at])+c.capDelta)
		return text, fmt.Sprintf("events.Clean cap %d (%+d from the secret's start)", n, c.capDelta), events.Clean(nil, text, n)
	}},
	{"in JSON", func(c leakCase, nb, na int) (string, string, string) {
		text, _ := c.text(nb, na)
		in := wrapJSON(c.wrap, text)
		return in, "", redact.String(in)
	}},
}

func TestPropertySecretsRedacted(t *testing.T) {
	seed := propSeed(t)
	f := newFailures()
	for i := range *itersFlag {
		c := newLeakCase(seed, i)
		for _, m := range leakModes {
			in, note, out := m.run(c, len(c.before), len(c.after))
			kept := survivor(out, c.p.secret, c.p.fixed)
			f.add(c.p.key()+" via "+m.name, kept == "", "", func() string {
				for _, sh := range shrinks {
					if in1, note1, out1 := m.run(c, sh[0], sh[1]); survivor(out1, c.p.secret, c.p.fixed) != "" {
						in, note, out, kept = in1, note1, out1, survivor(out1, c.p.secret, c.p.fixed)
						break
					}
				}
				s := fmt.Sprintf("case %d\n    input:  %q\n    secret: %q\n    kept:   %q\n    output: %q", i, in, c.p.secret, kept, out)
				if note != "" {
					s += "\n    " + note
				}
				return s
			})
		}
	}
	f.report(t, "secrets survived", seed)
}

func TestPropertyCleanUntouched(t *testing.T) {
	seed := propSeed(t)
	f := newFailures()
	for i := range *itersFlag {
		g := newGen(seed, cleanStream+uint64(i))
		var units []string
		var kinds []int
		for range g.n(1, 4) {
			u, k := g.clean()
			units, kinds = append(units, u), append(kinds, k)
		}
		wrap := g.r.IntN(3)
		for _, mode := range []string{"String", "in JSON"} {
			as := func(s string) string {
				if mode == "in JSON" {
					return wrapJSON(wrap, s)
				}
				return s
			}
			in := as(strings.Join(units, "\n"))
			whole := redact.String(in)
			blamed := false
			for j, u := range units {
				key := cleanKinds[kinds[j]].name + " via " + mode
				if whole == in {
					f.add(key, true, "", nil)
					continue
				}
				// Blame the units that change alone, showing the one line
				// of the unit that does, if there is one.
				ui := as(u)
				uo := redact.String(ui)
				f.add(key, uo == ui, shape(ui, uo), func() string {
					for _, l := range strings.Split(u, "\n") {
						if li, lo := as(l), redact.String(as(l)); lo != li {
							ui, uo = li, lo
							break
						}
					}
					return fmt.Sprintf("case %d\n    input:   %q\n    output:  %q\n    changed: %s", i, ui, uo, changed(ui, uo))
				})
				blamed = blamed || uo != ui
			}
			if whole != in && !blamed {
				f.add("(lines together) via "+mode, false, "", func() string {
					// Two neighbours are the usual culprits: a value
					// taken from the next line.
					for j := 1; j < len(units); j++ {
						if pi := as(units[j-1] + "\n" + units[j]); redact.String(pi) != pi {
							in, whole = pi, redact.String(pi)
							break
						}
					}
					return fmt.Sprintf("case %d\n    input:   %q\n    output:  %q\n    changed: %s", i, in, whole, changed(in, whole))
				})
			}
		}
	}
	f.report(t, "clean text changed", seed)
}

// shape is the name before what changed and its old text, digits masked:
// key=user:42 and key=user:7 are one shape, max_tokens: 4096 another.
func shape(in, out string) string {
	p := 0
	for p < len(in) && p < len(out) && in[p] == out[p] {
		p++
	}
	q := p
	for q > 0 && strings.IndexByte(`"': =\`, in[q-1]) >= 0 {
		q--
	}
	n := q
	for n > 0 && (wordByte(in[n-1]) || in[n-1] == '_' || in[n-1] == '-') {
		n--
	}
	old := in[p:min(len(in), p+12)]
	if e := strings.IndexAny(old, "\"'\\ ,}]"); e >= 0 {
		old = old[:e]
	}
	var b strings.Builder
	for i := 0; i < len(old); i++ {
		if c := old[i]; '0' <= c && c <= '9' {
			if i == 0 || old[i-1] < '0' || old[i-1] > '9' {
				b.WriteByte('#')
			}
		} else {
			b.WriteByte(c)
		}
	}
	return in[n:q] + "|" + b.String()
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// changed shows where out differs from in, with a little context.
func changed(in, out string) string {
	p := 0
	for p < len(in) && p < len(out) && in[p] == out[p] {
		p++
	}
	s := 0
	for s < len(in)-p && s < len(out)-p && in[len(in)-1-s] == out[len(out)-1-s] {
		s++
	}
	from, to := max(0, p-24), min(len(in), len(in)-s+24)
	return fmt.Sprintf("%q [%q -> %q] %q", in[from:p], in[p:len(in)-s], out[p:len(out)-s], in[len(in)-s:to])
}
