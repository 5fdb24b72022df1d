// jit.go holds compiled progs: each program's bytecode compiled to wasm
// (guest/wasmgen) once, and instantiated beside each guest instance on its
// memory.

package wasmvm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/wasmgen"
	"github.com/runehost/runehost/wasmvm/fuel"
)

// jitCode is one program's compiled module, or why it has none, once done
// is closed.
type jitCode struct {
	done   chan struct{}
	mod    wazero.CompiledModule
	digest uint64
	fns    []byte // 1 for each function compiled, 0 for one handed over whole
	err    error
}

// jitMax bounds the compiled modules a Runtime keeps in memory;
// jitPerInstance, the programs bound on one instance (a variable for
// tests).
const jitMax = 256

var jitPerInstance = 64

// compileAfter is the most steps a run takes in the interpreter before its
// program is compiled (or compileRuns runs have started): most runs are
// short or wait on acts, and would spend more compiling than they save.
// The compile runs beside the interpreter, which goes on until the code is
// ready; later runs of the program, in this process or (kept on disk) the
// next, use the code from their first step.
const compileAfter = 100_000

// compileAt is how many steps a run of source takes before its program is
// compiled: a compile costs about as much as interpreting a few dozen
// steps per byte of source (docs/BENCHMARKS.md, "Compiled progs"), so a
// small prog is compiled as soon as a run has shown it is not short.
func compileAt(source []byte) uint64 {
	return min(compileAfter, max(compileAtLeast, 32*uint64(len(source))))
}

// compileAtLeast is the fewest steps before a compile: below it a run is
// over in well under a millisecond.
const compileAtLeast = 8_192

// compileRuns is how many runs of a program start before it is compiled,
// however short they are.
const compileRuns = 16

// code returns the compiled module for the program of hash, whose compile
// starts on first use.
func (r *Runtime) code(hash [32]byte) *jitCode {
	r.mu.Lock()
	defer r.mu.Unlock()
	if jc, ok := r.jit[hash]; ok {
		return jc
	}
	if len(r.jitOrder) >= jitMax {
		old := r.jitOrder[0]
		r.jitOrder = r.jitOrder[1:]
		delete(r.jit, old) // instances that use it keep theirs
	}
	jc := &jitCode{done: make(chan struct{})}
	r.jit[hash] = jc
	r.jitOrder = append(r.jitOrder, hash)
	source := r.sources[hash]
	switch {
	case r.closed:
		jc.err = ErrClosed
		close(jc.done)
	case source == nil:
		jc.err = fmt.Errorf("no source")
		close(jc.done)
	default:
		r.compiling.Add(1)
		go func() {
			defer r.compiling.Done()
			defer close(jc.done)
			jc.compile(context.Background(), r.rt, source, CacheDirOf(r.cfg.CacheDir))
		}()
	}
	return jc
}

// Compile compiles source's prog to wasm now, and waits, so that its runs
// use compiled code from their first step (otherwise a prog is compiled
// once a run has taken compileAt steps). It reports why the prog cannot
// run; one the compiler does not take is interpreted, without error.
func (r *Runtime) Compile(ctx context.Context, source []byte) error {
	if _, err := r.Load(ctx, source); err != nil {
		return err
	}
	if r.cfg.Interpret {
		return nil
	}
	jc := r.code(compile.HashSource(source))
	select {
	case <-jc.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if errors.Is(jc.err, ErrClosed) {
		return jc.err
	}
	return nil
}

// compile compiles source's program to a module of rt, keeping the wasm
// under dir (none if "") for the next process.
func (jc *jitCode) compile(ctx context.Context, rt wazero.Runtime, source []byte, dir string) {
	path := jitPath(dir, source)
	if path != "" {
		if digest, fns, bin, err := readJit(path); err == nil {
			if mod, err := rt.CompileModule(ctx, bin); err == nil {
				jc.digest, jc.fns, jc.mod = digest, fns, mod
				return
			}
		}
	}
	p, err := compile.Compile(source)
	if err != nil {
		jc.err = err
		return
	}
	bin, err := wasmgen.Compile(p, machine.TheLayout)
	if err != nil {
		jc.err = err
		return
	}
	// Metered as the guest is: compiled code spends the call's fuel.
	if bin, err = fuel.Inject(bin); err != nil {
		jc.err = err
		return
	}
	jc.digest = p.Digest()
	jc.fns = wasmgen.Compiled(p)
	// wazero compiles the functions on as many goroutines as there are
	// CPUs: the run it is for goes on interpreted meanwhile.
	jc.mod, jc.err = rt.CompileModule(experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0)), bin)
	if jc.err == nil && path != "" {
		writeJit(path, jc.digest, jc.fns, bin)
	}
}

// bindLater is bind's answer while a program is not compiled (yet).
const bindLater = 1<<32 - 1

// jitSlot is one program's compiled code instantiated on an instance.
type jitSlot struct {
	hash  [32]byte // the program's
	mod   api.Module
	enter api.Function
	fuel  api.MutableGlobal
}

