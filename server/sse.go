// sse.go holds the live stream of a run's events as Server-Sent Events:
// read from the store by seq, so a client that reconnects with its
// Last-Event-ID sees every event once, in order, whatever it missed.

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/host"
)

// Cursor is where a stream stands: the last seq sent of each run. Its text
// form, the SSE id, is the seq alone for a one-run stream (the event's own
// seq) and RUN:SEQ,RUN:SEQ for a tree.
type Cursor map[string]uint64

// ParseCursor reads a cursor for the stream of inv.
func ParseCursor(inv, s string) (Cursor, error) {
	c := Cursor{}
	if s == "" {
		return c, nil
	}
	if !strings.Contains(s, ":") {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, api.Errorf(api.CodeBadRequest, "cursor %q: want a seq, or RUN:SEQ,...", s)
		}
		c[inv] = n
		return c, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		run, seq, ok := strings.Cut(part, ":")
		n, err := strconv.ParseUint(seq, 10, 64)
		if !ok || err != nil || run == "" || len(c) >= 4096 {
			return nil, api.Errorf(api.CodeBadRequest, "cursor %q: want RUN:SEQ,...", s)
		}
		c[run] = n
	}
	return c, nil
}

// String is the cursor's text form.
func (c Cursor) String(inv string, tree bool) string {
	if !tree {
		return strconv.FormatUint(c[inv], 10)
	}
	runs := make([]string, 0, len(c))
	for r := range c {
		runs = append(runs, r)
	}
	slices.Sort(runs)
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", r, c[r])
	}
	return b.String()
}

// hub wakes the streams of a tree when something of it changes.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]bool // by root
	// hear, if set, has other processes on the store wake a root's streams
	// (host.Engine.HearChanged) while it has any; ears are their stops.
	hear func(root string) (stop func())
	ears map[string]func()
}

// subscribe wakes the returned channel when root's tree changes; the
// function unsubscribes and says whether it was the tree's last stream.
func (h *hub) subscribe(inv string) (chan struct{}, func() bool) {
	root := rootOf(inv)
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[chan struct{}]bool{}
	}
	if h.subs[root] == nil {
		h.subs[root] = map[chan struct{}]bool{}
		if h.hear != nil {
			if h.ears == nil {
				h.ears = map[string]func(){}
			}
			h.ears[root] = h.hear(root)
		}
	}
	h.subs[root][ch] = true
	h.mu.Unlock()
	return ch, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[root], ch)
		if len(h.subs[root]) == 0 {
			delete(h.subs, root)
			if stop := h.ears[root]; stop != nil {
				delete(h.ears, root)
				stop()
			}
			return true
		}
		return false
	}
}

func rootOf(inv string) string { r, _, _ := strings.Cut(inv, "."); return r }

// publish wakes the streams of inv's tree.
func (h *hub) publish(inv string) {
	root := rootOf(inv)
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[root] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// treeRelist is how often a live stream of a tree lists its invocations
// again while it runs (a scan of the store: on JetStream a consumer); it
// lists them at once after a spawn's outcome, and before it calls the
// tree settled.
const treeRelist = time.Second

// streamBatch is how many events of one run a stream reads at a time.
const streamBatch = 256

// windowMax bounds the encoded events kept of one run.
const windowMax = 1024

// encoded is an event as a stream sends it.
type encoded struct {
	seq   uint64
	data  []byte // the event's JSON
	spawn bool   // the outcome of an act that made a child: a tree has one more
}

// windows keep the newest encoded events of each run that streams read:
// a hundred clients of one run read and encode each event once. The run
// log is append-only, so what a window holds never goes stale.
type windows struct {
	mu   sync.Mutex
	runs map[string]*window
	// reads counts the streams' reads of the store: a log's events not
	// kept, a tree's invocations listed (on JetStream, each a scan).
	reads atomic.Int64
}

type window struct {
	mu  sync.Mutex
	evs []encoded // contiguous seqs
}

// read returns up to streamBatch events of run after seq after.
func (ws *windows) read(e *host.Engine, run string, after uint64) ([]encoded, error) {
	ws.mu.Lock()
	if ws.runs == nil {
		ws.runs = map[string]*window{}
	}
	w := ws.runs[run]
	if w == nil {
		w = &window{}
		ws.runs[run] = w
	}
	ws.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.evs); n > 0 && after+1 >= w.evs[0].seq && after < w.evs[n-1].seq {
		i := int(after + 1 - w.evs[0].seq)
		return w.evs[i:min(n, i+streamBatch)], nil
	}
	evs, ok := e.Kept(run, after, streamBatch) // a run driven here: no store read
	if !ok {
		ws.reads.Add(1)
		var err error
		if evs, err = e.Events(run, after+1, streamBatch); err != nil {
			return nil, err
		}
	}
	out := make([]encoded, 0, len(evs))
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		tr := ev.ToolResult
		spawn := tr != nil && tr.OK && (tr.Tool == host.SpawnTag || strings.HasPrefix(tr.Tool, host.SpawnTag+":"))
		out = append(out, encoded{ev.Seq, b, spawn})
	}
	// Kept when it goes on from the window (or starts it): the newest are
	// what live streams ask for next.
	if len(out) > 0 && (len(w.evs) == 0 || w.evs[len(w.evs)-1].seq == after) {
		w.evs = append(w.evs, out...)
		if len(w.evs) > windowMax {
			w.evs = slices.Clone(w.evs[len(w.evs)-windowMax/2:])
		}
	}
	return out, nil
}

