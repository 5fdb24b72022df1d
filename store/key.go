// key.go holds Key: record keys as ordered tuples of parts.

package store

import (
	"strconv"
	"strings"
)

// Key is a record key: a kind, then parts, each followed by a 0x00
// separator (parts may not contain 0x00). Numbers are written as 16 hex
// digits, so that byte order is numeric order and keys stay readable.
// docs/store.md lists every kind.
type Key []byte

// K builds a key from a kind and parts: strings, or uint64 for numbers.
func K(kind string, parts ...any) Key {
	k := append(Key(kind), 0)
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			if strings.IndexByte(p, 0) >= 0 {
				panic("store.K: a key part contains a zero byte")
			}
			k = append(append(k, p...), 0)
		case uint64:
			k = appendNum(k, p)
		case int:
			k = appendNum(k, uint64(p))
		default:
			panic("store.K: part of unsupported type")
		}
	}
	return k
}

func appendNum(k Key, n uint64) Key {
	s := strconv.FormatUint(n, 16)
	k = append(k, strings.Repeat("0", 16-len(s))...)
	return append(append(k, s...), 0)
}

// String shows a key for messages: parts separated by "/".
func (k Key) String() string {
	return strings.ReplaceAll(strings.TrimSuffix(string(k), "\x00"), "\x00", "/")
}

// Parts returns a key's kind and parts as strings (numbers in their hex form).
func (k Key) Parts() []string {
	return strings.Split(strings.TrimSuffix(string(k), "\x00"), "\x00")
}
