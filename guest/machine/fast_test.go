// fast_test.go checks that the fast path changes nothing a prog or a host can see.

package machine_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/guest/port/porttest"
)

// edgeProgs run the fast path at the edges of each case it takes: where
// it must hand an instruction back (an overflow, a float modulo, an index
// out of range, a builtin call, the frames or the stack to grow, a
// handler to pop) and just inside them.
var edgeProgs = map[string]string{
	"int_edges": `let big = 9223372036854775807
let small = -big - 1
var r = [big - 1 + 1, small + 1 - 1, 2147483647 * 2147483647, -2147483648 * 2147483647,
  4294967296 * 2, 7 / 2, -7 / 2, 7 / -2, -7 / -2, small / 2, 7 % 3, -7 % 3, 7 % -3, small % 7, small % -1,
  -(small + 1), 5 * -1, small * 1]
try { r = r + [big + 1] } catch e { r = r + [e.kind] }
try { r = r + [small - 1] } catch e { r = r + [e.kind] }
try { r = r + [3037000500 * 3037000500] } catch e { r = r + [e.kind] }
try { r = r + [-1 * small] } catch e { r = r + [e.kind] }
try { r = r + [-small] } catch e { r = r + [e.kind] }
try { r = r + [small / -1] } catch e { r = r + [e.kind] }
try { r = r + [1 / 0] } catch e { r = r + [e.msg] }
try { r = r + [1 % 0] } catch e { r = r + [e.msg] }
return r`,
	"float_edges": `let nan = float("nan")
let inf = float("inf")
var r = [1.5 + 2, 2 - 0.5, 3 * 1.5, 7 / 2.0, 7.5 % 2, -(-0.0), 1 / 3.0, -inf, inf - inf == inf - inf,
  nan < 1.0, nan <= nan, nan > 1.0, nan >= nan, 1.0 < 2.0, 2.0 <= 2.0, 1 < 1.5, 2 == 2.0, 2.0 != 2, nan == nan,
  9007199254740993 > 9007199254740992.0]
try { r = r + [1.0 / 0] } catch e { r = r + [e.msg] }
try { r = r + [1.0 % 0.0] } catch e { r = r + [e.msg] }
return r`,
	"compare_kinds": `fn f() { return 1 }
let l = [1]
let m = {a: 1}
return [nil == nil, nil == false, true == true, true != false, 1 == "1", "a" == "a", "ab" == "abc", l == l, l == [1],
  m == {a: 1}, f == f, len == len, len == str, [] == nil, !nil, !0, !"", ![], !{}, !l, !m, !f, !0.0, !1.5, "a" < "b"]`,
	"lists": `var l = [10, 20, 30]
var r = [l[0], l[-1], l[-3], l[2]]
l[0] = 11
l[-1] = 33
r = r + [l]
for i in [3, -4] { try { r = r + [l[i]] } catch e { r = r + [e.msg] } }
try { l[5] = 1 } catch e { r = r + [e.msg] }
try { r = r + [l["a"]] } catch e { r = r + [e.msg] }
let m = {a: 1, b: 2}
m["c"] = 3
r = r + [m["a"], "hello"[1]]
for k in m { r = r + [k] }
for k, v in m { r = r + [k, v] }
for i, v in l { r = r + [i, v] }
for c in "héllo" { r = r + [c] }
for i, c in "hé" { r = r + [i, c] }
return r`,
	"calls": `fn fib(n) { if n < 2 { return n } return fib(n - 1) + fib(n - 2) }
fn deep(n) { if n == 0 { return 0 } return 1 + deep(n - 1) }
fn many(a, b, c, d, e, f, g, h) { var x = a + b; var y = c + d; return [x, y, e, f, g, h] }
fn thrower(n) { if n == 0 { throw "bottom" } return thrower(n - 1) }
fn catcher(n) { try { return thrower(n) } catch e { return e.msg } }
fn tried(n) { try { if n > 0 { return tried(n - 1) + 1 } return 0 } catch e { return -1 } }
var r = [fib(10), deep(60), many(1, 2, 3, 4, 5, 6, 7, 8), catcher(50), tried(30)]
try { r = r + [fib(1, 2)] } catch e { r = r + [e.msg] }
try { r = r + [r(1)] } catch e { r = r + [e.msg] }
return r`,
	"cells": `fn counter() { var n = 0; return fn() { n += 1; return n } }
let c = counter()
var t = 0
for i in range(100) { t += c() }
fn early() {
  fn g() { return later }
  var k = ""
  try { k = g() } catch e { k = e.kind }
  let later = 1
  return [k, g()]
}
var acc = 0
let add = fn(x) { acc += x }
for i in range(50) { add(i) }
return [t, early(), acc]`,
	"globals": `fn read() { return late }
var r = []
try { r = r + [read()] } catch e { r = r + [e.kind] }
var late = 5
r = r + [late]
var i = 0
while i < 300 { i += 1; if i % 2 == 0 { continue } if i > 290 { break } }
return r + [i]`,
	"strings": `var s = ""
var t = 0
for i in range(200) { s = s + str(i % 10); if s == "0123" { t += 1 } }
return [len(s), t, s < "1", -len(s)]`,
}

