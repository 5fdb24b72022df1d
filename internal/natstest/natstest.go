// Package natstest starts NATS JetStream clusters of embedded nodes for
// tests and benchmarks.
package natstest

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/runehost/runehost/store/jetstream"
)

// Cluster starts n embedded nodes in this process, routed to each other, and
// waits until the cluster can place replicated streams. It returns the nodes
// and their client URLs; the nodes stop when the test ends.
func Cluster(t testing.TB, n int) ([]*jetstream.Node, []string) {
	t.Helper()
	base := t.TempDir()
	client, route := Ports(t, n), Ports(t, n)
	opts := make([]jetstream.NodeOptions, n)
	for i := range n {
		o := jetstream.NodeOptions{
			Dir: filepath.Join(base, fmt.Sprintf("n%d", i+1)), Name: fmt.Sprintf("n%d", i+1),
			Listen: fmt.Sprintf("127.0.0.1:%d", client[i]), Cluster: "runehost-test",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", route[i]),
		}
		for j := range n {
			if j != i {
				o.Routes = append(o.Routes, fmt.Sprintf("nats://127.0.0.1:%d", route[j]))
			}
		}
		opts[i] = o
	}
	nodes := make([]*jetstream.Node, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var err error
			nodes[i], err = jetstream.StartNode(opts[i])
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Shutdown()
		}
	})
	urls := make([]string, n)
	for i, nd := range nodes {
		urls[i] = nd.ClientURL()
	}
	deadline := time.Now().Add(30 * time.Second)
	for !Ready(nodes) {
		if time.Now().After(deadline) {
			t.Fatal("natstest: the cluster did not elect a leader that sees every node within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nodes, urls
}

// Ready reports whether the cluster's leader sees every node and every node
// is current: before that, a replicated stream may find no peers to go on.
func Ready(nodes []*jetstream.Node) bool {
	leader := false
	for _, nd := range nodes {
		if !nd.Ready() {
			return false
		}
		if p := nd.MetaPeers(); p == len(nodes) {
			leader = true
		}
	}
	return leader
}

// Ports are n free loopback ports.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return ports
}
