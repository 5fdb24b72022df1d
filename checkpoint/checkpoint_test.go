// checkpoint_test.go tests the codec on real checkpoints and on hostile bytes.

package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/port"
)

const sampleProg = `
fn make(n) { var l = []; for i in range(n) { append(l, {i: i, s: str(i), f: i / 2.0}) }; return l }
let shared = make(20)
let again = [shared, shared]
var total = 0
let inc = fn (x) { total += x; return total }
for e in shared { inc(e.i) }
try { throw error("oops", "bad", {n: 1}) } catch e { total += len(e.msg) }
let r = act "fs.read" {path: "a.txt"}
return {total: total, r: r, n: len(again[0])}
`

// samples runs sampleProg in small slices and returns every checkpoint.
func samples(t testing.TB) [][]byte {
	t.Helper()
	ctx := context.Background()
	rt := port.NewNative()
	cp, err := rt.Start(ctx, port.Input{Source: []byte(sampleProg), Invocation: "inv", Context: []byte("ctx")})
	if err != nil {
		t.Fatal(err)
	}
	out := [][]byte{cp}
	var reply []byte
	for {
		r, err := rt.Step(ctx, port.Request{Checkpoint: cp, Reply: reply, Slice: 37})
		if err != nil {
			t.Fatal(err)
		}
		reply = nil
		cp = r.Checkpoint
		out = append(out, cp)
		switch r.Kind {
		case port.Act:
			reply, _ = checkpoint.EncodeReply(checkpoint.Reply{Value: "text"})
		case port.Done, port.Error:
			return out
		}
	}
}

func expect(b []byte) checkpoint.Expect {
	h, _ := checkpoint.DecodeHeader(b)
	return checkpoint.Expect{Semantics: compile.Version, Program: h.Program}
}

func TestRoundTrip(t *testing.T) {
	for i, b := range samples(t) {
		cp, err := checkpoint.Decode(b, expect(b))
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		again, err := checkpoint.Encode(cp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("sample %d: re-encoding changed the bytes", i)
		}
	}
}

// rewrap builds a checkpoint from a header and arbitrary body bytes.
// refEnc is fxamacker's core deterministic encoding, omitting empty Go
// values as the hand-written codec does.
func refEnc(t testing.TB) cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	opts.OmitEmpty = cbor.OmitEmptyGoValue
	em, err := opts.EncMode()
	if err != nil {
		t.Fatal(err)
	}
	return em
}

func rewrap(t *testing.T, h *checkpoint.Header, body []byte) []byte {
	hb, err := refEnc(t).Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cbor.Marshal([]any{cbor.RawMessage(hb), body})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRefusedBeforeBody(t *testing.T) {
	b := samples(t)[3]
	h, err := checkpoint.DecodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte{0xff, 0xff, 0xff}

	other := *h
	other.Semantics = compile.Version + 1
	_, err = checkpoint.Decode(rewrap(t, &other, garbage), checkpoint.Expect{Semantics: compile.Version})
	if !errors.Is(err, checkpoint.ErrSemantics) {
		t.Fatalf("other semantics: got %v", err)
	}
	if want := fmt.Sprintf("checkpoint has semantics version %d, this machine runs version %d", compile.Version+1, compile.Version); err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("message %q lacks %q", err, want)
	}

	_, err = checkpoint.Decode(rewrap(t, h, garbage), checkpoint.Expect{Semantics: compile.Version, Program: make([]byte, 32)})
	if !errors.Is(err, checkpoint.ErrProgram) {
		t.Fatalf("other program: got %v", err)
	}

	other = *h
	other.Format = 99
	if _, err := checkpoint.DecodeHeader(rewrap(t, &other, garbage)); !errors.Is(err, checkpoint.ErrFormat) {
		t.Fatalf("other format: got %v", err)
	}

	// The right header with a garbage body is malformed, not refused.
	_, err = checkpoint.Decode(rewrap(t, h, garbage), expect(b))
	if !errors.Is(err, checkpoint.ErrMalformed) {
		t.Fatalf("garbage body: got %v", err)
	}
}

func TestTruncated(t *testing.T) {
	for _, b := range samples(t)[:4] {
		for n := 0; n < len(b); n++ {
			if _, err := checkpoint.Decode(b[:n], expect(b)); err == nil {
				t.Fatalf("prefix of %d of %d bytes decoded", n, len(b))
			}
		}
	}
}