// bind answers the guest's bind: the slot (from 1) of the program's
// compiled code on this instance, 0 to interpret it, or bindLater to ask
// again later in the run.
func (in *instance) bind(ctx context.Context, hash [32]byte, layout []uint32, digest uint64, fns []byte, steps uint64) uint32 {
	r := in.r
	if r.cfg.Interpret || !slices.Equal(layout, machine.TheLayout.Words()) {
		return 0
	}
	r.mu.Lock()
	jc := r.jit[hash]
	hot := false
	var source []byte
	if jc == nil {
		source = r.sources[hash]
	}
	if jc == nil && steps == 0 { // a run's start
		if len(r.jitStarts) >= 4*jitMax {
			clear(r.jitStarts)
		}
		r.jitStarts[hash]++
		hot = r.jitStarts[hash] >= compileRuns
	}
	r.mu.Unlock()
	// A module kept on disk by an earlier process is bound before the
	// first step: reading it is no compile, and what it saves is the run.
	kept := jc == nil && !hot && steps == 0 && source != nil && keptOnDisk(CacheDirOf(r.cfg.CacheDir), source)
	if jc == nil {
		if steps < compileAt(source) && !hot && !kept && !r.cfg.jitSync {
			return bindLater // compiled already or not at all, for a short run
		}
		jc = r.code(hash)
	}
	if r.cfg.jitSync || kept {
		<-jc.done
	}
	select {
	case <-jc.done:
	default:
		return bindLater
	}
	if jc.err != nil || jc.digest != digest || len(fns) != len(jc.fns) {
		return 0
	}
	if len(in.jit) >= jitPerInstance {
		in.full = true // replaced by a fresh instance once it is idle
		return 0
	}
	copy(fns, jc.fns)
	guest := in.mod
	cctx := experimental.WithImportResolver(ctx, func(name string) api.Module {
		if name == "guest" {
			return guest
		}
		return nil
	})
	mod, err := r.rt.InstantiateModule(cctx, jc.mod, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return 0
	}
	g, _ := mod.ExportedGlobal(fuel.ExportName).(api.MutableGlobal)
	enter := mod.ExportedFunction("enter")
	if g == nil || enter == nil {
		mod.Close(ctx)
		return 0
	}
	in.jit = append(in.jit, jitSlot{hash: hash, mod: mod, enter: enter, fuel: g})
	return uint32(len(in.jit))
}

// jitModule defines the guest's imports for compiled code.
func (r *Runtime) jitModule(ctx context.Context) error {
	bind := func(ctx context.Context, mod api.Module, stack []uint64) {
		in, _ := ctx.Value(instanceKey{}).(*instance)
		hashPtr, layoutPtr, layoutLen, digest := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), stack[3]
		fnsPtr, fnsLen, steps := uint32(stack[4]), uint32(stack[5]), stack[6]
		stack[0] = 0
		if in == nil || layoutLen > 256 {
			return
		}
		h, ok1 := mod.Memory().Read(hashPtr, 32)
		lb, ok2 := mod.Memory().Read(layoutPtr, layoutLen*4)
		fns, ok3 := mod.Memory().Read(fnsPtr, fnsLen)
		if !ok1 || !ok2 || !ok3 {
			return
		}
		layout := make([]uint32, layoutLen)
		for i := range layout {
			layout[i] = binary.LittleEndian.Uint32(lb[4*i:])
		}
		stack[0] = uint64(in.bind(ctx, [32]byte(h), layout, digest, fns, steps))
	}
	enter := func(ctx context.Context, mod api.Module, stack []uint64) {
		in, _ := ctx.Value(instanceKey{}).(*instance)
		slot := uint32(stack[0])
		if in == nil || slot == 0 || slot > uint32(len(in.jit)) {
			return // the guest interprets on
		}
		if in.r.cfg.jitSkip != nil && in.r.cfg.jitSkip() {
			return // tests: hand back at once, as at a block that does not fit
		}
		in.r.jitEnters.Add(1)
		j := &in.jit[slot-1]
		if in.fuel != nil {
			j.fuel.Set(in.fuel.Get()) // the call's fuel, spent by both
		}
		in.jitStack[0], in.jitStack[1] = stack[1], stack[2]
		err := j.enter.CallWithStack(ctx, in.jitStack[:])
		if in.fuel != nil {
			in.fuel.Set(j.fuel.Get())
		}
		if err != nil {
			panic(fmt.Errorf("compiled code: %w", err)) // a trap of the guest's call
		}
		if in.r.cfg.Profile {
			in.r.noteHandBack(mod.Memory(), j.hash, uint32(stack[1]), stack[2])
		}
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := r.rt.NewHostModuleBuilder("rune_jit").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(bind), []api.ValueType{i32, i32, i32, i64, i32, i32, i64}, []api.ValueType{i32}).Export("bind").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(enter), []api.ValueType{i32, i32, i64}, nil).Export("enter").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("wasmvm: jit module: %w", err)
	}
	return nil
}
