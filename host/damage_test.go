// damage_test.go checks that an unreadable record fails only the
// invocation or grant it belongs to, that work meeting the disk reserve is
// paused and resumable, and that VerifyRecords finds each kind of damage.

package host

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/store"
)

// garbage is a record that does not decode: a truncated map.
var garbage = []byte{0xa2, 0x01}

// three admits r1 (waiting), r2 (completed) and r3 (waiting).
func three(t *testing.T) *Engine {
	t.Helper()
	e, _ := parked(t)
	if out, err := e.Start(context.Background(), "r2", "q", []byte(`return 2`), nil, 100_000, 1); err != nil || out.Status != Completed {
		t.Fatalf("r2: %+v %v", out, err)
	}
	if out, err := e.Start(context.Background(), "r3", "p3", []byte(waitProg), nil, 100_000, 1); err != nil || out.Status != Waiting {
		t.Fatalf("r3: %+v %v", out, err)
	}
	return e
}

func TestDamagedInvocationListed(t *testing.T) {
	e := three(t)
	putRaw(t, e, invKey("r1"), garbage)
	invs, err := e.List()
	if err != nil || len(invs) != 3 {
		t.Fatalf("list: %d, %v", len(invs), err)
	}
	shown, err := e.Project(invs)
	if err != nil || shown["r1"] != Damaged || shown["r2"] != "completed" || shown["r3"] != "waiting" {
		t.Fatalf("project: %v %v", shown, err)
	}
	if !strings.Contains(invs[0].Damage, "inv/r1") {
		t.Fatalf("r1's damage: %q", invs[0].Damage)
	}
	in, err := e.Inspect("r1")
	if err != nil || len(in.Damage) != 1 || in.Header == nil || in.Allowance.Limit == 0 {
		t.Fatalf("inspect r1: %+v %v", in, err)
	}
	// The others go on.
	if out, err := e.Send(context.Background(), "r3", "go", data(t, int64(1))); err != nil || out.Status != Completed {
		t.Fatalf("r3: %+v %v", out, err)
	}
	if _, err := e.Inspect("r9"); !errors.Is(err, ErrNoSuchInvocation) {
		t.Fatalf("no such invocation: %v", err)
	}
}

func TestDamagedCheckpointInspectable(t *testing.T) {
	e := three(t)
	putRaw(t, e, cpKey("r3"), garbage)
	in, err := e.Inspect("r3")
	if err != nil || in.Header != nil || len(in.Damage) != 1 || !strings.Contains(in.Damage[0], "cp/r3") ||
		in.Invocation.Status != Waiting || in.Prog == nil || len(in.Operations) != 1 || in.Allowance.Limit == 0 {
		t.Fatalf("inspect: %+v %v", in, err)
	}
	// Driving it pauses it with the reason; the others are untouched.
	if _, err := e.Send(context.Background(), "r3", "go", data(t, int64(1))); err == nil {
		t.Fatal("a corrupt checkpoint drove")
	}
	if i, _ := e.invs.get("r3"); !strings.Contains(i.Paused, "stored checkpoint") {
		t.Fatalf("r3 not paused: %+v", i)
	}
	if out, err := e.Send(context.Background(), "r1", "go", data(t, int64(1))); err != nil || out.Status != Completed {
		t.Fatalf("r1: %+v %v", out, err)
	}
}

func TestDamagedOperationInspectable(t *testing.T) {
	e := three(t)
	putRaw(t, e, OpID{"r3", 1}.key(), garbage)
	in, err := e.Inspect("r3")
	if err != nil || in.Header == nil || len(in.Damage) != 1 || !strings.Contains(in.Damage[0], "op/r3/") {
		t.Fatalf("inspect: %+v %v", in, err)
	}
}