func TestTooLarge(t *testing.T) {
	if _, err := checkpoint.Decode(make([]byte, checkpoint.MaxSize+1), checkpoint.Expect{}); !errors.Is(err, checkpoint.ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
	// A declared length far beyond the input is refused before allocating.
	if _, err := checkpoint.DecodeData([]byte{0x9b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); err == nil {
		t.Fatal("huge declared array decoded")
	}
}

func TestDataStrict(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"non-shortest int", []byte{0x18, 0x01}},
		{"non-canonical NaN", []byte{0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}},
		{"non-shortest float", []byte{0xfb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}},
		{"indefinite array", []byte{0x9f, 0xff}},
		{"uint beyond int64", []byte{0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"invalid UTF-8", []byte{0x61, 0xff}},
		{"trailing bytes", []byte{0xf6, 0xf6}},
		{"unknown tag", []byte{0xc1, 0x00}},
		{"duplicate map key", append([]byte{0xd9, 0xcb, 0x23, 0x84}, 0x61, 'a', 0x01, 0x61, 'a', 0x02)},
		{"float map key", append([]byte{0xd9, 0xcb, 0x23, 0x82}, 0xf9, 0x3c, 0x00, 0x01)},
		{"odd map", append([]byte{0xd9, 0xcb, 0x23, 0x81}, 0x01)},
	} {
		if _, err := checkpoint.DecodeData(tc.b); err == nil {
			t.Errorf("%s: decoded", tc.name)
		}
	}
}

func TestDataRoundTrip(t *testing.T) {
	m := &checkpoint.Map{}
	m.Set("z", 1.5)
	m.Set("a", []any{int64(-1), math.MaxInt64 * 1.0, "é", nil, true})
	m.Set(int64(7), false)
	b, err := checkpoint.EncodeData(m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := checkpoint.EncodeData(d)
	if !bytes.Equal(again, b) {
		t.Fatal("round trip changed the bytes")
	}
	if got := d.(*checkpoint.Map).Keys; got[0] != "z" || got[1] != "a" || got[2] != int64(7) {
		t.Fatalf("order not kept: %v", got)
	}
	nan, _ := checkpoint.EncodeData(math.NaN())
	if !bytes.Equal(nan, []byte{0xf9, 0x7e, 0x00}) {
		t.Fatalf("NaN encodes as %x", nan)
	}
}

func TestReply(t *testing.T) {
	b, err := checkpoint.EncodeReply(checkpoint.Reply{Err: &checkpoint.Error{Kind: "denied", Msg: "no grant"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := checkpoint.DecodeReply(b)
	if err != nil || r.Err == nil || r.Err.Kind != "denied" || r.Err.Msg != "no grant" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, bad := range [][]byte{{0x80}, {0x82, 0xf4, 0x01}, {0x84, 0xf4, 0x60, 0x60, 0xf6}, {0x82, 0xf5}} {
		if _, err := checkpoint.DecodeReply(bad); err == nil {
			t.Errorf("reply %x decoded", bad)
		}
	}
}

// TestDecodeInto: decoding through one Scratch, checkpoints of every size
// in turn, gives what Decode gives.
func TestDecodeInto(t *testing.T) {
	cps := samples(t)
	var order [][]byte
	order = append(order, cps...)
	for i := len(cps) - 1; i >= 0; i-- {
		order = append(order, cps[i])
	}
	var sc checkpoint.Scratch
	want := checkpoint.Expect{Semantics: compile.Version}
	for i, b := range order {
		a, err := checkpoint.Decode(b, want)
		if err != nil {
			t.Fatal(err)
		}
		c, err := checkpoint.DecodeInto(b, want, &sc)
		if err != nil || !reflect.DeepEqual(a, c) {
			t.Fatalf("checkpoint %d: DecodeInto differs from Decode (%v)", i, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, b := range samples(f) {
		f.Add(b)
	}
	var sc checkpoint.Scratch // reused across inputs, as a port reuses it
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := checkpoint.Decode(b, checkpoint.Expect{Semantics: compile.Version})
		into, err2 := checkpoint.DecodeInto(b, checkpoint.Expect{Semantics: compile.Version}, &sc)
		if (err == nil) != (err2 == nil) || err == nil && !reflect.DeepEqual(cp, into) {
			t.Fatalf("DecodeInto differs from Decode: %v / %v", err2, err)
		}
		if err != nil {
			return
		}
		if _, err := checkpoint.Encode(cp); err != nil {
			t.Fatalf("decoded checkpoint does not encode: %v", err)
		}
	})
}

func FuzzDecodeData(f *testing.F) {
	for _, b := range samples(f) {
		h, _ := checkpoint.DecodeHeader(b)
		if h.Pending != nil {
			f.Add([]byte(h.Pending.Args))
		}
		if h.Result != nil {
			f.Add([]byte(h.Result))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := checkpoint.DecodeData(b)
		if err != nil {
			return
		}
		again, err := checkpoint.EncodeData(d)
		if err != nil {
			t.Fatalf("decoded data does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted a non-canonical encoding: %x re-encodes as %x", b, again)
		}
	})
}

// TestBodyMatchesReference checks the hand-written body codec against the
// fxamacker core deterministic encoder: the same Machine, the same bytes.
func TestBodyMatchesReference(t *testing.T) {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range samples(t) {
		cp, err := checkpoint.Decode(b, expect(b))
		if err != nil {
			t.Fatal(err)
		}
		m := cp.Machine
		// fxamacker writes nil slices as null; the body always writes arrays.
		for _, s := range []*[]checkpoint.Val{&m.Globals, &m.Stack} {
			if *s == nil {
				*s = []checkpoint.Val{}
			}
		}
		if m.Frames == nil {
			m.Frames = []checkpoint.Frame{}
		}
		if m.Handlers == nil {
			m.Handlers = []checkpoint.Handler{}
		}
		if m.Heap == nil {
			m.Heap = []checkpoint.Object{}
		}
		if m.Strings == nil {
			m.Strings = []string{}
		}
		for j := range m.Heap {
			if m.Heap[j].Items == nil {
				m.Heap[j].Items = []checkpoint.Val{}
			}
		}
		ref, err := em.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		w, err := splitRef(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ref, w.Body) {
			t.Fatalf("sample %d: body differs from the reference encoding\n got %x\nwant %x", i, w.Body, ref)
		}
	}
}

// TestHeaderMatchesReference checks the hand-written header and outer
// codec against fxamacker/cbor's core deterministic encoding and decoding.
func TestHeaderMatchesReference(t *testing.T) {
	em := refEnc(t)
	data, _ := checkpoint.EncodeData([]any{int64(1), "x"})
	headers := []checkpoint.Header{
		{Format: 1, Semantics: 1, Program: make([]byte, 32), Status: checkpoint.Runnable},
		{Format: 1, Semantics: 7, Program: bytes.Repeat([]byte{9}, 32), Invocation: "inv-é", Context: []byte("ctx"), Used: 1 << 40, Status: checkpoint.Acting,
			Pending: &checkpoint.Pending{Kind: checkpoint.PendingAct, Seq: 3, Tag: "fs.read", Args: data}},
		{Format: 1, Semantics: 1, Program: make([]byte, 32), Used: 5, Status: checkpoint.Awaiting, Pending: &checkpoint.Pending{Kind: checkpoint.PendingAwait, Seq: 1, Args: data}},
		{Format: 1, Semantics: 1, Program: make([]byte, 32), Used: 99, Status: checkpoint.Done, Result: data},
		{Format: 1, Semantics: 1, Program: make([]byte, 32), Used: 99, Status: checkpoint.Failed,
			Error: &checkpoint.Error{Kind: "type", Msg: "m", Pos: "1:2", Trace: []string{"main at 1:2", "f at 2:3"}, Data: data}},
		{Format: 1, Semantics: 1, Program: make([]byte, 32), Status: checkpoint.Failed, Error: &checkpoint.Error{Kind: "k"}},
	}
	for _, b := range samples(t) {
		h, _ := checkpoint.DecodeHeader(b)
		headers = append(headers, *h)
	}
	for i, h := range headers {
		c := &checkpoint.Checkpoint{Header: h, Machine: &checkpoint.Machine{}}
		got, err := checkpoint.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		hb, _ := em.Marshal(&h)
		body := encodeBodyRef(t, c.Machine)
		want, _ := em.Marshal([]any{cbor.RawMessage(hb), body})
		if !bytes.Equal(got, want) {
			t.Fatalf("header %d:\n got %x\nwant %x", i, got, want)
		}
		ref, err := referenceHeader(got)
		if err != nil {
			t.Fatal(err)
		}
		mine, err := checkpoint.DecodeHeader(got)
		if err != nil {
			t.Fatalf("header %d: %v", i, err)
		}
		if !reflect.DeepEqual(mine, ref) {
			t.Fatalf("header %d: decoders disagree:\n%+v\n%+v", i, mine, ref)
		}
	}
}

// encodeBodyRef is the body as checkpoint.Encode writes it, for an empty machine.
func encodeBodyRef(t *testing.T, m *checkpoint.Machine) []byte {
	b, err := checkpoint.Encode(&checkpoint.Checkpoint{Header: checkpoint.Header{Format: 1, Program: make([]byte, 32)}, Machine: m})
	if err != nil {
		t.Fatal(err)
	}
	w, err := splitRef(b)
	if err != nil {
		t.Fatal(err)
	}
	return w.Body
}

// referenceHeader decodes a header with fxamacker/cbor.
func referenceHeader(b []byte) (*checkpoint.Header, error) {
	w, err := splitRef(b)
	if err != nil {
		return nil, err
	}
	var h checkpoint.Header
	if err := cbor.Unmarshal(w.Header, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// outerRef is the outer array of a checkpoint, as fxamacker/cbor reads it.
type outerRef struct {
	_      struct{} `cbor:",toarray"`
	Header cbor.RawMessage
	Body   []byte
}

func splitRef(b []byte) (*outerRef, error) {
	var w outerRef
	if err := cbor.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	return &w, nil
}
