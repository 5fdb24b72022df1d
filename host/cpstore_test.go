// cpstore_test.go checks how checkpoints are stored: chunked ones read back
// byte for byte, a slice that changes little writes little, damage names
// the record, the quota fails a prog past it, and the store stays near the
// size of what it holds, and gives the space back after gc.

package host

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// put stores cp as inv's checkpoint and returns its use.
func put(t *testing.T, e *Engine, inv string, cp []byte) cpUse {
	t.Helper()
	var use cpUse
	err := e.Store.Update(store.Buffered, func(tx *store.Tx) (err error) {
		use, err = e.putCheckpointTx(tx, inv, cp, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return use
}

// chunkCount counts the chunks stored for inv.
func chunkCount(t *testing.T, e *Engine, inv string) int {
	t.Helper()
	var n int
	e.Store.View(func(tx *store.Tx) error {
		keys, err := chunkKeys(tx, inv)
		n = len(keys)
		return err
	})
	return n
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestCheckpointChunksRoundTrip(t *testing.T) {
	e := engine(t, memStore(t), 1)
	for _, n := range []int{1, headMax, inlineMax, inlineMax + 1, 200 << 10, 1 << 20} {
		cp := randomBytes(n, int64(n))
		put(t, e, "r1", cp)
		got, err := e.checkpoint("r1")
		if err != nil || !bytes.Equal(got, cp) {
			t.Fatalf("%d bytes: read back %d bytes, %v", n, len(got), err)
		}
		if chunks := chunkCount(t, e, "r1"); (n > inlineMax) != (chunks > 0) {
			t.Fatalf("%d bytes: %d chunks", n, chunks)
		}
	}
	// Back to inline: no chunk is left.
	put(t, e, "r1", []byte{0x82})
	if n := chunkCount(t, e, "r1"); n != 0 {
		t.Fatalf("%d chunks left beside an inline checkpoint", n)
	}
}

// An edit in the middle of a large checkpoint writes the head, the chunks
// around the edit and the manifest; the chunks no longer named go.
func TestCheckpointEditWritesLittle(t *testing.T) {
	e := fileEngine(t, t.TempDir()) // in memory, Badger holds a transaction's chunks whole: 2 MiB at most
	defer e.Store.Close()
	cp := randomBytes(4<<20, 1)
	put(t, e, "r1", cp)
	before := chunkCount(t, e, "r1")
	var rec *cpRecord
	e.Store.View(func(tx *store.Tx) (err error) { rec, _, err = readCPRecord(tx, "r1"); return err })
	old := map[string]bool{}
	for _, r := range rec.Chunks {
		old[string(r.Sum)] = true
	}
	edited := append([]byte(nil), cp...)
	edited[0] ^= 1                                                                        // the head
	edited = append(edited[:2<<20], append([]byte("an insertion"), edited[2<<20:]...)...) // the middle
	put(t, e, "r1", edited)
	e.Store.View(func(tx *store.Tx) (err error) { rec, _, err = readCPRecord(tx, "r1"); return err })
	fresh := 0
	for _, r := range rec.Chunks {
		if !old[string(r.Sum)] {
			fresh += r.Len
		}
	}
	if fresh > headMax+2*chunkMax {
		t.Fatalf("an edit wrote %d bytes of new chunks", fresh)
	}
	if after := chunkCount(t, e, "r1"); after != len(rec.Chunks) || after > before+2 {
		t.Fatalf("%d chunks stored, %d named, %d before", after, len(rec.Chunks), before)
	}
	if got, err := e.checkpoint("r1"); err != nil || !bytes.Equal(got, edited) {
		t.Fatalf("read back: %v", err)
	}
}

// A checkpoint stored whole by an earlier host still reads, and the next
// put replaces it.
func TestCheckpointStoredWhole(t *testing.T) {
	e, good := parked(t)
	putRaw(t, e, cpKey("r1"), good)
	if got := mustCP(t, e, "r1"); !bytes.Equal(got, good) {
		t.Fatal("a checkpoint stored whole reads differently")
	}
	e.boxes.Deliver("r1", "go", data(t, int64(5)))
	if _, err := e.RunTree(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
}

// A damaged or missing chunk is an error naming the chunk and the
// checkpoint; verify reports it once; a damaged manifest names cp.
func TestCheckpointChunkDamage(t *testing.T) {
	e := engine(t, memStore(t), 1)
	cp := randomBytes(300<<10, 2)
	put(t, e, "r1", cp)
	var rec *cpRecord
	e.Store.View(func(tx *store.Tx) (err error) { rec, _, err = readCPRecord(tx, "r1"); return err })
	k := chunkKey("r1", rec.Chunks[1].Sum)
	var good []byte
	e.Store.View(func(tx *store.Tx) (err error) { good, _, err = tx.GetRaw(k); return err })

	bad := append([]byte(nil), good...)
	bad[7] ^= 0x40
	putRaw(t, e, k, bad)
	_, err := e.checkpoint("r1")
	var re *store.RecordError
	if !errors.As(err, &re) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), k.String()) || !strings.Contains(err.Error(), "cp/r1") {
		t.Fatalf("damaged chunk: %v", err)
	}
	if problems, _, _ := VerifyRecords(e.Store); len(problems) != 1 || !strings.Contains(problems[0].Error(), k.String()) {
		t.Fatalf("verify, damaged chunk: %v", problems)
	}
	// A put of the same checkpoint keeps the chunk it thinks it has; a
	// replacement (migrate's) writes every chunk again.
	put(t, e, "r1", cp)
	if _, err := e.checkpoint("r1"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("damaged chunk after a put: %v", err)
	}
	e.Store.Update(store.Synced, func(tx *store.Tx) error { _, err := e.replaceCheckpointTx(tx, "r1", cp); return err })
	if got, err := e.checkpoint("r1"); err != nil || !bytes.Equal(got, cp) {
		t.Fatalf("replaced: %v", err)
	}

	e.Store.Update(store.Synced, func(tx *store.Tx) error { return tx.Delete(k) })
	if _, err := e.checkpoint("r1"); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing chunk: %v", err)
	}
	if problems, _, _ := VerifyRecords(e.Store); len(problems) != 1 || !strings.Contains(problems[0].Error(), "missing") {
		t.Fatalf("verify, missing chunk: %v", problems)
	}
	putRaw(t, e, k, good)
	if problems, _, _ := VerifyRecords(e.Store); len(problems) != 1 || !strings.Contains(problems[0].Error(), "cp/r1") { // random bytes: not a checkpoint
		t.Fatalf("verify, sound chunks: %v", problems)
	}

	// Manifests that lie about their chunks, their length or their sum.
	var m []byte
	e.Store.View(func(tx *store.Tx) (err error) { m, _, err = tx.GetRaw(cpKey("r1")); return err })
	for name, mangle := range map[string]func(r *cpRecord){
		"sum":    func(r *cpRecord) { r.Sum[0] ^= 1 },
		"length": func(r *cpRecord) { r.Len++ },
		"chunk":  func(r *cpRecord) { r.Chunks[0].Len = -1 },
		"empty":  func(r *cpRecord) { r.Chunks = nil },
		"both":   func(r *cpRecord) { r.Inline = []byte{1} },
	} {
		var r cpRecord
		store.Decode(cpKey("r1"), m, &r)
		mangle(&r)
		b, _ := store.Encode(r)
		putRaw(t, e, cpKey("r1"), b)
		if _, err := e.checkpoint("r1"); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "cp/r1") {
			t.Errorf("%s: %v", name, err)
		}
		// A put over a damaged record still cleans up the chunks.
		put(t, e, "r1", []byte{0x82})
		if n := chunkCount(t, e, "r1"); n != 0 {
			t.Errorf("%s: %d chunks left", name, n)
		}
		put(t, e, "r1", cp)
	}
}

// Past its store quota an invocation fails with a limit error, after a
// warning near it.
func TestStoreQuota(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Cadence = Cadence{Steps: 1} // a checkpoint at every slice: the quota is checked as one is stored
	e.Bounds.Store = 200 << 10
	var warned []string
	e.OnWarn = func(_, msg string) { warned = append(warned, msg) }
	out, err := e.Start(context.Background(), "r1", "big", []byte(`var s = []
while true { append(s, str(len(s)) * 200) }`), nil, 10_000_000, 1)
	if err != nil || out.Status != Failed || out.Err.Kind != "limit" || !strings.Contains(out.Err.Msg, "quota") {
		t.Fatalf("%+v %v", out, err)
	}
	if len(warned) == 0 || !strings.Contains(warned[0], "near the quota") {
		t.Fatalf("warnings: %q", warned)
	}
	// Its last stored checkpoint is under the quota.
	var use cpUse
	e.Store.View(func(tx *store.Tx) error {
		rec, size, err := readCPRecord(tx, "r1")
		if rec != nil {
			use.After = rec.held(size)
		}
		return err
	})
	if use.After == 0 || use.After > e.Bounds.Store {
		t.Fatalf("held %d", use.After)
	}
}

// Replies count toward the quota once, with the checkpoint after them.
func TestStoreQuotaCountsReplies(t *testing.T) {
	e := engine(t, memStore(t), 1)
	e.Adapters["calc"] = &recorder{}
	if out, err := e.Start(context.Background(), "r1", "p", []byte(`var t = 0
for i in range(5) { t += act "calc" {n: i} }
return t`), nil, 100_000, 1); err != nil || out.Status != Completed {
		t.Fatalf("%+v %v", out, err)
	}
	var rec *cpRecord
	e.Store.View(func(tx *store.Tx) (err error) { rec, _, err = readCPRecord(tx, "r1"); return err })
	one, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: int64(10)})
	if rec.Replies < 5*int64(len(one))-5 || rec.Replies > 5*int64(len(one))+5 {
		t.Fatalf("replies: %d bytes counted, each about %d", rec.Replies, len(one))
	}
}

