// wasmvm_test.go checks the sandbox against the native machine, byte for byte.

package wasmvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/modules"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/guest/port/porttest"
)

var (
	sharedOnce sync.Once
	shared     *Runtime
	sharedErr  error
)

// testRuntime is one sandbox for the package's tests (compiling the guest
// takes a second or two, once per machine).
func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	sharedOnce.Do(func() {
		// A fixed directory, so that runs after the first find the guest compiled.
		dir := filepath.Join(os.TempDir(), "runehost-test-wazero-cache")
		// Compiled code from the first step, not after compileAfter.
		shared, sharedErr = New(context.Background(), Config{CacheDir: dir, jitSync: true})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func sameResult(a, b *port.Result) string {
	switch {
	case a.Kind != b.Kind:
		return "kind " + a.Kind.String() + " vs " + b.Kind.String()
	case a.Used != b.Used:
		return "used"
	case !bytes.Equal(a.Checkpoint, b.Checkpoint):
		return "checkpoint bytes"
	case !bytes.Equal(a.Result, b.Result) || !bytes.Equal(a.Args, b.Args) || a.Tag != b.Tag || a.Seq != b.Seq:
		return "result, args, tag or seq"
	case !reflect.DeepEqual(a.Err, b.Err):
		return "error"
	case len(a.Emits) != len(b.Emits):
		return "emits"
	}
	for i := range a.Emits {
		if a.Emits[i].Kind != b.Emits[i].Kind || !bytes.Equal(a.Emits[i].Data, b.Emits[i].Data) {
			return "emits"
		}
	}
	return ""
}

// TestDifferential runs every testdata prog natively and in the sandbox,
// in lockstep, at every slice size of the slicing property: every step must
// give the same result and byte-identical checkpoints, with a checkpoint at
// every slice and with checkpoints at arbitrary slices only. make test
// leaves out all but one of the smallest sizes of the longest progs
// (porttest.SizesFor); RUNEHOST_LONG=1 (make test-long) runs them all.
func TestDifferential(t *testing.T) {
	sb := testRuntime(t)
	native := port.NewNative()
	native.NoReuse = true // natively, decode every checkpoint; the sandbox keeps machines live
	ctx := context.Background()
	for _, file := range porttest.ProgFiles(t, "..") {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := readProg(t, file)
			s := porttest.ParseScript(t, src)
			if s.CompileErr != "" {
				_, errN := native.Load(ctx, src)
				_, errW := sb.Load(ctx, src)
				if errN == nil || errW == nil || errN.Error() != errW.Error() {
					t.Fatalf("compile errors differ: native %v, sandbox %v", errN, errW)
				}
				return
			}
			sizes := porttest.SizesFor(t, name, unslicedUsed(t, native, name, src, s))
			if testing.Short() {
				sizes = []uint64{7, 1000}
			}
			for _, size := range sizes {
				inv := fmt.Sprintf("%s/%d", name, size) // subtests run in parallel: live machines apart
				in := port.Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: inv}
				cpN, err := native.Start(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				cpW, err := sb.Start(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(cpN, cpW) {
					t.Fatal("first checkpoints differ")
				}
				// Every slice checkpointed, then the same slices with
				// checkpoints asked for at arbitrary boundaries (lazy
				// otherwise, the machines live in between): each one taken
				// is the one of the same slice in the first run.
				var full [][]byte
				for _, mixed := range []bool{false, true} {
					rng := rand.New(rand.NewPCG(uint64(size), uint64(len(src))))
					req := port.Request{Checkpoint: cpN, Slice: size, Clock: s.Clock}
					suspended := 0
					for step := 0; ; step++ {
						rN, err := native.Step(ctx, req)
						if err != nil {
							t.Fatalf("native step %d: %v", step, err)
						}
						rW, err := sb.Step(ctx, req)
						if err != nil {
							t.Fatalf("sandbox step %d: %v", step, err)
						}
						if d := sameResult(rN, rW); d != "" {
							t.Fatalf("slice %d, step %d (mixed %v): %s differ", size, step, mixed, d)
						}
						if !mixed {
							full = append(full, rN.Checkpoint)
						} else if rN.Checkpoint != nil && (step >= len(full) || !bytes.Equal(rN.Checkpoint, full[step])) {
							t.Fatalf("slice %d, step %d: the checkpoint taken after lazy slices differs from the one of every slice checkpointed", size, step)
						} else if rN.Checkpoint == nil && rN.Kind != port.Yield {
							t.Fatalf("slice %d, step %d: a %s without a checkpoint", size, step, rN.Kind)
						}
						req = port.Request{Checkpoint: rN.Checkpoint, Slice: size, Clock: s.Clock, Lazy: mixed && rng.IntN(3) > 0}
						if rN.Checkpoint == nil {
							req.Invocation = inv
						}
						switch rN.Kind {
						case port.Act, port.Event:
							req.Reply = s.Suspends[suspended].Reply
							suspended++
						case port.Done, port.Error:
							step = -1
						}
						if step < 0 {
							break
						}
					}
				}
			}
		})
	}
}

// unslicedUsed runs a testdata prog natively in one slice, answering its
// suspensions from its script, and returns the steps it used.
func unslicedUsed(t *testing.T, native port.RuntimePort, name string, src []byte, s *porttest.Script) uint64 {
	t.Helper()
	ctx := context.Background()
	inv := name + "/unsliced"
	cp, err := native.Start(ctx, port.Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: inv})
	if err != nil {
		t.Fatal(err)
	}
	req := port.Request{Checkpoint: cp, Slice: porttest.Unsliced, Clock: s.Clock}
	for suspended := 0; ; {
		r, err := native.Step(ctx, req)
		if err != nil {
			t.Fatalf("unsliced: %v", err)
		}
		req = port.Request{Checkpoint: r.Checkpoint, Slice: porttest.Unsliced, Clock: s.Clock}
		switch r.Kind {
		case port.Act, port.Event:
			if suspended >= len(s.Suspends) {
				t.Fatalf("unsliced: %s after the last act or await of the script", r.Kind)
			}
			req.Reply = s.Suspends[suspended].Reply
			suspended++
		case port.Done, port.Error:
			return r.Used
		}
	}
}

