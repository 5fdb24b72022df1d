package porttest

import (
	"hash/fnv"
	"os"
	"strconv"
	"testing"
)

// Long reports whether the long versions of the tests run: RUNEHOST_LONG=1
// (make test-long). make test runs the short, seeded ones.
func Long() bool { return os.Getenv("RUNEHOST_LONG") == "1" }

// Seed is what picks the part of a long test its short version runs:
// RUNEHOST_SEED, else 1, so that make test runs the same tests each time
// and another seed runs another part.
func Seed(t testing.TB) uint64 {
	v := os.Getenv("RUNEHOST_SEED")
	if v == "" {
		return 1
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("RUNEHOST_SEED=%q: %v", v, err)
	}
	return n
}

// ShortSteps is the most steps a prog may take, unsliced, to be checked at
// every slice size in the short version too.
const ShortSteps = 1000

// SizesFor returns the slice sizes at which the slicing property is
// checked for the prog name, which runs to its end in used steps unsliced:
// every one of SliceSizes in the long version, and for a prog of at most
// ShortSteps steps; for a longer one, the sizes over 3 and one of 1, 2 and
// 3, picked by the seed and the name. (The smallest slices of the longest
// progs are most of the time of these tests: a checkpoint at every step or
// two of a deep stack or a large heap.)
func SizesFor(t testing.TB, name string, used uint64) []uint64 {
	if Long() || used <= ShortSteps {
		return SliceSizes
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	small := []uint64{1, 2, 3}
	pick := small[(h.Sum64()+Seed(t))%uint64(len(small))]
	sizes := []uint64{pick}
	for _, s := range SliceSizes {
		if s > 3 {
			sizes = append(sizes, s)
		}
	}
	return sizes
}
