// worker_test.go attacks the worker as a tool that broke out of wasm would:
// native code in the confined process (testProbe), each layer switched off
// in turn to show the others hold alone; and reads the worker from outside.

package tool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runehost/runehost/internal/fsallow"
	"github.com/runehost/runehost/internal/testtools"
)

// Package-level, so that it is set before init runs a worker.
var _ = func() bool { testProbe, testFSCheckOff = probe, fsallow.TestingDisable; return true }()

// probe runs one attack, "what:argument", and says how it ended: "ok ..."
// or "refused: <errno>".
func probe(p string) string {
	what, arg, _ := strings.Cut(p, ":")
	var err error
	switch what {
	case "read": // a file outside the mounts, or another process's /proc
		var b []byte
		b, err = os.ReadFile(arg)
		if err == nil {
			return fmt.Sprintf("ok %d bytes", len(b))
		}
	case "open":
		var f *os.File
		f, err = os.Open(arg)
		if err == nil {
			f.Close()
		}
	case "write":
		err = os.WriteFile(arg, []byte("x"), 0o644)
	case "connect":
		var c net.Conn
		c, err = net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
	case "exec":
		err = syscall.Exec(arg, []string{arg}, nil)
	case "ptrace":
		pid, _ := strconv.Atoi(arg)
		err = unix.PtraceAttach(pid)
	case "signal":
		pid, _ := strconv.Atoi(arg)
		err = unix.Kill(pid, syscall.SIGCONT)
	case "prlimit": // another process's limits, read only
		pid, _ := strconv.Atoi(arg)
		var l unix.Rlimit
		err = unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &l)
	case "vmread":
		pid, _ := strconv.Atoi(arg)
		b := make([]byte, 8)
		_, err = unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &b[0], Len: 8}}, []unix.RemoteIovec{{Base: 0x400000, Len: 8}}, 0)
	case "environ":
		if len(os.Environ()) > 0 {
			return "ok " + strings.Join(os.Environ(), " ")
		}
		return "refused: empty"
	default:
		return "unknown probe " + what
	}
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return "refused: " + errno.Error()
	}
	return "refused: " + err.Error()
}

// runProbe runs an attack in a worker with some layers off.
func runProbe(t *testing.T, r *Runner, p string, off layers, mounts ...Mount) string {
	t.Helper()
	r.workers.off = off
	res, err := r.Run(context.Background(), testtools.Build(t, "cat"), Config{probe: p, Mounts: mounts, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return res.Detail
}

func requireLandlock(t *testing.T) {
	if LandlockABI() < 4 {
		t.Skipf("the kernel's Landlock ABI is %d; these attacks need 4 (TCP)", LandlockABI())
	}
}

// Each layer holds alone: whatever native code the worker runs, with
// Landlock off seccomp still refuses the network, processes and other
// processes' memory; with seccomp off Landlock still refuses the network
// and every file outside the mounts; with both off, the worker still
// cannot read the host (it has no CAP_SYS_PTRACE; the host is not dumpable).
func TestWorkerLayersHoldAlone(t *testing.T) {
	requireLandlock(t)
	r := runner(t, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	secret := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(secret, []byte("the host's"), 0o600)
	mounted := t.TempDir()
	os.WriteFile(filepath.Join(mounted, "inside"), []byte("the tool's"), 0o600)
	host := strconv.Itoa(os.Getpid())
	in := Mount{Host: mounted, Guest: "/w", Write: true}

	// Sanity: the probes work where nothing confines them.
	if got := runProbe(t, r, "connect:"+ln.Addr().String(), layers{Landlock: true, Seccomp: true}); got != "ok" {
		t.Fatalf("unconfined, the probe could not connect (%s): the test proves nothing", got)
	}
	if got := runProbe(t, r, "read:"+secret, layers{Landlock: true, Seccomp: true}); !strings.HasPrefix(got, "ok") {
		t.Fatalf("unconfined, the probe could not read (%s): the test proves nothing", got)
	}

	for _, c := range []struct {
		name string
		off  layers
		want map[string]bool // probe: refused
	}{
		{"all layers", layers{}, nil},
		// Landlock does not cover another process's limits (the filter
		// allows prlimit64 of the worker's own alone).
		{"landlock alone", layers{Seccomp: true}, map[string]bool{"prlimit": false}},
		{"seccomp alone", layers{Landlock: true}, map[string]bool{"read outside": false, "write outside": false}},
		// The worker itself: no CAP_SYS_PTRACE, beside a host not dumpable.
		{"the worker alone", layers{Landlock: true, Seccomp: true}, map[string]bool{"read outside": false, "write outside": false, "connect": false, "exec": false, "signal": false, "prlimit": false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []struct{ name, probe string }{
				{"connect", "connect:" + ln.Addr().String()},
				{"read outside", "read:" + secret},
				{"write outside", "write:" + secret},
				{"read environ", "read:/proc/" + host + "/environ"},
				{"open mem", "open:/proc/" + host + "/mem"},
				{"signal", "signal:" + host},
				{"ptrace", "ptrace:" + host},
				{"vmread", "vmread:" + host},
				{"prlimit", "prlimit:" + host},
				{"exec", "exec:/bin/true"},
			} {
				refused, listed := c.want[p.name]
				if !listed {
					refused = true
				}
				got := runProbe(t, r, p.probe, c.off, in)
				if refused != strings.HasPrefix(got, "refused") {
					t.Errorf("%s: %s (want refused: %v)", p.name, got, refused)
				}
			}
			// Its mount stays its own.
			if got := runProbe(t, r, "read:"+filepath.Join(mounted, "inside"), c.off, in); !strings.HasPrefix(got, "ok") {
				t.Errorf("reading its own mount: %s", got)
			}
		})
	}
}

// A running tool's process, seen from outside: an empty environment but for
// what was granted, no new privileges, a seccomp filter, not dumpable, and
// no descriptor but its own.
func TestWorkerSeenFromOutside(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("no Landlock")
	}
	t.Setenv("RUNEHOST_TEST_SECRET", "the-host-secret-value")
	// A descriptor the host inherited without close-on-exec.
	leak, err := unix.Open(filepath.Join(t.TempDir(), "leaked"), unix.O_CREAT|unix.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	r := runner(t, 0)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pid, done := startWorker(t, r, "cat", Config{StdinFile: inR, StdinWriter: inW, Env: []string{"GRANTED=yes"}, Timeout: time.Minute})
	status := waitConfined(t, pid)
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status, want) {
			t.Errorf("the worker's status lacks %q:\n%s", want, status)
		}
	}
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil || len(env) != 0 {
		t.Errorf("the worker's environment: %q %v", env, err)
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if strings.HasSuffix(target, "leaked") {
			t.Errorf("the worker holds the host's descriptor %s: %s", fd.Name(), target)
		}
	}
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 {
		t.Log("(this process is not dumpable itself)")
	}
	if st, err := os.Stat(fmt.Sprintf("/proc/%d/mem", pid)); err == nil {
		if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Uid != 0 && os.Getuid() != 0 {
			t.Errorf("the worker's memory is its user's: it is dumpable")
		}
	}
	inW.Close()
	res := <-done
	if res == nil || !res.OK() {
		t.Fatalf("%+v", res)
	}
}

// startWorker runs a tool in the background and returns its worker's pid,
// and where its result comes.
func startWorker(t *testing.T, r *Runner, tool string, cfg Config) (int, <-chan *Result) {
	t.Helper()
	done := make(chan *Result, 1)
	go func() {
		res, err := r.Run(context.Background(), testtools.Build(t, tool), cfg)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var pid int
	for deadline := time.Now().Add(time.Minute); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pid = childWorker(t)
	}
	if pid == 0 {
		t.Fatal("no worker found among this process's children")
	}
	return pid, done
}

// waitConfined waits until a worker has confined itself (its filter is
// the last step) and returns its status.
func waitConfined(t *testing.T, pid int) string {
	var status string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if status = string(b); strings.Contains(status, "Seccomp:\t2") {
			break
		}
	}
	return status
}

