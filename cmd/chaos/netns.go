// netns.go holds the partitions mode (-partitions): each node and host in a
// network namespace of its own, joined by a bridge in a hub namespace where
// the harness runs, so that setting one link down cuts one process off
// while it goes on running. The namespaces and their addresses are the
// harness's own (10.231.0.0/24 exists only inside them); nothing outside
// them changes.

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

// Environment of the harness run inside the hub: the namespaces' prefix,
// and the runehost it built and its directory, before it went in.
const (
	envNet = "RUNEHOST_CHAOS_NETNS"
	envBin = "RUNEHOST_CHAOS_BIN"
	envTmp = "RUNEHOST_CHAOS_TMP"
)

// netns names the namespaces of one run: prefix+"hub", and prefix+"1"..
// for the processes.
type netns struct{ prefix string }

// subnet is the namespaces' own network.
const subnet = "10.231.0."

func (n *netns) hub() string       { return n.prefix + "hub" }
func (n *netns) name(i int) string { return fmt.Sprintf("%s%d", n.prefix, i) }

// addr is process i's address (i from 1).
func (n *netns) addr(i int) string { return fmt.Sprintf("%s%d", subnet, 10+i) }

// ip runs ip(8) with args.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setUp makes the hub, with its bridge, and procs namespaces linked to it.
func (n *netns) setUp(procs int) error {
	steps := [][]string{
		{"netns", "add", n.hub()},
		{"-n", n.hub(), "link", "set", "lo", "up"},
		{"-n", n.hub(), "link", "add", "br0", "type", "bridge"},
		{"-n", n.hub(), "addr", "add", subnet + "1/24", "dev", "br0"},
		{"-n", n.hub(), "link", "set", "br0", "up"},
	}
	for i := 1; i <= procs; i++ {
		v := fmt.Sprintf("v%d", i)
		steps = append(steps,
			[]string{"netns", "add", n.name(i)},
			[]string{"-n", n.name(i), "link", "set", "lo", "up"},
			[]string{"-n", n.hub(), "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", n.name(i)},
			[]string{"-n", n.hub(), "link", "set", v, "master", "br0"},
			[]string{"-n", n.hub(), "link", "set", v, "up"},
			[]string{"-n", n.name(i), "addr", "add", n.addr(i) + "/24", "dev", "eth0"},
			[]string{"-n", n.name(i), "link", "set", "eth0", "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// tearDown deletes the namespaces (their links go with them).
func (n *netns) tearDown(procs int) {
	for i := 1; i <= procs; i++ {
		ip("netns", "del", n.name(i))
	}
	ip("netns", "del", n.hub())
}

// cut sets process i's link down: what it sends and what is sent to it is
// lost until heal, as in a partition (no resets: connections hang).
func (n *netns) cut(i int) error {
	return ip("-n", n.hub(), "link", "set", fmt.Sprintf("v%d", i), "down")
}

func (n *netns) heal(i int) error {
	return ip("-n", n.hub(), "link", "set", fmt.Sprintf("v%d", i), "up")
}

// command is how process i runs argv: in its namespace, which ip(8)
// enters before it execs argv (the process keeps ip's pid).
func (n *netns) command(i int, argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.name(i)}, argv...)...)
}

// partitioned builds runehost, makes the namespaces and runs the harness
// again inside the hub with the same flags; it returns the harness's exit
// code, once the namespaces are gone.
func partitioned(brk string) int {
	if os.Geteuid() != 0 {
		fmt.Println("chaos: -partitions makes network namespaces: run it as root")
		return 2
	}
	if _, err := exec.LookPath("ip"); err != nil {
		fmt.Println("chaos: -partitions needs ip(8) (Debian's iproute2)")
		return 2
	}
	tmp, err := os.MkdirTemp("", "runehost-chaos-")
	check(err)
	bin := tmp + "/runehost"
	check(build(bin, tmp, brk)) // here: the hub has no way out to the module proxy
	n := &netns{prefix: fmt.Sprintf("rhc%d", os.Getpid())}
	const procs = 6
	if err := n.setUp(procs); err != nil {
		n.tearDown(procs)
		fmt.Println("chaos:", err)
		return 2
	}
	defer n.tearDown(procs)
	self, err := os.Executable()
	check(err)
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.hub(), self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), envNet+"="+n.prefix, envBin+"="+bin, envTmp+"="+tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		fmt.Println("chaos:", err)
		return 2
	}
	go func() {
		for s := range sig {
			cmd.Process.Signal(s) // the harness stops its processes, then the namespaces go
		}
	}()
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Println("chaos:", err)
		return 2
	}
	return 0
}
