// Command chaos is the cluster chaos harness (make chaos; a short seeded run
// in make test): three NATS nodes and three runehost hosts, each its own
// process, share one store on an R3 stream while invocations do acts
// against a recording adapter (the crash-test build's test.lookup, whose
// journal is the world outside the store). At random times it SIGKILLs a
// host or a node (the stream's leader among them), or stops a host with
// SIGSTOP for longer than its claims last and lets it go on (a zombie), and
// restarts what it killed. At the end it checks: every invocation finished
// with the result an uninterrupted run gives; no act was done twice or
// lost; every outcome recorded and consumed; every run's event seqs 1..N
// with none skipped or repeated; every allowance settled within its limit.
//
// Three more invocations (progs rv/N, one admitted through each host) act
// on a grant of their scope until it is revoked through the first host,
// before the kills: each must end denied, and none may have an act allowed
// after the revoke returned.
//
// -partitions runs each node and host in a network namespace of its own
// (netns.go; it needs root) and adds partitions to the chaos: a host cut
// off past its claims, which goes on running and must have its commits
// refused (fenced), and a node cut off, a minority that stalls and
// recovers. The health of the hosts counts the fenced commits.
//
// -break fence builds a runehost whose hosts do not fence their commits by
// their claims: the stopped or cut-off hosts, going on, must make it fail. -break
// grants builds one whose acts do not check the grants' stamp: what a host
// kept of the grants outlives the revoke, and it must fail.
//
// Usage: go run ./cmd/chaos [-invocations N] [-kills K] [-seed S] [-acts A] [-delay MS] [-partitions] [-break fence|grants] [-v]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/client"
	"github.com/runehost/runehost/internal/crashtest"
	"github.com/runehost/runehost/store"
)

// acts is how many acts each invocation does (-acts).
var acts = 6

type harness struct {
	bin, tmp  string
	rng       *rand.Rand
	verbose   bool
	claim     time.Duration
	delayMS   int
	nodes     [3]*proc
	hosts     [3]*proc
	urls      []string
	journal   crashtest.Journal
	kills     map[string]int
	stopsOnly bool
	recovery  map[string][]time.Duration // kind of kill: time to the next act done
	total     int                        // acts the invocations do, all told
	revoked   []string                   // the invocations whose grant is revoked (revoke.go)
	st        *store.Store               // the stream, to read its claims (takeover.go); nil if it cannot be
	net       *netns                     // -partitions: the namespaces, inside whose hub the harness runs
	fenced    int64                      // commits the fence refused, as the hosts' health counted them after cuts
}

// proc is a node or a host: how to start it, and the process while it runs.
type proc struct {
	name string
	args []string
	env  []string
	dir  string
	cmd  *exec.Cmd
	log  *os.File
	host bool
	// hostName is what the host's claims name it (its health says it),
	// since it last came up.
	hostName string
	ns       int // its network namespace (-partitions), from 1; 0 for none
}

