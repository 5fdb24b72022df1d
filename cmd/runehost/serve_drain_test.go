// serve_drain_test.go runs `runehost serve` as a real process, built from
// this module: SIGTERM in the middle of twenty runs drains it (exit 0), a
// restart on the store finishes every run with the result of a run never
// interrupted, and a second signal exits at once, losing nothing acknowledged.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/guest/port/porttest"
	"github.com/runehost/runehost/server"
)

// drainProg computes, awaits what never comes (its timeout is the answer),
// and, as a parent, spawns itself as a child and waits for its result.
const drainProg = `
var s = 0
var i = 0
while i < input.n { s = (s * 31 + i) % 1000003; i += 1 }
var t = "none"
try { t = await {key: "never", timeout: 20} } catch err { t = err.kind }
var c = nil
if input.child {
  let k = act "spawn" {steps: 10000000, input: {n: 1000, child: false}}
  c = (await {key: k.id}).result
}
return {s: s, t: t, c: c}
`

// drainWant is drainProg's result for n, as a run never interrupted ends:
// its arithmetic, done here.
func drainWant(n int64, child bool) map[string]any {
	s := int64(0)
	for i := int64(0); i < n; i++ {
		s = (s*31 + i) % 1000003
	}
	var c any
	if child {
		c = drainWant(1000, false)
	}
	return map[string]any{"s": float64(s), "t": "timeout", "c": c}
}

// serveBin builds runehost into dir.
func serveBin(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build runehost with")
	}
	bin := filepath.Join(dir, "runehost")
	start := time.Now()
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built runehost in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// serveProc is a running `runehost serve` and its API client.
type serveProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	c      *http.Client
	socket string
	done   chan struct{} // closed when it has exited
	err    error         // of Wait, once done
}

// startServeProc starts bin serve on dir and returns once /healthz answers
// on the socket serve.json names.
func startServeProc(t *testing.T, bin, dir string, native bool, extra ...string) *serveProc {
	t.Helper()
	os.Remove(filepath.Join(dir, server.DiscoveryFile))
	args := []string{"serve", "--store", dir, "--workers", "2"}
	if native {
		args = append(args, "--native")
	}
	if !slices.Contains(extra, "--listen") {
		// A port of its own: the default, 7233, is another suite's too
		// when two run at once (make test's lanes).
		args = append(args, "--listen", "127.0.0.1:0")
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	p := &serveProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("serve exited before it served: %v\n%s", p.err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer in 30 s:\n%s", p.stderr)
		}
		var d api.Discovery
		b, err := os.ReadFile(filepath.Join(dir, server.DiscoveryFile))
		if err == nil && json.Unmarshal(b, &d) == nil && d.PID == cmd.Process.Pid {
			p.socket = d.Socket
			p.c = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var dl net.Dialer
					return dl.DialContext(ctx, "unix", d.Socket)
				},
			}}
			var h api.Health
			if p.get("/healthz", &h) == nil && h.Status == "ok" && h.PID == d.PID {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *serveProc) get(path string, v any) error {
	resp, err := p.c.Get("http://runehost" + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// admit posts a run and returns its invocation; every admission must be
// answered 201.
func (p *serveProc) admit(t *testing.T, prog string, n int64) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"n": n, "child": true})
	body, _ := json.Marshal(api.RunRequest{Prog: prog, Source: drainProg, Input: in, Limit: 1 << 32})
	resp, err := p.c.Post("http://runehost/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rr api.RunResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != http.StatusCreated || rr.Invocation == "" {
		t.Fatalf("POST /v1/runs %s: %d %v", prog, resp.StatusCode, err)
	}
	return rr.Invocation
}

// slowAdmission is an admission whose body is half sent: a request in
// flight, which a drain waits for.
type slowAdmission struct {
	conn net.Conn
	rest []byte
}

