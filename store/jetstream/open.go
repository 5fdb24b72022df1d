// open.go holds how a store on JetStream is opened: the servers it joins,
// or a node embedded in this process (node.go), and the stream it keeps.

package jetstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runehost/runehost/store"
)

func init() {
	store.RegisterEnv(func(v string, opts store.Options) (*store.Store, error) {
		js, err := backendFromEnv(v, opts)
		if err != nil {
			return nil, err
		}
		return Open(opts, *js)
	})
}

// pingEvery is how often a client pings its server; three unanswered
// pings in a row give the server up.
const pingEvery = time.Second

// Config configures a store kept in NATS JetStream instead of Badger.
type Config struct {
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
	// Shared opens the store without taking its hold (hold.go), beside
	// other processes: their transactions stay serializable, and Shared
	// tells the engine to claim each tree it drives (host/claim.go).
	Shared bool
	// Note writes, in Options.Dir, that the directory's records are kept
	// on these servers (kept.go): a host serves the store from it. A store
	// that embeds its node always notes it.
	Note bool
}

// DefaultStream is the stream a JetStream store keeps its records in.
const DefaultStream = "RUNEHOST"

// Open opens a store kept in JetStream as js says; of opts, Dir, InMemory,
// Reserve and FreeSpace count. One that embeds its node keeps the node's
// files in the store's directory, which it locks as a Badger store's is.
func Open(opts store.Options, js Config) (*store.Store, error) {
	st, _, err := open(opts, js)
	return st, err
}

// open is Open, which also returns the backend (for tests).
func open(opts store.Options, js Config) (st *store.Store, s *jsStore, err error) {
	s = &jsStore{stream: js.Stream, timeout: js.Timeout, wait: js.Wait}
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
	var lock *store.DirLock
	defer func() {
		if err != nil && lock != nil {
			lock.Unlock()
		}
	}()
	if len(js.URLs) == 0 {
		no := js.Node
		if !opts.InMemory && no.Dir == "" {
			if opts.Dir == "" {
				if opts.Dir, err = store.DefaultDir(); err != nil {
					return nil, nil, err
				}
			}
			if lock, err = store.LockDir(opts.Dir); err != nil {
				return nil, nil, err
			}
			if err = store.NotBadger(opts.Dir); err != nil {
				return nil, nil, err
			}
			no.Dir = filepath.Join(opts.Dir, "nats")
		}
		if opts.InMemory {
			js.Memory = true
		}
		if s.node, err = StartNode(no); err != nil {
			return nil, nil, err
		}
		if lock != nil {
			k := store.Kept{Backend: "jetstream", Stream: s.stream, Embedded: true}
			if no.Listen != "" {
				k.Listen = strings.TrimPrefix(s.node.ClientURL(), "nats://") // the port it took
			}
			if err = store.WriteKept(lock.Dir(), k); err != nil {
				s.node.Shutdown()
				return nil, nil, err
			}
		}
		s.nc, err = s.node.connect()
	} else {
		if js.Note && opts.Dir != "" {
			if err = os.MkdirAll(opts.Dir, 0o700); err != nil {
				return nil, nil, fmt.Errorf("store: %w", err)
			}
			if err = store.NotBadger(opts.Dir); err != nil {
				return nil, nil, err
			}
			if err = store.WriteKept(opts.Dir, store.Kept{Backend: "jetstream", Stream: s.stream, URLs: js.URLs}); err != nil {
				return nil, nil, err
			}
		}
		s.nc, err = nats.Connect(strings.Join(js.URLs, ","), nats.Name("runehost"), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.Timeout(s.timeout),
			nats.RetryOnFailedConnect(true), // servers starting, or one down: the first requests wait (s.wait)
			// A server cut off answers nothing and closes nothing: the pings
			// find it silent within a few seconds (the default, 2 minutes
			// twice, would outlast s.wait), and the client moves to another.
			nats.PingInterval(pingEvery), nats.MaxPingsOutstanding(3))
	}
	if err != nil {
		if s.node != nil {
			s.node.Shutdown()
		}
		return nil, nil, fmt.Errorf("store: connect to NATS: %w", err)
	}
	if err := s.setup(js); err != nil {
		s.Close()
		return nil, nil, err
	}
	st = store.OpenBackend(s, lock, opts)
	if js.Shared {
		s.shared = true
		return st, s, nil
	}
	if lock != nil { // a node of this process's own, in a directory it locked
		return st, s, nil
	}
	if err := s.take(st, "JetStream stream "+s.stream); err != nil {
		s.Close()
		return nil, nil, err
	}
	return st, s, nil
}

// setup creates (or updates) the stream.
func (s *jsStore) setup(js Config) error {
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

// backendFromEnv is the JetStream configuration envBackend asks for, or nil:
// "jetstream" embeds a node in each store; nats://URL[,URL...] opens each
// store as a stream of its own on those servers (named for its directory,
// so that it reopens), with RUNEHOST_STORE_REPLICAS replicas.
func backendFromEnv(v string, opts store.Options) (*Config, error) {
	switch {
	case v == "jetstream":
		return &Config{}, nil
	case strings.HasPrefix(v, "nats://"):
		js := &Config{URLs: strings.Split(v, ",")}
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
		return nil, fmt.Errorf("store: RUNEHOST_STORE_BACKEND=%q: want badger, jetstream or nats://URL", v)
	}
}