// fileEngine is an engine over a store on disk, which the caller closes.
func fileEngine(t *testing.T, dir string) *Engine {
	t.Helper()
	s, err := store.Open(store.Options{Dir: dir, FreeSpace: func() (uint64, error) { return 1 << 40, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return engine(t, s, 1)
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	n, err := store.DirSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The storage test. On a store on disk, with a checkpoint stored at every
// slice, a prog that doubles a string to its limit and one that holds a
// 10 MB heap while it idles to its step limit each leave the store under 3x
// their final checkpoint (stored whole, they took 2.2 GB and 3.3 GB); so
// does one with that heap that acts 50 times (a checkpoint at each act,
// whatever the cadence); and gc of them all, with
// Compact, in a process of its own as runehost gc is, gives the store back
// to within 4 MiB of its size before them.
func TestStorageGrowsWithChange(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("a minute of slices over a 10 MB heap (not a test of concurrency: make unit runs it)")
	}
	dir := t.TempDir()
	e := fileEngine(t, dir)
	if _, err := e.Start(context.Background(), "r0", "small", []byte(`return 1`), nil, 1000, 1); err != nil {
		t.Fatal(err)
	}
	empty := dirSize(t, dir)
	// 200,000 steps build the heap, as many idle. make test idles for
	// 50,000, some 50 slices of 10 MB each (stored whole, half a gigabyte);
	// RUNEHOST_LONG=1 (make test-long) for all 200,000.
	idle := uint64(400_000)
	if !longTests {
		idle = 250_000
	}
	progs := []struct {
		name, src, end string
		limit          uint64
	}{
		{"doubling", `var s = "x"
while true { s = s + s }`, "exceeds the limit", 10_000_000},
		{"idle", `let a = range(1000000)
let b = range(4294967296, 4294967296 + 560000)
var n = 0
while true { n += 1 }`, "step limit", idle},
		{"acting", `let a = range(1000000)
let b = range(4294967296, 4294967296 + 560000)
var n = 0
while n < 500 { n += act "calc" {n: 1} }
return len(a) + len(b) + n`, "", 1_000_000}, // 50 acts: a checkpoint at each, whatever the cadence
	}
	e.Adapters["calc"] = &recorder{}
	for i, p := range progs {
		inv := []string{"r1", "r2", "r3"}[i]
		e.Cadence = Cadence{Steps: 1} // a checkpoint at every slice, as before lazy slices: the worst case
		if p.name == "acting" {
			e.Cadence = Cadence{}
		}
		before, written := dirSize(t, dir), e.Store.Written()
		start := time.Now()
		out, err := e.Start(context.Background(), inv, p.name, []byte(p.src), nil, p.limit, 1)
		if p.end == "" && err == nil && out.Status == Completed {
			out.Err = &checkpoint.Error{Msg: "completed"}
		} else if err != nil || out.Status != Failed || !strings.Contains(out.Err.Msg, p.end) {
			t.Fatalf("%s: %+v %v", p.name, out, err)
		}
		cp := mustCP(t, e, inv)
		grown := dirSize(t, dir) - before
		t.Logf("%s: %s, final checkpoint %d bytes, %d bytes of records written, the store grew %d bytes (%.2fx) in %v", p.name, out.Err.Msg, len(cp), e.Store.Written()-written, grown, float64(grown)/float64(len(cp)), time.Since(start).Round(time.Millisecond))
		if len(cp) < 8<<20 {
			t.Fatalf("%s: a final checkpoint of only %d bytes", p.name, len(cp))
		}
		if grown > 3*int64(len(cp)) {
			t.Errorf("%s: the store grew %d bytes, over 3x its final checkpoint of %d", p.name, grown, len(cp))
		}
	}
	if err := e.Store.Close(); err != nil {
		t.Fatal(err)
	}
	full := dirSize(t, dir)
	e = fileEngine(t, dir)
	defer e.Store.Close()
	rep, err := e.GC(time.Now().Add(time.Hour).UnixMilli(), false)
	if err != nil || rep.Invocations != 4 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	if err := e.Store.Compact(); err != nil {
		t.Fatal(err)
	}
	after := dirSize(t, dir)
	t.Logf("gc: %d bytes before, %d after; %d before the progs ran", full, after, empty)
	if after > empty+4<<20 {
		t.Errorf("after gc the store takes %d bytes, %d more than before the progs ran", after, after-empty)
	}
}
