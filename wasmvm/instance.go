// instance.go holds one warm guest instance and the host module it imports.

package wasmvm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/wasmvm/fuel"
)

type instance struct {
	r        *Runtime
	mod      api.Module
	buf      api.Function
	call     api.Function
	fuel     api.MutableGlobal
	mem      api.Memory
	stderr   *tail
	loaded   map[[32]byte]bool // programs the guest has compiled
	held     []byte            // an act reply waiting for act_reply
	stack    []uint64          // reused for CallWithStack
	jit      []jitSlot         // compiled progs bound on this instance, by slot-1
	full     bool              // it has bound jitPerInstance progs
	jitStack [2]uint64

	// Under Runtime.mu:
	lives  int  // live machines of lazy Yields this instance holds
	closed bool // discarded: its live machines are gone
}

type instanceKey struct{}

func (r *Runtime) instantiate(ctx context.Context) (*instance, error) {
	stderr := &tail{max: maxStderr}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithStderr(stderr).
		WithRandSource(zeroReader{}) // the guest's Go runtime seeds its maps from this
	mod, err := r.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, memoryAllocator), r.compiled, cfg)
	if err != nil {
		return nil, &GuestError{Op: "instantiate", Err: ErrTrap, Detail: err.Error(), Stderr: stderr.String()}
	}
	in := &instance{r: r, mod: mod, stderr: stderr, loaded: make(map[[32]byte]bool), stack: make([]uint64, 2)}
	in.buf, in.call, in.mem = mod.ExportedFunction("buf"), mod.ExportedFunction("call"), mod.Memory()
	g, _ := mod.ExportedGlobal(fuel.ExportName).(api.MutableGlobal)
	if in.buf == nil || in.call == nil || in.mem == nil {
		mod.Close(ctx)
		return nil, errExports
	}
	if g == nil && !r.cfg.unmetered {
		mod.Close(ctx)
		return nil, errNoFuel
	}
	if g != nil {
		in.fuel = g
	}
	return in, nil
}

func (in *instance) close(ctx context.Context) {
	for _, j := range in.jit {
		j.mod.Close(ctx)
	}
	in.mod.Close(ctx)
}

// bad reports a malformed answer; the instance will be discarded.
func (in *instance) bad(op string, err error) error {
	return &GuestError{Op: op, Err: ErrAnswer, Detail: err.Error()}
}

// invoke passes arg to the guest for operation op and returns a copy of its answer.
func (in *instance) invoke(ctx context.Context, opName string, op int, arg []byte) ([]byte, error) {
	ctx = context.WithValue(ctx, instanceKey{}, in)
	if in.fuel != nil {
		in.fuel.Set(uint64(in.r.cfg.Fuel))
	}
	in.stack[0] = uint64(len(arg))
	if err := in.buf.CallWithStack(ctx, in.stack); err != nil {
		return nil, in.trap(opName, err)
	}
	ptr := uint32(in.stack[0])
	if !in.mem.Write(ptr, arg) {
		return nil, &GuestError{Op: opName, Err: ErrAnswer, Detail: fmt.Sprintf("buf(%d) gave %#x, outside memory", len(arg), ptr)}
	}
	in.stack[0], in.stack[1] = uint64(op), uint64(len(arg))
	if err := in.call.CallWithStack(ctx, in.stack); err != nil {
		return nil, in.trap(opName, err)
	}
	p, n := uint32(in.stack[0]>>32), uint32(in.stack[0])
	if n > port.MaxWire {
		return nil, &GuestError{Op: opName, Err: ErrAnswer, Detail: fmt.Sprintf("answer of %d bytes", n)}
	}
	b, ok := in.mem.Read(p, n)
	if !ok {
		return nil, &GuestError{Op: opName, Err: ErrAnswer, Detail: fmt.Sprintf("answer at %#x+%d is outside memory", p, n)}
	}
	return append([]byte(nil), b...), nil
}

func (in *instance) trap(op string, err error) error {
	if in.fuel != nil && int64(in.fuel.Get()) < 0 {
		return &GuestError{Op: op, Err: ErrFuel, Detail: fmt.Sprintf("more than %d fuel in one call", in.r.cfg.Fuel), Stderr: in.stderr.String()}
	}
	stderr := in.stderr.String()
	if strings.Contains(stderr, "out of memory") {
		// The guest's Go runtime could not grow its heap within the limit.
		return &GuestError{Op: op, Err: ErrMemory, Detail: err.Error(), Stderr: stderr}
	}
	return &GuestError{Op: op, Err: ErrTrap, Detail: err.Error(), Stderr: stderr}
}

// request invokes op and decodes the answer; a malformed answer is a GuestError.
func (in *instance) request(ctx context.Context, opName string, op int, call []byte) (any, error) {
	ans, err := in.invoke(ctx, opName, op, call)
	if err != nil {
		return nil, err
	}
	v, err := port.DecodeAnswer(op, ans)
	if errors.Is(err, port.ErrGuest) {
		return nil, in.bad(opName, err)
	}
	return v, err
}

func (in *instance) load(ctx context.Context, hash [32]byte, source []byte) (port.Info, error) {
	v, err := in.request(ctx, "load", port.OpLoad, source)
	if err != nil {
		return port.Info{}, err
	}
	info := v.(port.Info)
	if info.Hash != hash {
		return port.Info{}, in.bad("load", fmt.Errorf("program hash %x, want %x", info.Hash[:8], hash[:8]))
	}
	in.loaded[hash] = true
	return info, nil
}

// hostModule defines the imports of the guest: act and act_reply.
func (r *Runtime) hostModule(ctx context.Context) error {
	act := func(ctx context.Context, mod api.Module, stack []uint64) {
		in, _ := ctx.Value(instanceKey{}).(*instance)
		tagPtr, tagLen, argsPtr, argsLen, seq := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), stack[4]
		stack[0] = 0 // suspend, unless the host answers
		if in == nil || r.cfg.OnAct == nil {
			return
		}
		tag, ok1 := mod.Memory().Read(tagPtr, tagLen)
		args, ok2 := mod.Memory().Read(argsPtr, argsLen)
		if !ok1 || !ok2 || tagLen > checkpoint.MaxKind {
			return // garbage from the guest: suspend, and let the host see the Act
		}
		reply, ok := r.cfg.OnAct(ctx, string(tag), append([]byte(nil), args...), seq)
		if !ok || len(reply) == 0 {
			return
		}
		in.held = reply
		stack[0] = uint64(len(reply))
	}
	actReply := func(ctx context.Context, mod api.Module, stack []uint64) {
		in, _ := ctx.Value(instanceKey{}).(*instance)
		if in == nil {
			return
		}
		mod.Memory().Write(uint32(stack[0]), in.held)
		in.held = nil
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := r.rt.NewHostModuleBuilder("rune_host").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(act), []api.ValueType{i32, i32, i32, i32, i64}, []api.ValueType{i32}).Export("act").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(actReply), []api.ValueType{i32}, nil).Export("act_reply").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("wasmvm: host module: %w", err)
	}
	return nil
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// zeroReader is the guest's source of randomness: none, so that it is
// deterministic.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
