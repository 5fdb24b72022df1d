// wire_test.go checks the hand-written wire codec against fxamacker/cbor,
// and fuzzes its decoders.

package port

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/checkpoint"
)

func wireSamples() ([]wireRequest, []wireResult, []wireAnswer) {
	data, _ := checkpoint.EncodeData(map[string]any{"a": int64(1)}["a"])
	reqs := []wireRequest{
		{},
		{Checkpoint: []byte{1, 2, 3}, Slice: 1000},
		{Checkpoint: bytes.Repeat([]byte{7}, 70000), Reply: []byte{0x82, 0xf5, 0x01}, Slice: 1 << 40, Clock: -5, Lazy: true, Invocation: "inv-é"},
		{Invocation: "x", Lazy: true, Clock: 1764480000000},
	}
	results := []wireResult{
		{Kind: Yield},
		{Kind: Done, Used: 12345, Checkpoint: []byte{9}, Result: []byte{0xf6}},
		{Kind: Act, Used: 1, Tag: "fs.read", Args: []byte{0xa0}, Seq: 3, Emits: []wireEmit{{Kind: "log", Data: []byte{0x61, 'x'}}, {Kind: "p", Data: []byte{0x01}}}},
		{Kind: Error, Used: 300, Err: &checkpoint.Error{Kind: "type", Msg: "bad", Pos: "1:2", Trace: []string{"main at 1:2", "f at 3:4"}, Data: checkpoint.RawData(data)}},
		{Kind: Error, Err: &checkpoint.Error{Kind: "k", Msg: ""}},
	}
	answers := []wireAnswer{
		{},
		{Body: []byte{1, 2}},
		{Code: codeSyntax, Msg: "undefined: x", Line: 3, Col: 17},
		{Code: codeSyntax, Msg: "undefined: x", Line: 3, Col: 17, File: "lib/a.rune"},
		{Code: codeOther, Msg: "boom"},
	}
	return reqs, results, answers
}

var wireEnc = func() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

func TestWireMatchesReference(t *testing.T) {
	reqs, results, answers := wireSamples()
	for i, in := range []wireInput{{}, {Source: []byte("return 1"), Input: []byte{1}, State: []byte{2}, Context: []byte("c"), Invocation: "i", Seed: 9, Limit: 1 << 33}} {
		ref, _ := wireEnc.Marshal(&in)
		got := encodeInput(&in)
		if !bytes.Equal(got, ref) {
			t.Fatalf("input %d:\n got %x\nwant %x", i, got, ref)
		}
		if back, err := decodeInput(got); err != nil || !bytes.Equal(encodeInput(back), got) {
			t.Fatalf("input %d: round trip: %v", i, err)
		}
	}
	for i, w := range []wireInfo{{Hash: make([]byte, 32)}, {Hash: make([]byte, 32), ActTags: []string{"a", "fs.read"}}} {
		ref, _ := wireEnc.Marshal(&w)
		got := encodeInfo(&w)
		if !bytes.Equal(got, ref) {
			t.Fatalf("info %d:\n got %x\nwant %x", i, got, ref)
		}
		if back, err := decodeInfo(got); err != nil || !reflect.DeepEqual(*back, w) {
			t.Fatalf("info %d: round trip: %+v %v", i, back, err)
		}
	}
	for i, q := range reqs {
		ref, _ := wireEnc.Marshal(&q)
		got := encodeRequest(&q)
		if !bytes.Equal(got, ref) {
			t.Fatalf("request %d:\n got %x\nwant %x", i, got, ref)
		}
		back, err := decodeRequest(got)
		if err != nil || !reflect.DeepEqual(*back, q) && !(len(q.Checkpoint) == 0 && back.Checkpoint == nil) {
			t.Fatalf("request %d: round trip gave %+v, %v", i, back, err)
		}
	}
	for i, w := range results {
		ref, _ := wireEnc.Marshal(&w)
		got := encodeWireResult(&w)
		if !bytes.Equal(got, ref) {
			t.Fatalf("result %d:\n got %x\nwant %x", i, got, ref)
		}
		back, err := decodeWireResult(got)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if again := encodeWireResult(back); !bytes.Equal(again, got) {
			t.Fatalf("result %d: round trip changed the bytes", i)
		}
	}
	for i, a := range answers {
		ref, _ := wireEnc.Marshal(&a)
		got := encodeWireAnswer(&a)
		if !bytes.Equal(got, ref) {
			t.Fatalf("answer %d:\n got %x\nwant %x", i, got, ref)
		}
		back, err := decodeWireAnswer(got)
		if err != nil || !reflect.DeepEqual(*back, a) {
			t.Fatalf("answer %d: round trip gave %+v, %v", i, back, err)
		}
	}
}

func FuzzWire(f *testing.F) {
	reqs, results, answers := wireSamples()
	for _, q := range reqs {
		f.Add(encodeRequest(&q))
	}
	for _, w := range results {
		f.Add(encodeWireResult(&w))
	}
	for _, a := range answers {
		f.Add(encodeWireAnswer(&a))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if in, err := decodeInput(b); err == nil {
			if again := encodeInput(in); !bytes.Equal(again, b) {
				t.Fatalf("input %x re-encodes as %x", b, again)
			}
		}
		if w, err := decodeInfo(b); err == nil {
			if again := encodeInfo(w); !bytes.Equal(again, b) {
				t.Fatalf("info %x re-encodes as %x", b, again)
			}
		}
		if q, err := decodeRequest(b); err == nil {
			if again := encodeRequest(q); !bytes.Equal(again, b) {
				t.Fatalf("request %x re-encodes as %x", b, again)
			}
		}
		if w, err := decodeWireResult(b); err == nil {
			if again := encodeWireResult(w); !bytes.Equal(again, b) {
				t.Fatalf("result %x re-encodes as %x", b, again)
			}
		}
		if a, err := decodeWireAnswer(b); err == nil {
			if again := encodeWireAnswer(a); !bytes.Equal(again, b) {
				t.Fatalf("answer %x re-encodes as %x", b, again)
			}
		}
	})
}

// TestStepAnswerInOnePiece: a step's answer written in one buffer is the
// answer that wraps its encoded result.
func TestStepAnswerInOnePiece(t *testing.T) {
	_, results, _ := wireSamples()
	big := wireResult{Kind: Act, Used: 9, Checkpoint: bytes.Repeat([]byte{7}, 70000), Args: []byte{0xf6}}
	for i, w := range append(results, big) {
		want := encodeWireAnswer(&wireAnswer{Body: encodeWireResult(&w)})
		if got := encodeStepAnswer(&w); !bytes.Equal(got, want) {
			t.Fatalf("result %d: %x, want %x", i, got[:min(len(got), 32)], want[:min(len(want), 32)])
		}
	}
}
