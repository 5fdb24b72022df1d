// restore_test.go corrupts real checkpoints in targeted ways, each of which
// a structurally valid CBOR document can carry, and expects a clear error.

package port

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
)

const restoreProg = `
fn walk(l) {
  var n = 0
  for x in l {
    try { n += act "visit" {x: x} } catch e { n -= 1 }
  }
  return n
}
let xs = [1, 2, 3]
let add = fn (a) { return fn (b) { return a + b } }
return walk(xs) + add(1)(2)
`

// suspendedCheckpoint returns the program and a checkpoint suspended at
// the first act, inside walk, inside a for loop, inside a try.
func suspendedCheckpoint(t *testing.T) (*compile.Program, *checkpoint.Checkpoint) {
	t.Helper()
	rt := NewNative()
	cp, err := rt.Start(context.Background(), Input{Source: []byte(restoreProg)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rt.Step(context.Background(), Request{Checkpoint: cp, Slice: 1 << 30})
	if err != nil || r.Kind != Act {
		t.Fatalf("%v %v", r, err)
	}
	p, _ := compile.Compile([]byte(restoreProg))
	c, err := checkpoint.Decode(r.Checkpoint, checkpoint.Expect{Semantics: compile.Version, Program: p.Hash[:]})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestRestoreRejects(t *testing.T) {
	reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	for _, tc := range []struct {
		name   string
		mutate func(m *checkpoint.Machine)
		want   string
	}{
		{"stack slot missing", func(m *checkpoint.Machine) { m.Stack = m.Stack[:len(m.Stack)-1] }, "stack height"},
		{"stack slot extra", func(m *checkpoint.Machine) { m.Stack = append(m.Stack, checkpoint.Val{}) }, "stack height"},
		{"pc out of range", func(m *checkpoint.Machine) { m.Frames[1].PC = 10000 }, "pc 10000"},
		{"pc elsewhere", func(m *checkpoint.Machine) { m.Frames[1].PC = 1 }, ""},
		{"wrong function", func(m *checkpoint.Machine) { m.Frames[1].Fn = 2 }, "closure is not of it"},
		{"function out of range", func(m *checkpoint.Machine) { m.Frames[1].Fn = 99 }, "function 99"},
		{"entry frame with closure", func(m *checkpoint.Machine) { m.Frames[0].Closure = m.Frames[1].Closure }, "not the entry function"},
		{"handler height", func(m *checkpoint.Machine) { m.Handlers[0].SP++ }, "handler 0"},
		{"handler pc", func(m *checkpoint.Machine) { m.Handlers[0].PC = 2 }, "handler 0"},
		{"too many globals", func(m *checkpoint.Machine) { m.Globals = append(m.Globals, checkpoint.Val{}) }, "globals"},
		{"steps beyond limit", func(m *checkpoint.Machine) { m.Steps = m.Limit + 1 }, "out of order"},
		{"iterator over int", func(m *checkpoint.Machine) {
			for i := range m.Heap {
				if m.Heap[i].Kind == checkpoint.ObjIter {
					m.Heap[i].Items[0] = checkpoint.Val{Kind: checkpoint.ValInt, N: 3}
				}
			}
		}, "iterator"},
		{"closure captures a list", func(m *checkpoint.Machine) {
			list := -1
			for i := range m.Heap {
				if m.Heap[i].Kind == checkpoint.ObjList {
					list = i
				}
			}
			m.Heap = append(m.Heap, checkpoint.Object{Kind: checkpoint.ObjClosure, Aux: 3, Items: []checkpoint.Val{{Kind: checkpoint.ValRef, N: uint64(list)}}})
		}, "not a cell"},
		{"duplicate map keys", func(m *checkpoint.Machine) {
			m.Heap = append(m.Heap, checkpoint.Object{Kind: checkpoint.ObjMap, Items: []checkpoint.Val{
				{Kind: checkpoint.ValStr, S: "a"}, {}, {Kind: checkpoint.ValStr, S: "a"}, {}}})
		}, "duplicate key"},
		{"duplicate int map keys", func(m *checkpoint.Machine) {
			m.Heap = append(m.Heap, checkpoint.Object{Kind: checkpoint.ObjMap, Items: []checkpoint.Val{
				{Kind: checkpoint.ValInt, N: 7}, {}, {Kind: checkpoint.ValBool, N: 1}, {}, {Kind: checkpoint.ValInt, N: 7}, {}}})
		}, "duplicate key"},
		{"duplicate key in a map past a linear scan", func(m *checkpoint.Machine) {
			var items []checkpoint.Val
			for i := range 12 {
				items = append(items, checkpoint.Val{Kind: checkpoint.ValInt, N: uint64(i)}, checkpoint.Val{})
			}
			items = append(items, checkpoint.Val{Kind: checkpoint.ValInt, N: 3}, checkpoint.Val{})
			m.Heap = append(m.Heap, checkpoint.Object{Kind: checkpoint.ObjMap, Items: items})
		}, "duplicate key"},
		{"float map key", func(m *checkpoint.Machine) {
			m.Heap = append(m.Heap, checkpoint.Object{Kind: checkpoint.ObjMap, Items: []checkpoint.Val{{Kind: checkpoint.ValFloat}, {}}})
		}, "float key"},
		{"builtin out of range", func(m *checkpoint.Machine) {
			m.Globals[2] = checkpoint.Val{Kind: checkpoint.ValBuiltin, N: 1000}
		}, "built-in 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := suspendedCheckpoint(t)
			tc.mutate(c.Machine)
			b, err := checkpoint.Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			r, err := StepProgram(p, Request{Checkpoint: b, Reply: reply, Slice: 1000})
			if errors.Is(err, ErrFault) {
				t.Fatalf("fault: %v", err)
			}
			if err == nil {
				if tc.want == "" && r.Kind == Error {
					return // a corruption the machine meets as a prog error is fine too
				}
				t.Fatalf("accepted: %s", r.Kind)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// A cell slot holding something else is caught when the slot is used.
func TestCellSlotFault(t *testing.T) {
	src := "fn f(x) { let g = fn () { return x }\nlet r = act \"a\" {}\nreturn g() + x + r }\nreturn f(1)"
	p, _ := compile.Compile([]byte(src))
	rt := NewNative()
	cp, _ := rt.Start(context.Background(), Input{Source: []byte(src)})
	r, err := rt.Step(context.Background(), Request{Checkpoint: cp, Slice: 1 << 30})
	if err != nil || r.Kind != Act {
		t.Fatal(r, err)
	}
	c, _ := checkpoint.Decode(r.Checkpoint, checkpoint.Expect{Semantics: compile.Version})
	// Frame 1 is f; its local 0 (x) is a cell. Put an int there.
	c.Machine.Stack[c.Machine.Frames[1].Base] = checkpoint.Val{Kind: checkpoint.ValInt, N: 5}
	b, _ := checkpoint.Encode(c)
	reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	r, err = StepProgram(p, Request{Checkpoint: b, Reply: reply, Slice: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != Error || r.Err.Kind != "fault" {
		t.Fatalf("got %s %v", r.Kind, r.Err)
	}
}
