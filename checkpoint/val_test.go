// val_test.go holds the one-byte shortcuts of slot decoding to the general path.

package checkpoint

import (
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