// drop forgets the windows of a tree no stream follows any more.
func (ws *windows) drop(root string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for run := range ws.runs {
		if r, _, _ := strings.Cut(run, "."); r == root {
			delete(ws.runs, run)
		}
	}
}

// Follow is a stream's request.
type Follow struct {
	Inv          string
	Tree         bool   // the invocation and its descendants
	Cursor       Cursor // what was sent already
	UntilSettled bool   // end at the first state message
}

// settled says whether nothing in ids is runnable and no turn of the tree
// runs, and returns where its first stands.
func (s *Server) settled(ids []string) (*host.RunState, bool, error) {
	if s.svc.E.Busy(ids[0]) {
		return nil, false, nil // a turn runs here: no need to read the store (on JetStream, requests) to know
	}
	var first *host.RunState
	for i, id := range ids {
		st, err := s.svc.E.State(id)
		if err != nil {
			return nil, false, err
		}
		if i == 0 {
			first = st
		}
		if st.Status == host.Running && st.Paused == "" {
			return first, false, nil
		}
	}
	return first, !s.svc.E.Busy(ids[0]), nil
}

// stream writes f's events to w as SSE until the tree's root ends (or, with
// UntilSettled, settles), the client goes, or the server stops.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, f Follow) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.Flush() // the headers now: a client knows it is following before the first event
	wake, done := s.hub.subscribe(f.Inv)
	defer func() {
		if done() {
			s.windows.drop(rootOf(f.Inv))
		}
	}()
	ping := time.NewTicker(s.ping)
	defer ping.Stop()
	poll := time.NewTicker(s.poll) // a change no one published
	defer poll.Stop()
	lastState := ""
	ids := []string{f.Inv}
	var listed time.Time // when a tree's invocations were listed
	for {
		fresh := false
		if f.Tree && time.Since(listed) >= treeRelist {
			var err error
			s.windows.reads.Add(1)
			if ids, err = s.svc.E.Tree(f.Inv); err != nil {
				return err
			}
			listed, fresh = time.Now(), true
		}
		// The state is read before the events: what a settled tree logged
		// is then all read below, before the state is sent.
		first, settled, err := s.settled(ids)
		if err != nil {
			return err
		}
		if settled && f.Tree && !fresh {
			listed = time.Time{} // a child spawned since the list is read before the tree is called settled
			continue
		}
		sent := false
		for _, id := range ids {
			for {
				evs, err := s.windows.read(s.svc.E, id, f.Cursor[id])
				if err != nil {
					return err
				}
				for _, ev := range evs {
					if ev.spawn {
						listed = time.Time{} // list the tree again at once: its new child's events follow its parent's as they come
					}
					f.Cursor[id] = ev.seq
					if _, err := fmt.Fprintf(w, "id: %s\ndata: %s\n\n", f.Cursor.String(f.Inv, f.Tree), ev.data); err != nil {
						return err
					}
					sent = true
				}
				if len(evs) < streamBatch {
					break
				}
			}
		}
		if sent {
			if err := rc.Flush(); err != nil {
				return err
			}
		}
		if settled && !sent {
			key := first.Status.String() + "\x00" + first.Waiting
			if key != lastState {
				lastState = key
				// Read once a state: it reads the tree again (Sleeps).
				st := s.svc.runState(f.Inv, first)
				st.Cursor = f.Cursor.String(f.Inv, f.Tree) // where a client following on starts
				b, _ := json.Marshal(st)
				if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", b); err != nil {
					return err
				}
				if err := rc.Flush(); err != nil {
					return err
				}
			}
			if f.UntilSettled || first.Status.Terminal() {
				return nil
			}
		} else if !settled {
			lastState = ""
		}
		if sent {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.stopping:
			return nil
		case <-wake:
		case <-poll.C:
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil {
				return err
			}
		}
	}
}
