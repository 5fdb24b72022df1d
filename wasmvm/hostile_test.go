// hostile_test.go runs fake guests (testdata/guests, built here) that spin,
// grow without end or answer garbage: each is stopped with a clear error in
// bounded time, and the host goes on serving.

package wasmvm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/wasmvm/fuel"
)

var (
	fakesOnce sync.Once
	fakes     = map[string][]byte{}
	fakesErr  error
)

// fakeGuest builds testdata/guests/NAME for wasip1 and meters it.
func fakeGuest(t *testing.T, name string) []byte {
	t.Helper()
	fakesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fake-guests")
		if err != nil {
			fakesErr = err
			return
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, g := range []string{"spin", "grow", "garbage"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := filepath.Join(dir, g+".wasm")
				cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./testdata/guests/"+g)
				cmd.Dir = ".."
				cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
				msg, err := cmd.CombinedOutput()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fakesErr = errors.New(string(msg))
					return
				}
				raw, err := os.ReadFile(out)
				if err == nil {
					fakes[g], err = fuel.Inject(raw)
				}
				if err != nil {
					fakesErr = err
				}
			}()
		}
		wg.Wait()
	})
	if fakesErr != nil {
		t.Fatalf("building fake guests: %v", fakesErr)
	}
	return fakes[name]
}

func fakeRuntime(t *testing.T, name string, cfg Config) *Runtime {
	t.Helper()
	cfg.Module = fakeGuest(t, name)
	cfg.CacheDir = filepath.Join(os.TempDir(), "wasmvm-fakes")
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// stillServes runs a prog on the real sandbox, to show the host is fine.
func stillServes(t *testing.T) {
	t.Helper()
	sb := testRuntime(t)
	ctx := context.Background()
	cp, err := sb.Start(ctx, port.Input{Source: []byte("return 6 * 7")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sb.Step(ctx, port.Request{Checkpoint: cp})
	if err != nil || r.Kind != port.Done {
		t.Fatalf("the real sandbox stopped serving: %v %v", r, err)
	}
}

func TestSpinningGuest(t *testing.T) {
	r := fakeRuntime(t, "spin", Config{Fuel: 50_000_000})
	for i := 0; i < 2; i++ { // a second call gets a fresh instance and the same answer
		start := time.Now()
		_, err := r.Load(context.Background(), []byte("return 1"))
		if !errors.Is(err, ErrFuel) {
			t.Fatalf("got %v, want ErrFuel", err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("took %v to stop", d) // generous: this machine is shared
		}
	}
	stillServes(t)
}

func TestGrowingGuest(t *testing.T) {
	r := fakeRuntime(t, "grow", Config{MemoryLimitPages: 1024}) // 64 MiB
	_, err := r.Load(context.Background(), []byte("return 1"))
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("got %v, want a trap for running out of memory", err)
	}
	stillServes(t)
}

func TestGarbageGuest(t *testing.T) {
	r := fakeRuntime(t, "garbage", Config{})
	ctx := context.Background()
	src := []byte("var n = 0\nwhile n < 100000 { n += 1 }\nreturn n")
	cp, err := r.Start(ctx, port.Input{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Step(ctx, port.Request{Checkpoint: cp, Slice: 100})
	if !errors.Is(err, ErrAnswer) || !strings.Contains(err.Error(), "used grew by 5100 in a step of at most 100") {
		t.Fatalf("lying step: got %v", err)
	}
	for op, want := range map[int]string{
		4: "outside memory",
		5: "undecodable answer",
	} {
		err := r.with(ctx, func(in *instance) error {
			_, err := in.request(ctx, "op", op, []byte("x"))
			return err
		})
		if !errors.Is(err, ErrAnswer) || !strings.Contains(err.Error(), want) {
			t.Errorf("op %d: got %v, want %q", op, err, want)
		}
	}
	stillServes(t)
}

func TestFuelOnTheGuest(t *testing.T) {
	sb, err := New(context.Background(), Config{CacheDir: filepath.Join(os.TempDir(), "wasmvm-fuel"), Fuel: 2_000_000})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	ctx := context.Background()
	src := []byte("var i = 0\nwhile true { i += 1 }")
	cp, err := sb.Start(ctx, port.Input{Source: src, Limit: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	// A small slice fits the fuel of one call; the whole loop does not.
	if _, err := sb.Step(ctx, port.Request{Checkpoint: cp, Slice: 100}); err != nil {
		t.Fatalf("a small slice: %v", err)
	}
	_, err = sb.Step(ctx, port.Request{Checkpoint: cp, Slice: 1 << 40})
	if !errors.Is(err, ErrFuel) {
		t.Fatalf("got %v, want ErrFuel", err)
	}
}