func TestDamagedAllowanceProjected(t *testing.T) {
	e := three(t)
	// r4: admitted, runnable.
	e.Quantum = 1
	if _, err := e.Start(context.Background(), "r4", "p4", []byte(`var i = 0
while i < 100000 { i += 1 }`), nil, 10_000_000, 1); err != nil {
		t.Fatal(err)
	}
	putRaw(t, e, allowanceKey("r4"), garbage)
	invs, _ := e.List()
	shown, err := e.Project(invs)
	if err != nil || shown["r4"] != Damaged || shown["r1"] != "waiting" {
		t.Fatalf("project: %v %v", shown, err)
	}
}

func TestDamagedGrant(t *testing.T) {
	e := engine(t, memStore(t), 1)
	w := e.Ward()
	w.Grant("p", "calc")
	w.Grant("p", "fs.read:/x")
	putRaw(t, e, grantKey("p", "calc"), garbage)
	gs, err := w.List("")
	if err != nil || len(gs) != 3 {
		t.Fatalf("list: %+v %v", gs, err)
	}
	var damaged *Grant
	for i := range gs {
		if gs[i].Damage != "" {
			damaged = &gs[i]
		}
	}
	if damaged == nil || damaged.Subject != "p" || damaged.Statement != "calc" || !strings.Contains(damaged.Damage, "grant/p/calc") {
		t.Fatalf("the damaged grant: %+v", gs)
	}
	if got, err := w.For("p", "calc"); err != nil || len(got) != 1 || got[0].Subject != AnyProg {
		t.Fatalf("for: an unreadable grant allows nothing: %+v %v", got, err)
	}
	// Granting it again repairs it; revoking removes it.
	if _, err := w.Grant("p", "calc"); err != nil {
		t.Fatalf("grant over it: %v", err)
	}
	if gs, _ := w.List("p"); gs[0].Damage != "" {
		t.Fatalf("not repaired: %+v", gs)
	}
	putRaw(t, e, grantKey("p", "calc"), garbage)
	if ok, err := w.Revoke("p", "calc"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if gs, _ := w.List("p"); len(gs) != 1 || gs[0].Statement != "fs.read:/x" {
		t.Fatalf("after revoke: %+v", gs)
	}
}

func TestGCKeepsDamaged(t *testing.T) {
	e := engine(t, memStore(t), 1)
	for _, id := range []string{"r1", "r2"} {
		if _, err := e.Start(context.Background(), id, "p"+id, []byte(`return 1`), nil, 100_000, 1); err != nil {
			t.Fatal(err)
		}
	}
	putRaw(t, e, invKey("r1"), garbage)
	rep, err := e.GC(1<<62, false)
	if err != nil || rep.Invocations != 1 || len(rep.Damaged) != 1 || !strings.Contains(rep.Damaged[0], "inv/r1") {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	if invs, _ := e.List(); len(invs) != 1 || invs[0].ID != "r1" {
		t.Fatalf("left: %+v", invs)
	}
	// An unreadable operation keeps every blob.
	putRaw(t, e, blobKey("abc"), []byte("x"))
	putRaw(t, e, OpID{"r9", 1}.key(), garbage)
	if rep, err := e.GC(1<<62, false); err != nil || rep.Blobs != 0 || len(rep.Damaged) != 2 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
}

func TestWakeSkipsDamagedWait(t *testing.T) {
	e := engine(t, memStore(t), 1)
	for _, id := range []string{"r1", "r2"} {
		if _, err := e.Start(context.Background(), id, "p"+id, []byte(`return await {key: "x", timeout: 1}`), nil, 100_000, 1); err != nil {
			t.Fatal(err)
		}
	}
	putRaw(t, e, waitKey("r1"), garbage)
	e.Clock = func() int64 { return 1 << 50 }
	n, err := (&Scheduler{E: e}).Wake()
	if err != nil || n != 1 {
		t.Fatalf("woke %d: %v", n, err)
	}
}

// Work that would write past the disk reserve stops cleanly: paused with
// the reason at its last stored step, no act dispatched past it, and it
// resumes to the same result once there is space.
func TestNoSpacePauses(t *testing.T) {
	var full atomic.Bool
	// Full: below the reserve (1 TiB), above the part of it that a pause
	// may use.
	s, err := store.Open(store.Options{Dir: t.TempDir(), Reserve: 1 << 40, FreeSpace: func() (uint64, error) {
		if full.Load() {
			return 1 << 39, nil
		}
		return 1 << 50, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	e.Ward().Grant(AnyProg, "calc")
	calls := 0
	e.Adapters["calc"] = adapterFunc(func() {
		calls++
		if calls == 5 {
			full.Store(true)
			time.Sleep(1100 * time.Millisecond) // the next write measures the space again
		}
	})
	src := []byte(`var t = 0
for i in range(10) { t += act "calc" {n: i} }
return t`)
	_, err = e.Start(context.Background(), "r1", "p", src, nil, 1_000_000, 1)
	if !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("got %v", err)
	}
	i, _ := e.invs.get("r1")
	if i.Status.Terminal() || !strings.Contains(i.Paused, "reserve") {
		t.Fatalf("not paused: %+v", i)
	}
	if calls != 5 {
		t.Fatalf("%d acts dispatched, want 5", calls)
	}
	full.Store(false)
	time.Sleep(1100 * time.Millisecond)
	out, err := e.Resume(context.Background(), "r1")
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if out.Status != Completed || calls != 10 || dataText(out.Result) != "10" {
		t.Fatalf("resumed: %+v %s %v (%d calls)", out, dataText(out.Result), err, calls)
	}
}

// VerifyRecords finds nothing in a sound store, and each unreadable or
// misplaced record of every kind.
func TestVerifyRecords(t *testing.T) {
	e := three(t)
	e.Ward().Grant("p", "calc")
	e.NewInvocationID()
	if _, _, err := Open(e.Store, port.NewNative(), e.Clock); err != nil {
		t.Fatal(err)
	}
	if out, err := e.Send(context.Background(), "r3", "go", data(t, int64(1))); err != nil || out.Status != Completed {
		t.Fatalf("r3: %+v %v", out, err)
	}
	err := e.Store.Update(store.Synced, func(tx *store.Tx) error { // a shared store's records (claim.go, role.go)
		if err := tx.Put(claimKey("r3"), claimRecord{Host: "h1", Epoch: 1}); err != nil {
			return err
		}
		if err := tx.Put(beatKey("h1"), beatRecord{Until: 1}); err != nil {
			return err
		}
		return tx.Put(roleKey("slack"), roleRecord{Host: "h1"})
	})
	if err != nil {
		t.Fatal(err)
	}
	problems, n, err := VerifyRecords(e.Store)
	if err != nil || len(problems) != 0 || n < 20 {
		t.Fatalf("sound: %d records, %v %v", n, problems, err)
	}
	kinds := map[string]bool{}
	e.Store.Records(func(r store.Record) error { kinds[r.Key.Parts()[0]] = true; return nil })
	for kind := range recordKinds {
		if !kinds[kind] && kind != "due" && kind != "kid" && kind != "blob" && kind != "sched" && kind != "open" && kind != "run" && kind != "chk" { // chunks: cpstore_test.go
			t.Errorf("the test store has no %s record", kind)
		}
	}
	var keys []store.Key
	e.Store.Records(func(r store.Record) error {
		if k := r.Key.Parts()[0]; k != "src" && k != "blob" { // raw bytes: anything reads
			keys = append(keys, r.Key)
		}
		return nil
	})
	for _, k := range keys {
		var old []byte
		e.Store.View(func(tx *store.Tx) error { old, _, _ = tx.GetRaw(k); return nil })
		bad := garbage
		if k.Parts()[0] == "inv" {
			bad = old[:len(old)-1]
		}
		putRaw(t, e, k, bad)
		problems, _, err := VerifyRecords(e.Store)
		if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Error(), k.String()) {
			t.Errorf("%s: %v %v", k, problems, err)
		}
		putRaw(t, e, k, old)
	}
	// A record in the wrong place: r2's invocation under r1's key.
	var r2 []byte
	e.Store.View(func(tx *store.Tx) error { r2, _, _ = tx.GetRaw(invKey("r2")); return nil })
	putRaw(t, e, invKey("r1"), r2)
	if problems, _, _ := VerifyRecords(e.Store); len(problems) != 1 || !strings.Contains(problems[0].Error(), `names "r2"`) {
		t.Errorf("misplaced: %v", problems)
	}
	putRaw(t, e, store.K("what", "x"), []byte{0xf5})
	if problems, _, _ := VerifyRecords(e.Store); len(problems) != 2 {
		t.Errorf("unknown kind: %v", problems)
	}
}

// An invocation with a damaged record can be cancelled.
func TestCancelDamaged(t *testing.T) {
	for _, key := range []func(string) store.Key{cpKey, allowanceKey, waitKey} {
		e := three(t)
		k := key("r3")
		putRaw(t, e, k, garbage)
		if err := e.Cancel("r3"); err != nil {
			t.Errorf("cancel beside %s: %v", k, err)
			continue
		}
		if i, _ := e.invs.get("r3"); i.Status != Cancelled {
			t.Errorf("%s: %+v", k, i)
		}
	}
}

// An operator's command on a disk under the reserve refuses with nothing
// written, or does what it says: above the reserve's floor a cancel goes
// through, its ending events with it; under the floor it is refused and
// the invocation is as it was. A resume or a send, which would run work,
// is refused under the reserve.
func TestOperatorCommandsUnderTheReserve(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 50)
	s, err := store.Open(store.Options{Dir: t.TempDir(), Reserve: 1 << 40, FreeSpace: func() (uint64, error) { return free.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	ctx := context.Background()
	for _, inv := range []string{"r1", "r2"} {
		if out, err := e.Start(ctx, inv, "p", []byte(`return await {key: "go"}`), nil, 100_000, 1); err != nil || out.Status != Waiting {
			t.Fatalf("%s: %+v %v", inv, out, err)
		}
	}
	logged := func(inv string) int {
		evs, err := e.Events(inv, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	before := logged("r1")
	status := func(inv string) Status {
		i, err := e.invs.get(inv)
		if err != nil {
			t.Fatal(err)
		}
		return i.Status
	}
	// Under the floor (an eighth of the reserve): refused, nothing written.
	free.Store(1 << 36)
	if err := e.Cancel("r1"); !errors.Is(err, store.ErrNoSpace) || !strings.Contains(err.Error(), "nothing done") {
		t.Fatalf("cancel under the floor: %v", err)
	}
	if st, n := status("r1"), logged("r1"); st != Waiting || n != before {
		t.Fatalf("after the refused cancel: %s, %d events (%d before)", st, n, before)
	}
	// Under the reserve, above its floor: work is not started, and a
	// cancel is done, its events logged.
	free.Store(1 << 39)
	if _, err := e.Resume(ctx, "r2"); !errors.Is(err, store.ErrNoSpace) || !strings.Contains(err.Error(), "nothing done") {
		t.Fatalf("resume under the reserve: %v", err)
	}
	if _, err := e.Send(ctx, "r2", "go", data(t, int64(1))); !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("send under the reserve: %v", err)
	}
	if i, _ := e.invs.get("r2"); i.Status != Waiting || i.Paused != "" {
		t.Fatalf("r2 after the refused resume and send: %+v", i)
	}
	if err := e.Cancel("r1"); err != nil {
		t.Fatalf("cancel under the reserve: %v", err)
	}
	if st, n := status("r1"), logged("r1"); st != Cancelled || n <= before {
		t.Fatalf("after the cancel: %s, %d events (%d before)", st, n, before)
	}
}