// trace runs src to its end in slices of slice steps, through the native
// port with every checkpoint decoded, and hashes every answer: kind, used
// steps, checkpoint bytes, result, suspension and emits. A suspension is
// answered from the golden prog's script, or with nil once it runs out.
// used is the steps the prog used in all.
func trace(t *testing.T, src []byte, s *porttest.Script, slice uint64) (sum []byte, used uint64) {
	t.Helper()
	ctx := context.Background()
	rt := port.NewNative()
	// Decode every checkpoint (a restored machine's stack and frames are
	// exactly as large as it needs: the fast path must hand back its
	// growth), except at the smallest slices, where it costs the most.
	rt.NoReuse = slice > 2
	h := sha256.New()
	cp, err := rt.Start(ctx, port.Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: "inv-1"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var reply []byte
	next := 0
	for {
		r, err := rt.Step(ctx, port.Request{Checkpoint: cp, Reply: reply, Slice: slice, Clock: s.Clock})
		if err != nil {
			fmt.Fprintf(h, "step error %v\n", err)
			return h.Sum(nil), used
		}
		used = r.Used
		hashResult(h, r)
		cp, reply = r.Checkpoint, nil
		switch r.Kind {
		case port.Yield:
		case port.Act, port.Event:
			if next < len(s.Suspends) {
				reply = s.Suspends[next].Reply
				next++
			}
		default:
			return h.Sum(nil), used
		}
	}
}

// hashResult hashes every field of r; the byte strings go in whole, after
// their lengths (formatting a large checkpoint in hex at every slice was
// most of the time of the test).
func hashResult(h hash.Hash, r *port.Result) {
	fmt.Fprintf(h, "%v %d %q %d %v\n", r.Kind, r.Used, r.Tag, r.Seq, r.Err)
	hashBytes(h, r.Checkpoint)
	hashBytes(h, r.Result)
	hashBytes(h, r.Args)
	for _, e := range r.Emits {
		fmt.Fprintf(h, "emit %q\n", e.Kind)
		hashBytes(h, e.Data)
	}
}

func hashBytes(h hash.Hash, b []byte) {
	h.Write(binary.AppendUvarint(nil, uint64(len(b))))
	h.Write(b)
}

type prog struct {
	name  string
	src   []byte
	s     *porttest.Script
	sizes []uint64 // the slice sizes it runs at, besides unsliced
}

// traceAll traces every prog unsliced and at its slice sizes, in parallel,
// with the fast path as it is set.
func traceAll(t *testing.T, progs []prog, sums map[string][]byte) {
	var mu sync.Mutex
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for _, slice := range append([]uint64{porttest.Unsliced}, p.sizes...) {
				sum, _ := trace(t, p.src, p.s, slice)
				mu.Lock()
				sums[fmt.Sprint(p.name, "/", slice)] = sum
				mu.Unlock()
			}
		})
	}
}

