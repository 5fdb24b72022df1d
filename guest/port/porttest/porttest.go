// Package porttest holds what the tests of every RuntimePort share: the
// expectation comments of the golden progs in testdata/progs and helpers
// to run them.
package porttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
)

// Unsliced is a slice large enough for any testdata prog to run in one step.
const Unsliced = 1 << 40

// SliceSizes are the slice sizes of the slicing property.
var SliceSizes = []uint64{1, 2, 3, 7, 64, 1000}

// script is what a golden prog's comments expect.
type Script struct {
	Input, State []byte
	Limit, Seed  uint64
	Clock        int64
	Suspends     []Suspend // in order
	Emits        []string  // "kind json"
	Want         string    // canonical JSON of the result
	WantErr      string    // "L:C: kind: msg"
	CompileErr   string    // "L:C: msg"
}

type Suspend struct {
	Act   bool
	Tag   string
	Args  string // canonical JSON
	Reply []byte // encoded reply
}

func CanonJSON(t testing.TB, text string) string {
	t.Helper()
	d, err := checkpoint.DataFromJSON([]byte(text))
	if err != nil {
		t.Fatalf("bad JSON %q: %v", text, err)
	}
	b, err := checkpoint.DataToJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func EncodeJSON(t testing.TB, text string) []byte {
	t.Helper()
	d, err := checkpoint.DataFromJSON([]byte(text))
	if err != nil {
		t.Fatalf("bad JSON %q: %v", text, err)
	}
	b, err := checkpoint.EncodeData(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ParseReply reads "JSON", or "!kind: msg" for an error, with its data
// as JSON after " #" when it has some ("!rate: slow down #{"retry_after_ms": 2000}").
func ParseReply(t testing.TB, text string) []byte {
	var r checkpoint.Reply
	if strings.HasPrefix(text, "!") {
		kind, msg, _ := strings.Cut(text[1:], ":")
		r.Err = &checkpoint.Error{Kind: strings.TrimSpace(kind), Msg: strings.TrimSpace(msg)}
		if i := strings.LastIndex(msg, " #"); i >= 0 {
			d, err := checkpoint.DataFromJSON([]byte(msg[i+2:]))
			if err != nil {
				t.Fatalf("bad error data in %q: %v", text, err)
			}
			b, err := checkpoint.EncodeData(d)
			if err != nil {
				t.Fatal(err)
			}
			r.Err.Msg, r.Err.Data = strings.TrimSpace(msg[:i]), b
		}
	} else {
		d, err := checkpoint.DataFromJSON([]byte(text))
		if err != nil {
			t.Fatalf("bad reply %q: %v", text, err)
		}
		r.Value = d
	}
	b, err := checkpoint.EncodeReply(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ParseScript(t testing.TB, src []byte) *Script {
	s := &Script{}
	src = mainOf(src)
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "// ") {
			continue
		}
		key, val, ok := strings.Cut(line[3:], ": ")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "input":
			s.Input = EncodeJSON(t, val)
		case "state":
			s.State = EncodeJSON(t, val)
		case "limit", "seed", "clock":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				t.Fatalf("bad %s: %v", key, err)
			}
			switch key {
			case "limit":
				s.Limit = n
			case "seed":
				s.Seed = n
			default:
				s.Clock = int64(n)
			}
		case "act", "await":
			head, reply, ok := strings.Cut(val, " -> ")
			if !ok {
				t.Fatalf("%s directive needs ' -> reply': %q", key, val)
			}
			sp := Suspend{Act: key == "act", Reply: ParseReply(t, strings.TrimSpace(reply))}
			args := head
			if sp.Act {
				sp.Tag, args, _ = strings.Cut(head, " ")
			}
			sp.Args = CanonJSON(t, args)
			s.Suspends = append(s.Suspends, sp)
		case "emit":
			kind, data, _ := strings.Cut(val, " ")
			s.Emits = append(s.Emits, kind+" "+CanonJSON(t, data))
		case "want":
			s.Want = CanonJSON(t, val)
		case "error":
			s.WantErr = val
		case "compile-error":
			s.CompileErr = val
		}
	}
	return s
}

func JSONOf(t testing.TB, b []byte) string {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		t.Fatal(err)
	}
	j, err := checkpoint.DataToJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

func ProgFiles(t testing.TB, root string) []string {
	files, err := filepath.Glob(filepath.Join(root, "testdata/progs/*.rune"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata progs: %v", err)
	}
	return files
}

// mainOf is the main file of a source set (package modules, which this
// cannot import: syntax's tests import this), or src itself: the directives
// are the main file's, not its modules'.
func mainOf(src []byte) []byte {
	const magic = "#rune modules 1\n"
	rest, ok := strings.CutPrefix(string(src), magic)
	if !ok {
		return src
	}
	head, rest, _ := strings.Cut(rest, "\n")
	var n, m int
	if _, err := fmt.Sscanf(head, "%d %d", &n, &m); err != nil || n+m > len(rest) {
		return src
	}
	return []byte(rest[n : n+m])
}

// AddProgSeeds adds every testdata prog to a fuzz target's seed corpus.
func AddProgSeeds(f *testing.F, root string) {
	for _, file := range ProgFiles(f, root) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
}
