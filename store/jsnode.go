// jsnode.go holds how a store on JetStream is opened: the servers it joins,
// or a NATS server embedded in this process, and the stream it keeps.

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// JetStream configures a store kept in NATS JetStream instead of Badger.
type JetStream struct {
	// URLs are the NATS servers to connect to. None means a server embedded
	// in this process (Node), keeping its files in the store's directory.
	URLs []string
	// Stream names the stream that holds the records ("" means RUNEHOST).
	// Stores on one cluster with different streams share nothing.
	Stream string
	// Replicas is the stream's replication (0 means 1; 3 on a cluster).
	Replicas int
	// Memory keeps the stream in memory: lost when the servers stop.
	Memory bool
	// Timeout bounds one request to the servers (0 means 5 s); Wait, how
	// long an operation keeps trying while the cluster cannot answer, as
	// while a leader is elected (0 means 30 s).
	Timeout, Wait time.Duration
	// Node, when the store embeds its server, configures it.
	Node NodeOptions
	// Shared opens the store without taking its hold (jshold.go), beside
	// other processes: their transactions stay serializable, and Shared
	// tells the engine to claim each tree it drives (host/claim.go).
	Shared bool
	// Note writes, in Options.Dir, that the directory's records are kept
	// on these servers (kept.go): a host serves the store from it. A store
	// that embeds its node always notes it.
	Note bool
}

// envBackend names the backend every store of the process is opened on when
// its Options say nothing: "jetstream" runs the test suites on an embedded
// JetStream node (make test-jetstream).
const envBackend = "RUNEHOST_STORE_BACKEND"

// DefaultStream is the stream a JetStream store keeps its records in.
const DefaultStream = "RUNEHOST"

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

// openJetStream opens a store kept in JetStream. One that embeds its node
// keeps the node's files in the store's directory, which it locks as a
// Badger store's is.
func openJetStream(opts Options, js JetStream) (st *Store, err error) {
	s := &jsStore{stream: js.Stream, timeout: js.Timeout, wait: js.Wait}
	if s.stream == "" {
		s.stream = DefaultStream
	}
	if s.timeout <= 0 {
		s.timeout = 5 * time.Second
	}
	if s.wait <= 0 {
		s.wait = 30 * time.Second
	}
	s.prefix = "rh." + strings.ToLower(s.stream)
	var lock *os.File
	defer func() {
		if err != nil && lock != nil {
			lock.Close()
		}
	}()
	if len(js.URLs) == 0 {
		no := js.Node
		if !opts.InMemory && no.Dir == "" {
			if opts.Dir == "" {
				if opts.Dir, err = DefaultDir(); err != nil {
					return nil, err
				}
			}
			if lock, err = lockDir(opts.Dir); err != nil {
				return nil, err
			}
			if err = keptInNode(opts.Dir); err != nil {
				return nil, err
			}
			if err = writeHolder(opts.Dir); err != nil {
				return nil, err
			}
			no.Dir = filepath.Join(opts.Dir, "nats")
			s.space = newReserve(opts.Dir, opts.Reserve, opts.FreeSpace)
			s.dir = opts.Dir
		}
		if opts.InMemory {
			js.Memory = true
		}
		if s.node, err = StartNode(no); err != nil {
			return nil, err
		}
		if s.dir != "" {
			k := Kept{Backend: "jetstream", Stream: s.stream, Embedded: true}
			if no.Listen != "" {
				k.Listen = strings.TrimPrefix(s.node.ClientURL(), "nats://") // the port it took
			}
			if err = writeKept(s.dir, k); err != nil {
				s.node.Shutdown()
				return nil, err
			}
		}
		s.nc, err = s.node.connect()
	} else {
		if js.Note && opts.Dir != "" {
			if err = os.MkdirAll(opts.Dir, 0o700); err != nil {
				return nil, fmt.Errorf("store: %w", err)
			}
			if err = keptInNode(opts.Dir); err != nil {
				return nil, err
			}
			if err = writeKept(opts.Dir, Kept{Backend: "jetstream", Stream: s.stream, URLs: js.URLs}); err != nil {
				return nil, err
			}
		}
		s.nc, err = nats.Connect(strings.Join(js.URLs, ","), nats.Name("runehost"), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.Timeout(s.timeout),
			nats.RetryOnFailedConnect(true)) // servers starting, or one down: the first requests wait (s.wait)
	}
	if err != nil {
		if s.node != nil {
			s.node.Shutdown()
		}
		return nil, fmt.Errorf("store: connect to NATS: %w", err)
	}
	if err := s.setup(js); err != nil {
		s.close()
		return nil, err
	}
	st = &Store{badgerStore: &badgerStore{dir: "", log: &badgerLog{}}, be: s, js: s, lock: lock}
	if js.Shared {
		s.shared = true
		return st, nil
	}
	if lock != nil { // a node of this process's own, in a directory it locked
		return st, nil
	}
	if err := st.take("JetStream stream " + s.stream); err != nil {
		s.close()
		return nil, err
	}
	return st, nil
}

