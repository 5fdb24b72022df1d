// fuel_test.go checks injected modules on hand-written wasm and on the guest.

package fuel

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// module assembles a wasm module from sections (id, body).
func module(secs ...[]byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	for _, s := range secs {
		m = append(m, s[0])
		m = appendU32(m, uint32(len(s)-1))
		m = append(m, s[1:]...)
	}
	return m
}

func sec(id byte, body ...byte) []byte { return append([]byte{id}, body...) }

// loopModule exports count(n i64) -> i64, counting up to n in a loop, and
// fact(n i64) -> i64, recursive. It has one global of its own and a memory
// and data count section, to check indices and verbatim copies.
func loopModule() []byte {
	count := []byte{
		0x01, 0x01, 0x7e, // one local i64 (i)
		0x03, 0x40, // loop
		0x20, 0x01, 0x42, 0x01, 0x7c, 0x21, 0x01, // i = i + 1
		0x20, 0x01, 0x20, 0x00, 0x53, 0x0d, 0x00, // br_if 0 (i < n)
		0x0b,             // end loop
		0x20, 0x01, 0x0b, // i; end
	}
	fact := []byte{
		0x00,
		0x20, 0x00, 0x42, 0x02, 0x53, // n < 2
		0x04, 0x7e, 0x42, 0x01, // if (result i64) 1
		0x05, 0x20, 0x00, 0x20, 0x00, 0x42, 0x01, 0x7d, 0x10, 0x01, 0x7e, // else n * fact(n-1)
		0x0b, 0x0b,
	}
	code := []byte{0x02}
	code = appendU32(code, uint32(len(count)))
	code = append(code, count...)
	code = appendU32(code, uint32(len(fact)))
	code = append(code, fact...)
	return module(
		sec(1, 0x01, 0x60, 0x01, 0x7e, 0x01, 0x7e), // type 0: (i64) -> i64
		sec(3, 0x02, 0x00, 0x00),                   // two functions of type 0
		sec(5, 0x01, 0x00, 0x01),                   // memory min 1
		sec(6, 0x01, 0x7f, 0x00, 0x41, 0x07, 0x0b), // global 0: i32 const 7
		sec(7, 0x02, 0x05, 'c', 'o', 'u', 'n', 't', 0x00, 0x00, 0x04, 'f', 'a', 'c', 't', 0x00, 0x01),
		sec(12, 0x00), // data count 0
		append([]byte{10}, code...),
		sec(11, 0x00), // no data
	)
}

func instantiate(t *testing.T, wasm []byte) api.Module {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	m, err := r.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	return m
}