func TestInlineActs(t *testing.T) {
	ctx := context.Background()
	reply, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: "inline"})
	var got []string
	var mu sync.Mutex
	sb, err := New(ctx, Config{CacheDir: os.TempDir() + "/wasmvm-inline", OnAct: func(_ context.Context, tag string, args []byte, seq uint64) ([]byte, bool) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, tag)
		return reply, tag != "stop"
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	src := []byte(`let a = act "one" {}
let b = act "two" {n: 2}
let c = act "stop" {}
return [a, b, c]`)
	cp, err := sb.Start(ctx, port.Input{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sb.Step(ctx, port.Request{Checkpoint: cp, Slice: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != port.Act || r.Tag != "stop" || r.Seq != 3 || !reflect.DeepEqual(got, []string{"one", "two", "stop"}) {
		t.Fatalf("got %s %s %d, acts %v", r.Kind, r.Tag, r.Seq, got)
	}
	final, _ := checkpoint.EncodeReply(checkpoint.Reply{Value: "late"})
	r, err = sb.Step(ctx, port.Request{Checkpoint: r.Checkpoint, Reply: final, Slice: 1000})
	if err != nil || r.Kind != port.Done || porttest.JSONOf(t, r.Result) != `["inline","inline","late"]` {
		t.Fatalf("got %v %v", r, err)
	}
}

// TestLazy runs every prog in lazy 7-step slices in the sandbox and compares
// the outcome with a checkpointed native run.
func TestLazy(t *testing.T) {
	sb := testRuntime(t)
	ctx := context.Background()
	for _, file := range porttest.ProgFiles(t, "..") {
		name := strings.TrimSuffix(filepath.Base(file), ".rune")
		t.Run(name, func(t *testing.T) {
			src := readProg(t, file)
			s := porttest.ParseScript(t, src)
			if s.CompileErr != "" {
				return
			}
			run := func(rt port.RuntimePort, lazy bool) (*port.Result, int) {
				inv := "lazy-" + name
				cp, err := rt.Start(ctx, port.Input{Source: src, Input: s.Input, State: s.State, Limit: s.Limit, Seed: s.Seed, Invocation: inv})
				if err != nil {
					t.Fatal(err)
				}
				req := port.Request{Checkpoint: cp, Slice: 7, Clock: s.Clock, Lazy: lazy}
				emits, suspended := 0, 0
				for {
					r, err := rt.Step(ctx, req)
					if err != nil {
						t.Fatalf("lazy=%v: %v", lazy, err)
					}
					emits += len(r.Emits)
					req = port.Request{Checkpoint: r.Checkpoint, Slice: 7, Clock: s.Clock, Lazy: lazy}
					if r.Checkpoint == nil {
						req.Invocation = inv
					}
					switch r.Kind {
					case port.Act, port.Event:
						req.Reply = s.Suspends[suspended].Reply
						suspended++
					case port.Done, port.Error:
						return r, emits
					}
				}
			}
			native := port.NewNative()
			native.NoReuse = true
			want, wantEmits := run(native, false)
			got, gotEmits := run(sb, true)
			if d := sameResult(want, got); d != "" || wantEmits != gotEmits {
				t.Fatalf("lazy sandbox run differs: %s (emits %d vs %d)", d, gotEmits, wantEmits)
			}
		})
	}
}

func TestLazyExpired(t *testing.T) {
	sb := testRuntime(t)
	_, err := sb.Step(context.Background(), port.Request{Invocation: "nobody"})
	if !errors.Is(err, port.ErrExpired) {
		t.Fatalf("got %v, want ErrExpired", err)
	}
}

// readProg reads a testdata prog with the modules it imports, as the host gives it.
func readProg(t testing.TB, file string) []byte {
	src, err := modules.Load(file, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return src
}
