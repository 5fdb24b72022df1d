// bench_test.go measures checkpoints: size, encode and decode of a machine
// with 1,000 live values, and one slice of a suspended prog.

package port

import (
	"context"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

// live1000 holds 1,000 live values when it suspends at its act: 500 ints and
// strings in a list, and 100 maps of 5 entries each (500 values in all).
const live1000 = `
var l = []
for i in range(250) { append(l, i, "s" + str(i)) }
var ms = []
for i in range(100) { append(ms, {a: i, b: "x", c: 1.5, d: true, e: nil}) }
let r = act "wait" {n: len(l)}
return len(l) + len(ms) + r
`

func suspended(b *testing.B) (*compile.Program, []byte) {
	rt := NewNative()
	cp, err := rt.Start(context.Background(), Input{Source: []byte(live1000)})
	if err != nil {
		b.Fatal(err)
	}
	r, err := rt.Step(context.Background(), Request{Checkpoint: cp, Slice: 1 << 40})
	if err != nil || r.Kind != Act {
		b.Fatalf("%v %v", r, err)
	}
	p, _ := compile.Compile([]byte(live1000))
	return p, r.Checkpoint
}

func BenchmarkCheckpoint1000(b *testing.B) {
	p, cp := suspended(b)
	want := checkpoint.Expect{Semantics: compile.Version, Program: p.Hash[:]}
	decoded, err := checkpoint.Decode(cp, want)
	if err != nil {
		b.Fatal(err)
	}
	m, err := machine.Restore(p, decoded)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := m.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := checkpoint.Encode(c); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(cp)), "bytes")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := checkpoint.Decode(cp, want)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := machine.Restore(p, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(1)})
	b.Run("resume-to-done", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := StepProgram(p, Request{Checkpoint: cp, Reply: reply, Slice: 1000})
			if err != nil || r.Kind != Done {
				b.Fatal(r, err)
			}
		}
	})
}

// BenchmarkStdAgentTurn runs testdata/progs/std_agent.rune, three turns of
// std/agent.rune's loop against scripted replies, from its source set to its
// result natively, a checkpoint at every act: the machine's share of a turn
// of the standard agent loop (the engine's and the model's are not in it).
func BenchmarkStdAgentTurn(b *testing.B) {
	src := readProg(b, "../../testdata/progs/std_agent.rune")
	s := parseScript(b, src)
	rt := NewNative()
	var used uint64
	for b.Loop() {
		used = runScript(b, rt, src, s, unsliced).used
	}
	const turns = 3
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/turns, "ns/turn")
	b.ReportMetric(float64(used)/turns, "steps/turn")
}