func TestSameResults(t *testing.T) {
	orig := instantiate(t, loopModule())
	rewritten, err := Inject(loopModule())
	if err != nil {
		t.Fatal(err)
	}
	metered := instantiate(t, rewritten)
	fuel := metered.ExportedGlobal(ExportName).(api.MutableGlobal)
	if got := int64(fuel.Get()); got != InitialFuel {
		t.Fatalf("initial fuel %d, want %d", got, InitialFuel)
	}
	ctx := context.Background()
	for _, n := range []uint64{0, 1, 5, 1000} {
		for _, fn := range []string{"count", "fact"} {
			want, err := orig.ExportedFunction(fn).Call(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			fuel.Set(1 << 40)
			got, err := metered.ExportedFunction(fn).Call(ctx, n)
			if err != nil || got[0] != want[0] {
				t.Fatalf("%s(%d) = %v, %v; want %v", fn, n, got, err, want)
			}
		}
	}
	// count(1000): one function entry and 1000 loop heads.
	fuel.Set(5000)
	if _, err := metered.ExportedFunction("count").Call(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	if left := fuel.Get(); left != 5000-1001 {
		t.Fatalf("fuel left %d, want %d", left, 5000-1001)
	}
}

func TestExhaustionTraps(t *testing.T) {
	rewritten, err := Inject(loopModule())
	if err != nil {
		t.Fatal(err)
	}
	m := instantiate(t, rewritten)
	fuel := m.ExportedGlobal(ExportName).(api.MutableGlobal)
	ctx := context.Background()
	fuel.Set(100)
	_, err = m.ExportedFunction("count").Call(ctx, 1_000_000)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("got %v, want an unreachable trap", err)
	}
	fuel.Set(10)
	if _, err := m.ExportedFunction("fact").Call(ctx, 20); err == nil {
		t.Fatal("recursion did not run out of fuel")
	}
}

func TestNoGlobalOrExportSection(t *testing.T) {
	// A module with one function and no global or export section at all.
	code := []byte{0x01, 0x04, 0x00, 0x03, 0x40, 0x0b, 0x0b}
	code = code[:0]
	body := []byte{0x00, 0x03, 0x40, 0x0b, 0x0b} // loop end end
	code = append([]byte{0x01, byte(len(body))}, body...)
	m := module(sec(1, 0x01, 0x60, 0x00, 0x00), sec(3, 0x01, 0x00), append([]byte{10}, code...))
	out, err := Inject(m)
	if err != nil {
		t.Fatal(err)
	}
	inst := instantiate(t, out)
	if inst.ExportedGlobal(ExportName) == nil {
		t.Fatal("no fuel export")
	}
}

func TestRejects(t *testing.T) {
	for name, m := range map[string][]byte{
		"empty":     nil,
		"bad magic": []byte("\x00asm\x02\x00\x00\x00"),
		"truncated": loopModule()[:30],
		"bad op":    module(sec(1, 0x01, 0x60, 0x00, 0x00), sec(3, 0x01, 0x00), sec(10, 0x01, 0x03, 0x00, 0xff, 0x0b)),
		"order":     module(sec(3, 0x01, 0x00), sec(1, 0x01, 0x60, 0x00, 0x00)),
	} {
		if _, err := Inject(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	twice, _ := Inject(loopModule())
	if _, err := Inject(twice); err == nil {
		t.Error("injected twice")
	}
}

// TestGuest injects the Rune guest and checks that wazero compiles it.
func TestGuest(t *testing.T) {
	raw, err := os.ReadFile("../guest.raw.wasm")
	if err != nil {
		raw, err = os.ReadFile("../guest.wasm")
		if err != nil {
			t.Fatalf("no guest to inject: %v", err)
		}
	}
	if _, err := Inject(raw); err != nil && !strings.Contains(err.Error(), "already exports") {
		t.Fatal(err)
	}
}

// With safepoints, results and fuel are the same as without, every
// safepoint enters the host (memory.grow), and a count the host sets to 0
// stops the module at its next check.
func TestSafepoints(t *testing.T) {
	orig := instantiate(t, loopModule())
	rewritten, err := InjectWith(loopModule(), Options{Safepoint: 64})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := Inject(loopModule())
	if string(rewritten) == string(plain) {
		t.Fatal("the option changed nothing")
	}
	m := instantiate(t, rewritten)
	fuel := m.ExportedGlobal(ExportName).(api.MutableGlobal)
	ctx := context.Background()
	for _, n := range []uint64{0, 1, 5, 1000} {
		for _, fn := range []string{"count", "fact"} {
			want, _ := orig.ExportedFunction(fn).Call(ctx, n)
			fuel.Set(1 << 40)
			got, err := m.ExportedFunction(fn).Call(ctx, n)
			if err != nil || got[0] != want[0] {
				t.Fatalf("%s(%d) = %v, %v; want %v", fn, n, got, err, want)
			}
		}
	}
	// count(1000) takes 1001 checks: 1001 fuel is enough, 1000 is not.
	for _, start := range []uint64{1001, 1001 + 64*3, 5000} {
		fuel.Set(start)
		if _, err := m.ExportedFunction("count").Call(ctx, 1000); err != nil || fuel.Get() != start-1001 {
			t.Fatalf("%d fuel: %v, left %d", start, err, fuel.Get())
		}
	}
	for _, start := range []uint64{1000, 64, 63, 1} {
		fuel.Set(start)
		if _, err := m.ExportedFunction("count").Call(ctx, 1000); err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("%d fuel: %v", start, err)
		}
	}
	// The host's 0 stops it at the next check.
	fuel.Set(0)
	if _, err := m.ExportedFunction("count").Call(ctx, 1000); err == nil {
		t.Fatal("a count of 0 did not stop it")
	}
	// Every 64 units the module grows its memory by nothing.
	if !strings.Contains(string(rewritten), string([]byte{0x41, 0x00, 0x40, 0x00, 0x1a})) {
		t.Fatal("no memory.grow in the check")
	}
	if _, err := InjectWith(loopModule(), Options{Safepoint: 48}); err == nil {
		t.Fatal("a safepoint that is not a power of two")
	}
	// Without a memory, the plain check.
	body := []byte{0x00, 0x03, 0x40, 0x0b, 0x0b}
	noMem := module(sec(1, 0x01, 0x60, 0x00, 0x00), sec(3, 0x01, 0x00), append([]byte{10, 0x01, byte(len(body))}, body...))
	a, _ := Inject(noMem)
	b, err := InjectWith(noMem, Options{Safepoint: 64})
	if err != nil || string(a) != string(b) {
		t.Fatalf("without memory: %v", err)
	}
}

func FuzzInject(f *testing.F) {
	f.Add(loopModule())
	f.Fuzz(func(t *testing.T, m []byte) {
		out, err := Inject(m)
		if err != nil {
			return
		}
		if len(out) < len(m) {
			t.Fatal("output shorter than input")
		}
		if sp, err := InjectWith(m, Options{Safepoint: 1 << 20}); err != nil || len(sp) < len(out) {
			t.Fatalf("with safepoints: %v", err)
		}
	})
}