func main() {
	n := flag.Int("invocations", 200, "invocations to run")
	kills := flag.Int("kills", 20, "kills and stops to make")
	seed := flag.Int64("seed", time.Now().UnixNano(), "the random seed")
	brk := flag.String("break", "", "build a runehost wrong on purpose: fence or grants")
	claim := flag.Duration("claim", 2*time.Second, "how long a host's claims last (RUNEHOST_CLAIM_FOR)")
	verbose := flag.Bool("v", false, "say what happens")
	stops := flag.Bool("stops", false, "only stop hosts past their claims (as -break fence does), or with -partitions only cut them off")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after")
	flag.IntVar(&acts, "acts", acts, "acts each invocation does: more keeps acts in flight through more of the kills")
	delay := flag.Int("delay", 2, "milliseconds each act's effect takes: longer keeps acts in flight through more of the kills")
	parts := flag.Bool("partitions", false, "each process in a network namespace of its own, and partitions among the chaos (needs root)")
	flag.Parse()
	if *parts && os.Getenv(envNet) == "" {
		os.Exit(partitioned(*brk))
	}
	tmp := os.Getenv(envTmp)
	if tmp == "" {
		var err error
		tmp, err = os.MkdirTemp("", "runehost-chaos-")
		check(err)
	}
	h := &harness{tmp: tmp, rng: rand.New(rand.NewSource(*seed)), verbose: *verbose, claim: *claim, delayMS: *delay,
		journal: crashtest.Journal{Path: filepath.Join(tmp, "journal")}, kills: map[string]int{}, recovery: map[string][]time.Duration{}}
	fmt.Printf("chaos: seed %d, %d invocations, %d kills, claims last %s, in %s\n", *seed, *n, *kills, *claim, tmp)
	h.stopsOnly = *brk == "fence" || *stops
	running = h
	h.bin = filepath.Join(tmp, "runehost")
	if *parts {
		h.net = &netns{prefix: os.Getenv(envNet)}
		h.bin = os.Getenv(envBin) // built before the harness came into the hub
		fmt.Printf("chaos: each process in a network namespace of its own (%s*), partitions among the chaos\n", h.net.prefix)
	} else {
		check(build(h.bin, tmp, *brk))
	}
	start := time.Now()
	h.start()
	defer h.stopAll()
	ids, want := h.admit(*n)
	revoked := h.admitRevoked(3)
	h.total, h.revoked = len(ids)*acts, revoked
	deadline := time.Now().Add(*timeout)
	time.Sleep(500 * time.Millisecond) // every host has acted on the grant: what it kept must not outlive the revoke
	revokedAt := h.revoke()
	for k := 0; k < *kills && time.Now().Before(deadline); k++ {
		time.Sleep(time.Duration(200+h.rng.Intn(800)) * time.Millisecond)
		h.chaos()
	}
	h.say("chaos over: waiting for every invocation to end")
	viol := 0
	var ended []string
	for _, id := range ids {
		for {
			done, paused := h.done(id)
			if paused != "" {
				viol++
				fmt.Printf("chaos: VIOLATION: %s is paused: %s\n", id, paused)
				break
			}
			if done {
				ended = append(ended, id)
				break
			}
			if time.Now().After(deadline) {
				viol++
				fmt.Printf("chaos: VIOLATION: %s did not end within %s\n", id, *timeout)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, id := range revoked {
		for done, _ := h.done(id); !done && time.Now().Before(deadline); done, _ = h.done(id) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	viol += h.verify(ended, want, len(ids), revoked, revokedAt)
	took := time.Since(start)
	fmt.Printf("chaos: %d invocations, %d acts, kills %v, in %s\n", len(ids), len(ids)*acts, h.kills, took.Round(time.Second))
	if h.net != nil {
		fmt.Printf("chaos: the fence refused %d commits of hosts cut off (%d cuts)\n", h.fenced, h.kills["host cut"])
	}
	for kind, ds := range h.recovery {
		fmt.Printf("chaos: after a %s within %s (median of %d)\n", kind, median(ds).Round(time.Millisecond), len(ds))
	}
	switch {
	case *brk != "" && viol == 0:
		fmt.Printf("chaos: -break %s: no violation found; the harness missed it\n", *brk)
		h.stopAll()
		os.Exit(1)
	case *brk != "":
		fmt.Printf("chaos: -break %s: %d violations, as it should\n", *brk, viol)
		h.stopAll()
	case viol > 0:
		fmt.Printf("chaos: %d violations; the logs are in %s\n", viol, tmp)
		h.stopAll()
		os.Exit(1)
	default:
		fmt.Println("chaos: no violations")
		h.stopAll()
		os.RemoveAll(tmp)
	}
}

func (h *harness) say(format string, args ...any) {
	if h.verbose {
		fmt.Printf("  "+format+"\n", args...)
	}
}

// build builds runehost with the crash-test adapters, and with brk's fault.
func build(bin, tmp, brk string) error {
	args := []string{"build", "-tags", "crashtest", "-o", bin}
	switch brk {
	case "":
	case "fence":
		src, err := os.ReadFile("host/claim.go")
		if err != nil {
			return fmt.Errorf("-break fence: run from the repository's root: %w", err)
		}
		head := "func (c *claims) fence(tx *store.Tx, written []store.Key) error {"
		if !strings.Contains(string(src), head) {
			return fmt.Errorf("-break fence: host/claim.go has no fence to break")
		}
		if err := overlay(&args, tmp, "host/claim.go", strings.Replace(string(src), head, head+"\n\treturn nil", 1)); err != nil {
			return err
		}
	case "grants":
		src, err := os.ReadFile("host/ward.go")
		if err != nil {
			return fmt.Errorf("-break grants: run from the repository's root: %w", err)
		}
		head := "func checkGrantsTx(tx *store.Tx, stamp uint64) error {"
		if !strings.Contains(string(src), head) {
			return fmt.Errorf("-break grants: host/ward.go has no stamp check to break")
		}
		if err := overlay(&args, tmp, "host/ward.go", strings.Replace(string(src), head, head+"\n\treturn nil", 1)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-break %q: want fence or grants", brk)
	}
	out, err := exec.Command("go", append(args, "./cmd/runehost")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	return nil
}

// overlay builds file (a path from the repository's root) as broken says.
func overlay(args *[]string, tmp, file, broken string) error {
	f := filepath.Join(tmp, filepath.Base(file))
	if err := os.WriteFile(f, []byte(broken), 0o644); err != nil {
		return err
	}
	abs, _ := filepath.Abs(file)
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, []byte(fmt.Sprintf(`{"Replace":{%q:%q}}`, abs, f)), 0o644); err != nil {
		return err
	}
	*args = append(*args, "-overlay", ov)
	return nil
}

// start starts the three nodes, then the three hosts.
func (h *harness) start() {
	var client, route []string // host:port of each node
	if h.net == nil {
		for i, p := range append(ports(3), ports(3)...) {
			if a := fmt.Sprintf("127.0.0.1:%d", p); i < 3 {
				client = append(client, a)
			} else {
				route = append(route, a)
			}
		}
	} else { // nodes 1-3, hosts 4-6: an address each
		for i := range 3 {
			client, route = append(client, h.net.addr(i+1)+":4222"), append(route, h.net.addr(i+1)+":6222")
		}
	}
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, "nats://"+route[j])
			}
		}
		h.urls = append(h.urls, "nats://"+client[i])
		h.nodes[i] = &proc{name: fmt.Sprintf("node%d", i+1), args: []string{"nats", "--dir", filepath.Join(h.tmp, fmt.Sprintf("n%d", i+1)),
			"--listen", client[i], "--cluster", "chaos", "--cluster-listen", route[i],
			"--routes", strings.Join(routes, ","), "--name", fmt.Sprintf("n%d", i+1)}}
		if h.net != nil {
			h.nodes[i].ns = i + 1
		}
	}
	for _, n := range h.nodes {
		h.run(n)
	}
	for _, n := range h.nodes {
		h.ready(n, time.Minute)
	}
	for i := range 3 {
		dir := filepath.Join(h.tmp, fmt.Sprintf("h%d", i+1))
		h.hosts[i] = &proc{name: fmt.Sprintf("host%d", i+1), dir: dir, host: true,
			args: []string{"serve", "--native", "--store", dir, "--workers", "2"},
			env: []string{"RUNEHOST_NATS=" + strings.Join(h.urls, ","), "RUNEHOST_NATS_REPLICAS=3", "RUNEHOST_CLAIM_FOR=" + h.claim.String(),
				crashtest.JournalEnv + "=" + h.journal.Path, fmt.Sprintf("%s=%d", crashtest.DelayEnv, h.delayMS)}}
		if h.net != nil {
			h.hosts[i].ns = 4 + i
		}
	}
	for _, p := range h.hosts {
		h.run(p)
	}
	for _, p := range h.hosts {
		h.ready(p, time.Minute)
	}
	h.openClaims()
}

// run starts p, its output in its log.
func (h *harness) run(p *proc) {
	var err error
	p.log, err = os.OpenFile(filepath.Join(h.tmp, p.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	check(err)
	if h.net != nil && p.ns > 0 {
		p.cmd = h.net.command(p.ns, append([]string{h.bin}, p.args...)...)
	} else {
		p.cmd = exec.Command(h.bin, p.args...)
	}
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	check(p.cmd.Start())
	go p.cmd.Wait()
}

// ready waits until a host answers on its socket, or a node takes clients.
func (h *harness) ready(p *proc, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if p.host {
			if c, ok, _ := client.Find(p.dir); ok {
				if hl, err := c.Health(context.Background()); err == nil && hl.Status == "ok" {
					p.hostName = hl.Host
					return
				}
			}
		} else {
			addr := p.args[4] // --listen's
			if conn, err := net.Dial("tcp", addr); err == nil {
				conn.Close()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("chaos: %s did not come up within %s; its log: %s\n", p.name, within, p.log.Name())
	h.stopAll()
	os.Exit(1)
}

// live is a client of a host that answers.
func (h *harness) live() *client.Client {
	for {
		for _, i := range h.rng.Perm(3) {
			if c, ok, _ := client.Find(h.hosts[i].dir); ok {
				if _, err := c.Health(context.Background()); err == nil {
					return c
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// admit grants the test act and admits n invocations, each a prog of its
// own, through the hosts in turn; want is each one's uninterrupted result.
func (h *harness) admit(n int) (ids []string, want map[string]int64) {
	ctx := context.Background()
	if _, err := h.live().Grant(ctx, api.GrantRequest{Prog: "chaos/*", Statements: []string{crashtest.LookupTag}}); err != nil { // their scope's: not the revoked ones'
		check(err)
	}
	want = map[string]int64{}
	for j := range n {
		src := fmt.Sprintf("var s = 0\nfor i in range(%d) { s += (act %q {n: i + %d}).v }\nreturn s", acts, crashtest.LookupTag, 100*j)
		var sum int64
		for i := range acts {
			sum += 2 * int64(i+100*j)
		}
		c, _, err := client.Find(h.hosts[j%3].dir)
		check(err)
		r, err := c.Run(ctx, api.RunRequest{Prog: fmt.Sprintf("chaos/%d", j), Source: src, Limit: 1 << 30})
		check(err)
		ids = append(ids, r.Invocation)
		want[r.Invocation] = sum
	}
	h.say("admitted %d invocations", n)
	return ids, want
}

// chaos kills, stops or (-partitions) cuts off one process and brings it
// back.
func (h *harness) chaos() {
	k := h.rng.Intn(10)
	if h.net != nil {
		k = h.rng.Intn(14)
	}
	if h.stopsOnly {
		k = 9 // what -break breaks: only a host that goes on after its claims lapsed meets the fence
		if h.net != nil {
			k = 10 // one cut off, here
		}
	}
	switch {
	case k >= 12:
		h.cutNode(h.nodes[h.rng.Intn(3)])
	case k >= 10:
		h.cutHost(h.hosts[h.rng.Intn(3)])
	case k < 4: // a host, SIGKILL
		h.kill(h.hosts[h.rng.Intn(3)], "host")
	case k < 7: // a node, SIGKILL
		h.kill(h.nodes[h.rng.Intn(3)], "node")
	default: // a host stopped past its claims, then let go on
		p := h.hosts[h.rng.Intn(3)]
		h.say("stop %s", p.name)
		p.cmd.Process.Signal(syscall.SIGSTOP)
		h.kills["stop"]++
		time.Sleep(h.claim*11/10 + time.Duration(h.rng.Intn(400))*time.Millisecond) // just past its claims: another host has just taken over
		p.cmd.Process.Signal(syscall.SIGCONT)
		h.say("go on %s", p.name)
	}
}

// kill SIGKILLs p, restarts it a moment later, and waits for an act done by
// any host since (timed from the kill) and for p to come back.
func (h *harness) kill(p *proc, kind string) {
	var orphans map[string]bool
	if p.host {
		orphans = h.orphans(p)
	}
	h.say("kill %s (it drives %d trees with acts to do)", p.name, len(orphans))
	p.cmd.Process.Kill()
	killed := time.Now()
	dead(p.cmd.Process.Pid)
	before := h.entries() // counted once it is dead: its last acts were before the kill
	h.kills[kind]++
	time.Sleep(time.Duration(100+h.rng.Intn(900)) * time.Millisecond)
	h.run(p)
	h.say("waiting for an act after %d", before)
	h.waitAct(kind+" kill, the next act was done", before, killed)
	h.waitTakeover(orphans, before, killed)
	h.ready(p, time.Minute)
}

// waitAct waits (a while) for an act done after a kill, and notes how long
// it took.
func (h *harness) waitAct(kind string, before int, killed time.Time) {
	for time.Since(killed) < time.Minute {
		if h.entries() > before {
			h.recovery[kind] = append(h.recovery[kind], time.Since(killed))
			return
		}
		if h.allDone() {
			h.say("all done: %d entries", h.entries())
			return // nothing left to do: no recovery to time
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) entries() int {
	es, _ := h.journal.Entries()
	return len(es)
}

// allDone says whether every act of the invocations is in the journal: a
// kill after that has no next act to wait for.
func (h *harness) allDone() bool {
	es, _ := h.journal.Entries()
	n := 0
	for _, en := range es {
		if !isRevoked(en.Op, h.revoked) {
			n++
		}
	}
	return h.total > 0 && n >= h.total
}

// done says whether an invocation ended, or why it is paused.
func (h *harness) done(id string) (bool, string) {
	st, err := h.live().State(context.Background(), id)
	if err != nil {
		return false, ""
	}
	return api.Terminal(st.Status), st.Paused
}

func (h *harness) stopAll() {
	for _, p := range append(h.hosts[:], h.nodes[:]...) {
		if p != nil && p.cmd != nil && p.cmd.Process != nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
		}
	}
}

func ports(n int) []int {
	out := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		out[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	c := append([]time.Duration(nil), ds...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c[len(c)/2]
}

// running is the harness whose processes an error stops.
var running *harness

func check(err error) {
	if err != nil {
		fmt.Println("chaos:", err)
		if running != nil {
			running.stopAll()
		}
		os.Exit(2)
	}
}