// TestFastPathChangesNothing runs every golden prog and every edge prog in
// slices of each size with the fast path off, then on: every answer (used
// steps, checkpoint bytes at each slice boundary, result, error, emits)
// must be the same. make test leaves out all but one of the smallest sizes
// of the longest progs (porttest.SizesFor); RUNEHOST_LONG=1 (make
// test-long) runs them all.
func TestFastPathChangesNothing(t *testing.T) {
	defer machine.SetFast(true)
	var progs []prog
	for _, file := range porttest.ProgFiles(t, "../..") {
		src := readProg(t, file)
		if s := porttest.ParseScript(t, src); s.CompileErr == "" {
			progs = append(progs, prog{name: strings.TrimSuffix(filepath.Base(file), ".rune"), src: src, s: s})
		}
	}
	for name, src := range edgeProgs {
		if _, err := port.NewNative().Load(context.Background(), []byte(src)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		progs = append(progs, prog{name: name, src: []byte(src), s: &porttest.Script{}})
	}
	for i := range progs {
		_, used := trace(t, progs[i].src, progs[i].s, porttest.Unsliced)
		progs[i].sizes = porttest.SizesFor(t, progs[i].name, used)
	}
	slow, fast := map[string][]byte{}, map[string][]byte{}
	// The setting changes only between the groups, once each has finished.
	machine.SetFast(false)
	t.Run("slow", func(t *testing.T) { traceAll(t, progs, slow) })
	machine.SetFast(true)
	t.Run("fast", func(t *testing.T) { traceAll(t, progs, fast) })
	for k, v := range slow {
		if string(fast[k]) != string(v) {
			t.Errorf("%s: the fast path answers differently", k)
		}
	}
	if len(slow) != len(fast) {
		t.Errorf("%d traces without the fast path, %d with it", len(slow), len(fast))
	}
}

// TestFastPathAlone runs the fast path by itself over progs it takes
// whole (no builtins, no allocation) and checks that it stops exactly at
// each budget, in the state the full loop reaches in as many steps. The
// full loop runs the first steps of each, which allocate the closure and
// grow the frames and the stack.
func TestFastPathAlone(t *testing.T) {
	defer machine.SetFast(true)
	for _, p := range []struct {
		src   string
		start uint64
	}{
		{`var s = 0; var i = 0; while i < 1000 { s = s + i % 7 * 3 - 1; i += 1 }; return s`, 0},
		{`fn fib(n) { if n < 2 { return n } return fib(n - 1) + fib(n - 2) }; return fib(12)`, 300},
	} {
		prog, err := compile.Compile([]byte(p.src))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []uint64{1, 2, 3, 7, 64, 1000} {
			machine.SetFast(false)
			fast, err := machine.New(prog, machine.Config{})
			if err != nil {
				t.Fatal(err)
			}
			fast.Run(p.start)
			fast.Fast(p.start + n)
			slow, _ := machine.New(prog, machine.Config{})
			slow.Run(p.start + n)
			machine.SetFast(true)
			if fast.Steps() != p.start+n {
				t.Fatalf("%s: the fast path alone stopped at %d steps of %d", p.src, fast.Steps(), p.start+n)
			}
			if string(encode(t, fast, slow.Used())) != string(encode(t, slow, slow.Used())) {
				t.Fatalf("%s: after %d steps the fast path's state is not the full loop's", p.src, p.start+n)
			}
		}
	}
}

// encode is m's checkpoint, as if used steps were reported.
func encode(t *testing.T, m *machine.Machine, used uint64) []byte {
	cp, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	cp.Header.Used = used
	b, err := checkpoint.Encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzFastPath runs arbitrary source with the fast path on and off in
// slices of 1, 7 and 1000 steps; the answers must be the same. Its seeds
// are the edge progs (TestFastPathChangesNothing runs the golden ones).
func FuzzFastPath(f *testing.F) {
	for _, src := range edgeProgs {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		defer machine.SetFast(true)
		if _, err := port.NewNative().Load(context.Background(), src); err != nil {
			return
		}
		s := &porttest.Script{Limit: 5000}
		for _, slice := range []uint64{1, 7, 1000} {
			machine.SetFast(false)
			slow, _ := trace(t, src, s, slice)
			machine.SetFast(true)
			if fast, _ := trace(t, src, s, slice); string(slow) != string(fast) {
				t.Fatalf("slices of %d: the fast path answers differently", slice)
			}
		}
	})
}

// readProg reads a testdata prog with the modules it imports, as the host gives it.
func readProg(t testing.TB, file string) []byte {
	src, err := modules.Load(file, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return src
}