func (p *serveProc) slowAdmit(t *testing.T, prog string, n int64) *slowAdmission {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"n": n, "child": true})
	body, _ := json.Marshal(api.RunRequest{Prog: prog, Source: drainProg, Input: in, Limit: 1 << 32})
	conn, err := net.Dial("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: runehost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := conn.Write(body[:10]); err != nil {
		t.Fatal(err)
	}
	return &slowAdmission{conn: conn, rest: body[10:]}
}

// finish sends the rest of the body and reads the answer.
func (a *slowAdmission) finish() (int, string, error) {
	if _, err := a.conn.Write(a.rest); err != nil {
		return 0, "", err
	}
	a.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(a.conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var rr api.RunResponse
	err = json.NewDecoder(resp.Body).Decode(&rr)
	return resp.StatusCode, rr.Invocation, err
}

// untilLogged waits until serve's log has a line whose msg starts so.
func (p *serveProc) untilLogged(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !logged(t, p.stderr.String(), prefix) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not log %q in 10 s:\n%s", prefix, p.stderr)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// roots are the statuses of the runs with no parent.
func (p *serveProc) roots(t *testing.T) map[string]string {
	t.Helper()
	var l api.List
	if err := p.get("/v1/invocations", &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, inv := range l.Invocations {
		if inv.Parent == "" {
			out[inv.ID] = inv.Status
		}
	}
	return out
}

func completed(st map[string]string) int {
	n := 0
	for _, s := range st {
		if s == "completed" {
			n++
		}
	}
	return n
}

// exit waits up to d for the process to exit and returns its code.
func (p *serveProc) exit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("serve did not exit in %v:\n%s", d, p.stderr)
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		t.Fatal(p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// logged says whether serve's JSON log has a line whose msg starts so.
func logged(t *testing.T, log, prefix string) bool {
	t.Helper()
	for line := range strings.SplitSeq(log, "\n") {
		var l struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, prefix) {
			return true
		}
	}
	return false
}

// drainRuns admits count runs, each of its own prog (runs of one prog at
// once conflict on its state), of different lengths, and returns their
// invocations with their ns.
func drainRuns(t *testing.T, p *serveProc, count int, base int64) map[string]int64 {
	t.Helper()
	ns := map[string]int64{}
	for i := range count {
		n := base + int64(i)*base/10
		ns[p.admit(t, fmt.Sprintf("drain%02d", i), n)] = n
	}
	return ns
}

// untilSome waits until at least one run completed, and returns how many.
func untilSome(t *testing.T, p *serveProc) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n := completed(p.roots(t)); n > 0 {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no run completed in 30 s:\n%s", p.stderr)
	return 0
}

// finish restarts serve on dir, waits until every run is terminal, checks
// each result against its uninterrupted one, and drains serve again.
func finish(t *testing.T, bin, dir string, native bool, ns map[string]int64) {
	t.Helper()
	p := startServeProc(t, bin, dir, native)
	deadline := time.Now().Add(40 * time.Second)
	for {
		st := p.roots(t)
		terminal := 0
		for _, s := range st {
			if api.Terminal(s) {
				terminal++
			}
		}
		if len(st) != len(ns) {
			t.Fatalf("%d runs after the restart, %d admitted", len(st), len(ns))
		}
		if terminal == len(ns) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart, %d of %d runs ended in 40 s: %v\n%s", terminal, len(ns), st, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for inv, n := range ns {
		var rs api.RunState
		if err := p.get("/v1/invocations/"+inv+"/state", &rs); err != nil {
			t.Fatal(err)
		}
		var got any
		if rs.Status != "completed" || json.Unmarshal(rs.Result, &got) != nil {
			t.Errorf("%s: %s %s %+v", inv, rs.Status, rs.Result, rs.Error)
			continue
		}
		if want := drainWant(n, true); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: result %s, want %v", inv, rs.Result, want)
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exit(t, 20*time.Second); code != exitOK {
		t.Errorf("the restarted serve exited %d:\n%s", code, p.stderr)
	}
}

func TestServeDrain(t *testing.T) {
	bin := serveBin(t, t.TempDir())
	count := 8 // make test; make test-long (RUNEHOST_LONG=1) drains 20
	if porttest.Long() && !testing.Short() {
		count = 20
	}

	// SIGTERM drains: running slices finish, live machines are checkpointed,
	// and it exits 0; a restart finishes every run as if never stopped.
	drain := func(t *testing.T, native bool, base int64) {
		dir := filepath.Join(t.TempDir(), "store")
		p := startServeProc(t, bin, dir, native)
		ns := drainRuns(t, p, count, base)
		slow := p.slowAdmit(t, "drain-slow", base)
		done := untilSome(t, p)
		sigAt := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		// The drain waits for the request in flight, which is answered.
		p.untilLogged(t, "draining")
		status, inv, err := slow.finish()
		if status != http.StatusCreated || err != nil {
			t.Fatalf("the admission in flight at the drain: %d %v", status, err)
		}
		ns[inv] = base
		code := p.exit(t, 20*time.Second)
		log := p.stderr.String()
		t.Logf("SIGTERM with %d of %d runs completed: exit %d %v after it", done, count, code, time.Since(sigAt).Round(time.Millisecond))
		if code != exitOK {
			t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, log)
		}
		if !logged(t, log, "draining") || !logged(t, log, "stopped") {
			t.Fatalf("the log does not say it drained and stopped:\n%s", log)
		}
		if done == count {
			t.Fatalf("every run had completed before the signal: nothing was interrupted")
		}
		if _, err := os.Stat(filepath.Join(dir, server.DiscoveryFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("serve.json is left after the drain: %v", err)
		}
		finish(t, bin, dir, native, ns)
	}
	t.Run("native", func(t *testing.T) { drain(t, true, 400_000) })

	// A second signal exits at once, without draining; what was acknowledged
	// (every admission answered 201) still completes after a restart.
	t.Run("second-signal", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "store")
		p := startServeProc(t, bin, dir, true)
		ns := drainRuns(t, p, count, 400_000)
		// A request in flight holds the drain (up to 5 s): the second
		// signal comes while it waits. (Two signals sent at once would be
		// one: the kernel does not queue a pending SIGTERM twice.)
		slow := p.slowAdmit(t, "drain-slow", 400_000)
		done := untilSome(t, p)
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.untilLogged(t, "draining")
		sigAt := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		code := p.exit(t, 2*time.Second)
		log := p.stderr.String()
		t.Logf("two signals with %d of %d runs completed: exit %d %v after the second", done, count, code, time.Since(sigAt).Round(time.Millisecond))
		if code != exitInternal || !strings.Contains(log, "second signal: exiting now") {
			t.Fatalf("exit %d after two signals, want it at once, nonzero:\n%s", code, log)
		}
		if logged(t, log, "stopped") {
			t.Fatalf("it drained after two signals:\n%s", log)
		}
		// The admission it never answered is not a run.
		if status, _, err := slow.finish(); err == nil {
			t.Fatalf("the admission in flight was answered %d by a serve that exited at once", status)
		}
		finish(t, bin, dir, true, ns)
	})

	// The sandbox: slower steps, fewer of them.
	t.Run("wasm", func(t *testing.T) {
		if testing.Short() {
			t.Skip("the sandbox's drain is skipped with -short")
		}
		drain(t, false, 40_000)
	})
}

// A run followed through a server that dies goes on in the command that
// follows it: the run is in the store, and with no server the command
// drives it as it would have without one.
func TestServerGoneRunGoesOn(t *testing.T) {
	t.Setenv("RUNEHOST_TEST_AS_CLI", "1")
	dir := filepath.Join(t.TempDir(), "store")
	p := startServeProc(t, os.Args[0], dir, true)
	run := start(t, dir, nil, "run", "--native", "--limit", longLimit, writeProg(t, longProg))
	run.await(t, "invocation r1")
	p.cmd.Process.Kill()
	<-p.done
	if code := run.wait(t, 2*time.Minute); code != exitOK || !strings.Contains(run.stderr(), "the server went away; r1 goes on here, from its last checkpoint") || !strings.Contains(run.stderr(), "done: r1 completed") {
		t.Fatalf("exit %d:\n%s", code, run.stderr())
	}
}
