// hash.go holds hashKey, the hash of a map key, which compiled code
// (guest/wasmgen) computes the same way, word for word.

package machine

import "unsafe"

// HashK is hashKey's multiplier (odd, so each multiplication is a bijection).
const HashK = 0x9E3779B97F4A7C15

// hashKey hashes a map key with the map's seed. A string is taken 8 bytes
// at a time, little-endian, the last few bytes as one word; after each
// word the state is multiplied and its high half folded into the low,
// which the index's slot is taken from. An int or a bool is one word.
func hashKey(v Value, seed uint64) uint64 {
	if v.k != Str {
		return hashWord(seed, v.n)
	}
	n := int(v.n)
	h := seed ^ uint64(n)*HashK
	p := v.p
	i := 0
	for ; i+8 <= n; i += 8 {
		h = hashWord(h, *(*uint64)(unsafe.Add(p, i)))
	}
	if i < n {
		var w uint64
		for j := n - 1; j >= i; j-- {
			w = w<<8 | uint64(*(*byte)(unsafe.Add(p, j)))
		}
		h = hashWord(h, w)
	}
	return h
}

// hashWord mixes one word into the state h.
func hashWord(h, w uint64) uint64 {
	h = (h ^ w) * HashK
	return h ^ h>>32
}
