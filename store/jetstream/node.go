// node.go holds an embedded NATS server with JetStream: a store's own, or
// one of a cluster's nodes (runehost nats).

package jetstream

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// jsMaxBatch is the batch size an embedded node allows; a cluster's servers
// allow what their max_batch_size says (1,000 by default).
const jsMaxBatch = 10000

// NodeOptions configure an embedded NATS server.
type NodeOptions struct {
	Dir  string // its JetStream files; "" keeps them in a temporary directory
	Name string // the server's name, unique in a cluster ("" means one made up)
	// Listen is host:port for clients (port 0: any free one); "" means none
	// (the process connects in memory).
	Listen string
	// Cluster, if set, names the cluster this node joins, routing on
	// ClusterListen (host:port) to Routes (nats://host:port).
	Cluster       string
	ClusterListen string
	Routes        []string
	// NoSync leaves fsync to the server's interval (2 minutes) instead of
	// every write: an acknowledged write may be lost with the machine.
	NoSync bool
	Logs   bool // the server logs to stderr
}

// Node is an embedded NATS server with JetStream.
type Node struct {
	srv  *server.Server
	temp string // a temporary directory to remove on Shutdown
}

// StartNode starts an embedded NATS server and waits until it takes clients.
func StartNode(o NodeOptions) (*Node, error) {
	n := &Node{}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "runehost-nats-")
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		o.Dir, n.temp = d, d
	}
	so := &server.Options{
		ServerName: o.Name, JetStream: true, StoreDir: o.Dir,
		NoLog: !o.Logs, NoSigs: true, SyncAlways: !o.NoSync,
		JetStreamLimits: server.JSLimitOpts{MaxBatchSize: jsMaxBatch, MaxBatchInflightPerStream: 1000, MaxBatchInflightTotal: 10000},
		DontListen:      o.Listen == "",
	}
	if o.Listen != "" {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("nats: listen %q: %w", o.Listen, err)
		}
		so.Host, so.Port = host, port
		if port == 0 {
			so.Port = server.RANDOM_PORT // NATS reads 0 as its default, 4222
		}
	}
	if o.Cluster != "" {
		host, port, err := splitHostPort(o.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("nats: cluster listen %q: %w", o.ClusterListen, err)
		}
		so.Cluster = server.ClusterOpts{Name: o.Cluster, Host: host, Port: port}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("nats: route %q: %w", r, err)
			}
			so.Routes = append(so.Routes, u)
		}
		if so.ServerName == "" {
			return nil, errors.New("nats: a cluster node needs a name")
		}
	}
	srv, err := server.NewServer(so)
	if err != nil {
		n.cleanup()
		return nil, fmt.Errorf("nats: %w", err)
	}
	if o.Logs {
		srv.ConfigureLogger()
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		n.cleanup()
		return nil, errors.New("nats: the embedded server did not start within 30 s")
	}
	n.srv = srv
	return n, nil
}

func splitHostPort(hp string) (string, int, error) {
	host, port, ok := strings.Cut(hp, ":")
	if !ok {
		return "", 0, errors.New("want host:port")
	}
	var p int
	if _, err := fmt.Sscan(port, &p); err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, p, nil
}

// ClientURL is the URL clients connect to ("" when it does not listen).
func (n *Node) ClientURL() string {
	if n.srv.Addr() == nil {
		return ""
	}
	return n.srv.ClientURL()
}

// Ready reports whether the node's JetStream is current with its cluster.
func (n *Node) Ready() bool { return n.srv.JetStreamIsCurrent() }

// MetaPeers is how many servers with JetStream the cluster's leader sees
// online, or -1 when this node is not the leader.
func (n *Node) MetaPeers() int {
	if !n.srv.JetStreamIsLeader() {
		return -1
	}
	return len(n.srv.JetStreamClusterPeers())
}

// Shutdown stops the server, handing over any leadership it holds.
func (n *Node) Shutdown() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
	n.cleanup()
}

func (n *Node) cleanup() {
	if n.temp != "" {
		os.RemoveAll(n.temp)
	}
}

// connect is a client connection to the node, in memory when it does not
// listen.
func (n *Node) connect() (*nats.Conn, error) {
	if n.srv.Addr() == nil {
		return nats.Connect("", nats.InProcessServer(n.srv), nats.Name("runehost"))
	}
	return nats.Connect(n.srv.ClientURL(), nats.Name("runehost"))
}