// childWorker finds a worker among this process's children.
func childWorker(t *testing.T) int {
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:]
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == me {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.HasPrefix(string(cmd), workerArg0) {
				return pid
			}
		}
	}
	return 0
}

// A worker that dies is a result, not a hang: killed from outside, its
// run ends as trapped with what it said last.
func TestWorkerKilled(t *testing.T) {
	r := runner(t, 0)
	pid, done := startWorker(t, r, "spin", Config{Fuel: MaxFuel, Timeout: time.Minute})
	waitConfined(t, pid)
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case res := <-done:
		if res == nil || res.Stop != Trapped || !strings.Contains(res.Detail, "the worker died") {
			t.Fatalf("%+v", res)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not end when its worker was killed")
	}
}

// deepTrap is a module whose _start recurses n calls deep and traps
// (unreachable), its function named by a long name: wazero's message for
// it names every frame (up to a bound). It has no memory.
func deepTrap(n int) []byte {
	uleb := func(b []byte, v int) []byte {
		for ; v >= 0x80; v >>= 7 {
			b = append(b, byte(v&0x7f|0x80))
		}
		return append(b, byte(v))
	}
	section := func(id byte, body []byte) []byte {
		return append(uleb([]byte{id}, len(body)), body...)
	}
	f := []byte{0x00, 0x20, 0x00, 0x45, 0x04, 0x40, 0x00, 0x0b, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x00, 0x0b}
	start := append(uleb([]byte{0x00, 0x41}, n), 0x10, 0x00, 0x0b)
	code := append(uleb([]byte{2}, len(f)), f...)
	code = append(uleb(code, len(start)), start...)
	name := strings.Repeat("a_very_long_name_", 20)
	names := uleb([]byte{1, 0}, len(name)) // one name: function 0
	names = append(names, name...)
	custom := append(uleb(nil, len("name")), "name"...)
	custom = append(uleb(append(custom, 1), len(names)), names...)
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, []byte{2, 0x60, 1, 0x7f, 0, 0x60, 0, 0})...)
	m = append(m, section(3, []byte{2, 0, 1})...)
	m = append(m, section(7, []byte{1, 6, '_', 's', 't', 'a', 'r', 't', 0, 1})...)
	m = append(m, section(10, code)...)
	return append(m, section(0, custom)...)
}

// A trap deep in the stack is a trap result, its detail cut to what a
// worker may say: not a failed worker.
func TestDeepTrap(t *testing.T) {
	r := runner(t, 0)
	res, err := r.Run(context.Background(), deepTrap(2000), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != Trapped || !strings.Contains(res.Detail, "unreachable") || len(res.Detail) > maxDetail {
		t.Fatalf("%s, a detail of %d bytes: %.200s", res.Stop, len(res.Detail), res.Detail)
	}
	t.Logf("a detail of %d bytes", len(res.Detail))
}
