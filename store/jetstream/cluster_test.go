// cluster_test.go tests the JetStream backend on a three-node
// cluster with R3 streams: hosts on different nodes share one store.

package jetstream_test

import (
	"sync"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/natstest"
	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/store/jetstream"
)

// Three stores, each connected to its own node of one cluster, increment one
// counter; a node stops meanwhile. The counter comes out exact: no commit
// lost, none applied twice.
func TestJetStreamClusterShared(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster: not in -short")
	}
	nodes, urls := natstest.Cluster(t, 3)
	open := func(url string) *store.Store {
		s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: []string{url}, Stream: "SHARED", Replicas: 3, Timeout: time.Second, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// Clients on the first two nodes; the third stops.
	stores := []*store.Store{open(urls[0]), open(urls[1]), open(urls[0])}
	key := store.K("n")
	if err := stores[0].Update(store.Synced, func(tx *store.Tx) error { return tx.Put(key, 0) }); err != nil {
		t.Fatal(err)
	}
	const each = 40
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := s.Retry(store.Synced, func(tx *store.Tx) error {
					var n int
					if _, err := tx.Get(key, &n); err != nil {
						return err
					}
					return tx.Put(key, n+1)
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	nodes[2].Shutdown()
	wg.Wait()
	var n int
	if err := stores[1].View(func(tx *store.Tx) error { _, err := tx.Get(key, &n); return err }); err != nil {
		t.Fatal(err)
	}
	if n != 3*each {
		t.Fatalf("counter %d, want %d", n, 3*each)
	}
}

// Hurry: once every server is gone, an operation gives up at the time
// Hurry set rather than after the store's whole patience (a draining host).
func TestHurryGivesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("a node stopped: not in -short")
	}
	node, err := jetstream.StartNode(jetstream.NodeOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: []string{node.ClientURL()}, Stream: "HURRY", Memory: true, Timeout: time.Second, Wait: time.Hour, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("n"), 1) }); err != nil {
		t.Fatal(err)
	}
	node.Shutdown()
	s.Hurry(time.Now().Add(time.Second))
	done := make(chan error, 1)
	go func() { done <- s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("n"), 2) }) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("committed with no server")
		}
		t.Logf("gave up: %v", err)
	case <-time.After(2 * time.Minute): // the store's own patience is an hour
		t.Fatal("still trying two minutes after Hurry's second")
	}
}
