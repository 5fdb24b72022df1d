// val_test.go holds the shortcuts of slot and object decoding to the general path.

package checkpoint

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/runehost/runehost/internal/detcbor"
)

// TestValFastPath: a slot read by val's shortcuts reads as the general path
// reads it, for every first byte and a few bytes after it.
func TestValFastPath(t *testing.T) {
	tails := []string{"", "a", "abcdefghijklmnopqrstuvwxyz", "\xff\xfe", "é and more text here", "\x00\x01\x02",
		"\x05", "\x17", "\x18", "\x30", "\xff", "\x00\x10", "\x00\xff", "\x01\x00", "\xff\xff", "\x01",
		"\xcb\x21\x05", "\xcb\x21\x18\x30", "\xcb\x21\x18\x05", "\xcb\x21\x19\x01\x00", "\xcb\x21\x19\x00\x10",
		"\xcb\x21", "\xcb\x21\x18", "\xcb\x21\x19\x01", "\xcb\x21\x40", "\xcb\x21\x1a\x00\x01\x00\x00", "\xcb\x22\x05", "\xcb\x25\x05"}
	for c := 0; c < 256; c++ {
		for _, tail := range tails {
			b := append([]byte{byte(c)}, tail...)
			fast := &reader{Reader: detcbor.Reader{B: b}, s: string(b)}
			slow := &reader{Reader: detcbor.Reader{B: b}, s: string(b)}
			v1, err1 := fast.val()
			v2, err2 := slow.valSlow()
			if v1 != v2 || (err1 == nil) != (err2 == nil) || (err1 == nil && fast.Off != slow.Off) {
				t.Fatalf("% x: fast %+v %v at %d, slow %+v %v at %d", b, v1, err1, fast.Off, v2, err2, slow.Off)
			}
		}
	}
}

// TestObjectFastPath: a body read with the objects' shortcut reads as it
// does without, whatever byte of it is changed to whatever value.
func TestObjectFastPath(t *testing.T) {
	m := &Machine{Limit: 100, Globals: []Val{{Kind: ValRef, N: 0}}, Frames: []Frame{{}}, Heap: []Object{
		{Kind: ObjList, Items: []Val{{Kind: ValRef, N: 1}, {Kind: ValInt, N: 7}, {Kind: ValStr, S: "x"}}},
		{Kind: ObjMap, Items: []Val{{Kind: ValStr, S: "k"}, {Kind: ValInt, N: 300}}},
		{Kind: ObjIter, Aux: 30, Items: []Val{{Kind: ValRef, N: 0}}},
		{Kind: ObjCell, Items: []Val{{}}},
	}}
	body := appendMachine(nil, m)
	read := func(b []byte, general bool) (*Machine, error) {
		r := &reader{Reader: detcbor.Reader{B: b}, where: "body", s: string(b), general: general}
		return r.machine()
	}
	if got, err := read(body, false); err != nil || !bytes.Equal(appendMachine(nil, got), body) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for i := range body {
		for _, c := range []byte{0x00, 0x01, 0x03, 0x17, 0x18, 0x20, 0x80, 0x81, 0x83, 0x84, 0x97, 0x98, 0x9f, 0xd9, 0xff, body[i] + 1, body[i] - 1} {
			b := append([]byte(nil), body...)
			b[i] = c
			for _, cut := range []int{len(b), len(b) - 1, i + 1} {
				fast, err1 := read(b[:cut], false)
				slow, err2 := read(b[:cut], true)
				if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() || !reflect.DeepEqual(fast, slow) {
					t.Fatalf("byte %d = %#x, cut at %d: fast %v, general %v", i, c, cut, err1, err2)
				}
			}
		}
	}
}
