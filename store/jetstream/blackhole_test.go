// blackhole_test.go: a store whose server went silent, its connection
// open but nothing coming back (a partition, not a crash), finds another
// server of the cluster rather than wait for the connection to time out.

package jetstream_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runehost/runehost/internal/natstest"
	"github.com/runehost/runehost/store"
	"github.com/runehost/runehost/store/jetstream"
)

// blackhole forwards to addr until cut; then it forwards nothing either
// way and closes nothing, as a link that went down does.
type blackhole struct {
	l    net.Listener
	addr string
	cut  atomic.Bool
	mu   sync.Mutex
	open []net.Conn
}

func newBlackhole(t *testing.T, addr string) *blackhole {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{l: l, addr: addr}
	t.Cleanup(func() {
		l.Close()
		b.mu.Lock()
		for _, c := range b.open {
			c.Close()
		}
		b.mu.Unlock()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			b.mu.Lock()
			b.open = append(b.open, c, up)
			b.mu.Unlock()
			go b.pipe(up, c)
			go b.pipe(c, up)
		}
	}()
	return b
}

func (b *blackhole) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for b.cut.Load() {
			time.Sleep(10 * time.Millisecond) // what came is lost; the sockets stay open
			n = 0
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (b *blackhole) url() string { return "nats://" + b.l.Addr().String() }

// A host whose only configured server goes silent commits again through
// another server of the cluster (learnt from the first), well before its
// patience runs out: its client pings the server and gives a silent one up.
func TestSilentServerIsLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster: not in -short")
	}
	_, urls := natstest.Cluster(t, 3)
	bh := newBlackhole(t, urls[0][len("nats://"):])
	s, err := jetstream.Open(store.Options{}, jetstream.Config{URLs: []string{bh.url()}, Stream: "SILENT", Replicas: 3, Timeout: time.Second, Wait: time.Minute, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	put := func(v int) error {
		return s.Update(store.Synced, func(tx *store.Tx) error { return tx.Put(store.K("n"), v) })
	}
	if err := put(1); err != nil {
		t.Fatal(err)
	}
	bh.cut.Store(true)
	cut := time.Now()
	if err := put(2); err != nil { // the default pings (2 minutes, 2 outstanding) outlast the minute's patience
		t.Fatalf("after the server went silent: %v", err)
	}
	t.Logf("committed again %s after the server went silent", time.Since(cut).Round(time.Millisecond))
	var n int
	if err := s.View(func(tx *store.Tx) error { _, err := tx.Get(store.K("n"), &n); return err }); err != nil || n != 2 {
		t.Fatalf("n = %d, %v", n, err)
	}
}
