// serve_hosts_test.go tests the operator's commands on a store shared by
// hosts, as real processes: against a tree another host drives, through a
// second host and through a command with no server, and with the driving
// host killed.

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/slack/fakeslack"
	"github.com/runehost/runehost/store/jetstream"
)

// sharedStore starts a NATS node for the test and points every runehost
// the test starts at it, with claims of a second.
func sharedStore(t *testing.T) {
	node, err := jetstream.StartNode(jetstream.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	t.Setenv("RUNEHOST_NATS", node.ClientURL())
	t.Setenv("RUNEHOST_CLAIM_FOR", "1s")
	t.Setenv("RUNEHOST_TEST_AS_CLI", "1")
}

func TestOperatorCommandsAcrossHosts(t *testing.T) {
	sharedStore(t)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	none := filepath.Join(t.TempDir(), "none") // no server: the command is a host for as long as it runs
	pa := startServeProc(t, os.Args[0], a, true)
	startServeProc(t, os.Args[0], b, true)
	waits := writeProg(t, "let e = await {key: \"go\"}\nreturn e + 1")
	admit := func(want string) {
		t.Helper()
		if code, _, errs := process(t, a, "run", "--native", "--name", "p"+want, waits); code != exitWaiting || !strings.Contains(errs, "invocation "+want) {
			t.Fatalf("run through host a: exit %d: %s", code, errs)
		}
	}
	status := func(inv string) string {
		t.Helper()
		code, out, errs := process(t, b, "ps", "--json")
		if code != exitOK {
			t.Fatalf("ps: exit %d: %s", code, errs)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, `"invocation": "`+inv+`"`) || strings.Contains(line, `"invocation":"`+inv+`"`) {
				return line
			}
		}
		return out
	}
	for i, dir := range []string{b, none} {
		r1, r2, r3 := "r"+strconv.Itoa(3*i+1), "r"+strconv.Itoa(3*i+2), "r"+strconv.Itoa(3*i+3)
		for _, r := range []string{r1, r2, r3} {
			admit(r)
		}
		if code, _, errs := process(t, dir, "cancel", r1); code != exitOK || !strings.Contains(errs, "cancelled: "+r1) {
			t.Fatalf("cancel %s through %s: exit %d: %s", r1, dir, code, errs)
		}
		if code, _, errs := process(t, dir, "resume", r2); code != exitWaiting {
			t.Fatalf("resume %s through %s: exit %d: %s", r2, dir, code, errs)
		}
		if code, out, errs := process(t, dir, "send", r3, "go", "41"); code != exitOK || out != "42\n" {
			t.Fatalf("send to %s through %s: exit %d, %q: %s", r3, dir, code, out, errs)
		}
		if st := status(r1); !strings.Contains(st, "cancelled") {
			t.Fatalf("%s after cancel: %s", r1, st)
		}
	}
	// Host a dies: its trees are taken over, by the command or by b.
	admit("r7")
	admit("r8")
	pa.cmd.Process.Kill()
	<-pa.done
	if code, _, errs := process(t, none, "cancel", "r7"); code != exitOK {
		t.Fatalf("cancel of a dead host's tree: exit %d: %s", code, errs)
	}
	if code, out, errs := process(t, b, "send", "r8", "go", "1"); code != exitOK || out != "2\n" {
		t.Fatalf("send to a dead host's tree through b: exit %d, %q: %s", code, out, errs)
	}
}

// Two hosts serving Slack on one shared store run one dispatcher between
// them: the second stands by, and takes over when the first is killed.
func TestOneSlackDispatcherAcrossHosts(t *testing.T) {
	sharedStore(t)
	fake := fakeslack.New(nil)
	defer fake.Close()
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-test")
	t.Setenv("SLACK_APP_TOKEN", "xapp-test")
	t.Setenv("SLACK_API_URL", fake.URL())
	progs := t.TempDir()
	pa := startServeProc(t, os.Args[0], filepath.Join(t.TempDir(), "a"), true, "--slack", "--progs", progs)
	waitLog(t, pa, "this host runs the cluster's dispatcher")
	pb := startServeProc(t, os.Args[0], filepath.Join(t.TempDir(), "b"), true, "--slack", "--progs", progs)
	waitLog(t, pb, "runs the cluster's dispatcher; this host takes over if it goes")
	if !fake.WaitConnections(1, time.Minute) {
		t.Fatal("host a never connected to Slack")
	}
	if fake.WaitConnections(2, 0) { // b checked its tokens, and stands by
		t.Fatal("two hosts connected to Slack's Socket Mode at once")
	}
	pa.cmd.Process.Kill()
	<-pa.done
	waitLog(t, pb, "slack: this host runs the cluster's dispatcher")
	if !fake.WaitConnections(2, time.Minute) {
		t.Fatalf("host b never connected to Slack once host a died:\n%s", pb.stderr)
	}
}

// On the Events API, the host that stands by answers 503 with Retry-After
// at once (Slack, or a balancer before the hosts, tries again and reaches
// the dispatcher) instead of holding requests on a port it never serves;
// once it runs the dispatcher, its requests reach the Events API.
func TestEventsAPIStandbyAnswers(t *testing.T) {
	sharedStore(t)
	fake := fakeslack.New(nil)
	defer fake.Close()
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-test")
	t.Setenv("SLACK_SIGNING_SECRET", "shh")
	t.Setenv("SLACK_API_URL", fake.URL())
	listen := regexp.MustCompile(`serving the Events API[^\n]*"listen":"([0-9.:]+)"`)
	addrOf := func(p *serveProc) string {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if m := listen.FindStringSubmatch(p.stderr.String()); m != nil {
				return m[1]
			}
			if time.Now().After(deadline) {
				t.Fatalf("no Events API address in the log:\n%s", p.stderr)
			}
		}
	}
	post := func(addr string) int {
		t.Helper()
		c := &http.Client{Timeout: 10 * time.Second}
		res, err := c.Post("http://"+addr+"/slack/events", "application/json", strings.NewReader(`{"type":"url_verification","challenge":"x"}`))
		if err != nil {
			t.Fatalf("the Events API on %s: %v", addr, err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
		return res.StatusCode
	}
	progs := t.TempDir()
	pa := startServeProc(t, os.Args[0], filepath.Join(t.TempDir(), "a"), true, "--slack", "--slack-listen", "127.0.0.1:0", "--progs", progs)
	waitLog(t, pa, "this host runs the cluster's dispatcher")
	pb := startServeProc(t, os.Args[0], filepath.Join(t.TempDir(), "b"), true, "--slack", "--slack-listen", "127.0.0.1:0", "--progs", progs)
	a, b := addrOf(pa), addrOf(pb)
	if code := post(a); code == http.StatusServiceUnavailable {
		t.Fatalf("the dispatcher's host answered %d", code)
	}
	if code := post(b); code != http.StatusServiceUnavailable {
		t.Fatalf("the standby answered %d, want 503", code)
	}
	pa.cmd.Process.Kill()
	<-pa.done
	for deadline := time.Now().Add(time.Minute); post(b) == http.StatusServiceUnavailable; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("host b still stands by a minute after host a died:\n%s", pb.stderr)
		}
	}
}

// waitLog waits (a minute at most) for p to log what.
func waitLog(t *testing.T, p *serveProc, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.stderr.String(), what); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the host never said %q:\n%s", what, p.stderr)
		}
	}
}