// setup creates (or updates) the stream.
func (s *jsStore) setup(js JetStream) error {
	var err error
	if s.js, err = jetstream.New(s.nc); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	storage := jetstream.FileStorage
	if js.Memory {
		storage = jetstream.MemoryStorage
	}
	cfg := jetstream.StreamConfig{
		Name:               s.stream,
		Description:        "runehost's records: one subject per key (docs/store.md)",
		Subjects:           []string{s.prefix + ".k.>", s.prefix + ".p.>", s.checkSubject()},
		Storage:            storage,
		Replicas:           max(js.Replicas, 1),
		MaxMsgsPerSubject:  1,
		Discard:            jetstream.DiscardOld,
		Duplicates:         2 * time.Minute,
		AllowAtomicPublish: true,
		AllowMsgTTL:        true,
		AllowDirect:        false, // reads go to the leader: read-your-writes (NATS.md §5)
	}
	err = s.patient("create the stream "+s.stream, func() error {
		ctx, cancel := s.ctx()
		defer cancel()
		var err error
		s.st, err = s.js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: JetStream stream %s: %w", s.stream, err)
	}
	s.part = int(s.nc.MaxPayload()) - 16<<10 // room for the headers and the subject
	s.maxMsgs = 1000
	if s.node != nil {
		s.maxMsgs = jsMaxBatch
	}
	return nil
}

// lockDir locks a store's directory for as long as it is open.
func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		if errors.Is(err, errBusy) {
			return nil, &LockedError{Dir: dir, Holder: readHolder(dir)}
		}
		return nil, fmt.Errorf("store %s: lock: %w", dir, err)
	}
	return lock, nil
}

// backendFromEnv is the JetStream configuration envBackend asks for, or nil:
// "jetstream" embeds a node in each store; nats://URL[,URL...] opens each
// store as a stream of its own on those servers (named for its directory,
// so that it reopens), with RUNEHOST_STORE_REPLICAS replicas.
func backendFromEnv(opts Options) (*JetStream, error) {
	v := os.Getenv(envBackend)
	switch {
	case v == "" || v == "badger":
		return nil, nil
	case v == "jetstream":
		return &JetStream{}, nil
	case strings.HasPrefix(v, "nats://"):
		js := &JetStream{URLs: strings.Split(v, ",")}
		if r := os.Getenv("RUNEHOST_STORE_REPLICAS"); r != "" {
			if _, err := fmt.Sscan(r, &js.Replicas); err != nil {
				return nil, fmt.Errorf("store: RUNEHOST_STORE_REPLICAS=%q: %v", r, err)
			}
		}
		name := nuid.Next()
		if !opts.InMemory {
			h := sha256.Sum256([]byte(opts.Dir))
			name = hex.EncodeToString(h[:8])
		}
		js.Stream = "RUNEHOST_" + strings.ToUpper(name)
		return js, nil
	default:
		return nil, fmt.Errorf("store: %s=%q: want badger, jetstream or nats://URL", envBackend, v)
	}
}
