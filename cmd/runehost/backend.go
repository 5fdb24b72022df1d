// backend.go holds where a store-backed command's operations go: the store
// opened by the command itself (local), or the `runehost serve` that owns
// it (remote, through the API). Both answer in the API's types and print
// through the same code, so a command reads the same either way.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/runehost/runehost/acts/fs"
	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/client"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/server"
)

// exitDetached is the exit status of a run left to the server by Ctrl-C.
const exitDetached = exitInterrupted

// backend is the operations of the API a command needs.
type backend interface {
	Run(ctx context.Context, req api.RunRequest) (*api.RunResponse, error)
	Send(ctx context.Context, inv string, req api.Send) (*api.RunState, error)
	Resume(ctx context.Context, inv string) (*api.RunState, error)
	Resolve(ctx context.Context, inv string, ordinal uint64, req api.Resolve) (*api.RunState, error)
	// Drive goes on with inv's tree until nothing in it is runnable,
	// printing its events from cursor (where Run, Send, Resume or Resolve
	// left it), and says where inv stands.
	Drive(ctx context.Context, inv, cursor string) (*api.RunState, error)
	Cancel(ctx context.Context, inv string) error
	// Each calls fn with each invocation whose shown status is in
	// statuses (all when empty), in the ids' numeric order (r2 before
	// r10, children after their parent), until fn returns an error.
	Each(ctx context.Context, statuses []string, fn func(api.Invocation) error) error
	Inspect(ctx context.Context, inv string) (*api.Inspection, error)
	Checkpoint(ctx context.Context, inv string) ([]byte, error)
	Grants(ctx context.Context, prog string) ([]api.Grant, error)
	Grant(ctx context.Context, prog, statement string) error
	Revoke(ctx context.Context, prog, statement string) error
	CreateLink(ctx context.Context, run string, ttl time.Duration) (*api.Link, error)
	Links(ctx context.Context, run string) ([]api.Link, error)
	RevokeLinks(ctx context.Context, run, id string) (int, error)
	// Show keeps p, the progress line, up to date while Drive runs, and
	// prints events through it.
	Show(p *progress)
	// Close lets the store go (local) or does nothing (remote).
	Close()
}

// findServer looks for the server of the command's store.
func findServer(c *cli.Context) (*client.Client, bool, error) {
	dir, err := storeDir(c)
	if err != nil {
		return nil, false, err
	}
	cl, ok, err := client.Find(dir)
	if err != nil {
		return nil, false, exitf(exitInternal, "%v", err)
	}
	return cl, ok, nil
}

// openBackend goes through the store's server when one runs, and otherwise
// opens the store (see openEngine for runs).
func openBackend(c *cli.Context, runs bool) (backend, error) {
	if runs {
		// A closed pipe on stdout or stderr (runehost run ... 2>&1 | head)
		// must not kill a run mid-act: writes fail instead, and the run
		// goes on to its end.
		signal.Ignore(syscall.SIGPIPE)
	}
	cl, ok, err := findServer(c)
	if err != nil {
		return nil, err
	}
	w := c.App.ErrWriter
	if ok {
		return &remote{c: cl, w: w, color: isTerminal(w)}, nil
	}
	e, done, err := openEngine(c, runs)
	if err != nil {
		return nil, err
	}
	l := &local{s: &server.Service{E: e, Clock: nowMillis}, done: done, w: w, color: isTerminal(w)}
	e.OnEvent = l.event
	return l, nil
}

// refuseServed refuses a command that needs the store to itself while a
// server owns it.
func refuseServed(c *cli.Context) error {
	cl, ok, err := findServer(c)
	if err != nil || !ok {
		return err
	}
	dir, _ := storeDir(c)
	return exitf(exitUsage, "the store %s is served by runehost serve (pid %d); stop it first", dir, cl.Discovery.PID)
}

// failed is a backend's error as the command's outcome: the API's codes
// that say the request was wrong are bad usage, the rest (the host's
// failures, and a server that cannot be reached) exit with internal.
func failed(cmd string, err error, internal int) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	code := internal
	var ae *api.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case api.CodeBadRequest, api.CodeNotFound, api.CodeConflict, api.CodeCompile, api.CodeRefused, api.CodeTooLarge, api.CodeUnauthorized:
			code = exitUsage
		}
	}
	return exitf(code, "%s: %v", cmd, err)
}

// drive goes on with inv's tree and reports where it stands; a failure of
// the host exits with code. An interrupt (Ctrl-C) stops the run at its next
// slice with its checkpoint stored, and the command says how to resume it;
// through a server, it leaves the run to the server and says how to follow
// it again (interrupt.go).
func drive(c *cli.Context, b backend, cmd, inv, file, cursor string, code int) error {
	_, served := b.(*remote)
	var w io.Writer = c.App.ErrWriter
	p := startProgress(c)
	if p != nil {
		b.Show(p)
		w = p
	}
	ctx, stop := interrupts(c.Context, w, inv, hintArgs(c, "resume", inv), served)
	defer stop()
	rs, err := b.Drive(ctx, inv, cursor)
	if !served && errors.Is(err, host.ErrClaimed) && ctx.Err() == nil {
		// A store shared by hosts, where another host drives the tree (a
		// command asked of it, say): this command follows it there.
		rs, err = driveClaimed(ctx, c, b, inv)
	}
	if served && err != nil && ctx.Err() == nil && client.Gone(err) {
		// The server died under the run; the run is in the store. With
		// no server, this command opens the store and drives it on, as it
		// would have without one.
		if nb, oerr := openBackend(c, true); oerr != nil {
			err = fmt.Errorf("%w (and the store cannot be opened here: %v)", err, oerr)
		} else if _, again := nb.(*remote); again {
			nb.Close() // another server took the store: follow it there
			err = fmt.Errorf("%w: another server serves the store now (%s)", err, hintArgs(c, "events", "--follow", inv))
		} else {
			defer nb.Close()
			fmt.Fprintf(c.App.ErrWriter, "the server went away; %s goes on here, from its last checkpoint\n", inv)
			b, served = nb, false
			rs, err = driveClaimed(ctx, c, b, inv)
		}
	}
	if p != nil {
		p.Stop()
	}
	if ctx.Err() != nil { // an interrupt, or the caller's context (realMainContext)
		if served {
			fmt.Fprintf(c.App.ErrWriter, "detached: %s goes on in the server (%s)\n", inv, hintArgs(c, "events", "--follow", inv))
			return &exitError{code: exitDetached}
		}
		if err == nil && rs != nil && rs.Sleeps != 0 {
			fmt.Fprintf(c.App.ErrWriter, "interrupted: %s sleeps until %s with its checkpoint stored; nothing it did will be done again (%s goes on)\n", inv, time.UnixMilli(rs.Sleeps).Format("15:04:05 MST"), hintArgs(c, "resume", inv))
			return &exitError{code: exitInterrupted}
		}
		if err == nil && rs != nil && rs.Status != "running" {
			return report(c, inv, file, rs) // it ended as it stopped
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return exitf(code, "%s: %v", cmd, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "interrupted: %s stopped%s with its checkpoint stored; nothing it did will be done again (%s)\n", inv, stoppedAt(b, inv), hintArgs(c, "resume", inv))
		return &exitError{code: exitInterrupted}
	}
	if err != nil {
		return exitf(code, "%s: %v", cmd, err)
	}
	return report(c, inv, file, rs)
}

// driveClaimed drives inv on a store shared with other hosts, where the
// tree may be another's: a live host's, or a dead server's until its claim
// lapses. Until it can drive the tree, or the tree ends or waits where it
// runs, it looks again every quarter second.
func driveClaimed(ctx context.Context, c *cli.Context, b backend, inv string) (*api.RunState, error) {
	said := false
	for {
		rs, err := b.Drive(ctx, inv, "")
		if !errors.Is(err, host.ErrClaimed) || ctx.Err() != nil {
			return rs, err
		}
		if !said {
			fmt.Fprintf(c.App.ErrWriter, "%s is another host's (%v); following it here\n", inv, err)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(host.SharedPoll):
		}
	}
}

// stoppedAt says how far an interrupted run got, if its checkpoint says.
func stoppedAt(b backend, inv string) string {
	in, err := b.Inspect(context.Background(), inv)
	if err != nil || in.Checkpoint == nil {
		return ""
	}
	return fmt.Sprintf(" after %s steps", grouped(in.Checkpoint.Used))
}

// absStatement makes the directory of an fs grant absolute here: a server
// resolves a relative one against its own working directory.
func absStatement(st string) string {
	tag, target, ok := strings.Cut(st, ":")
	if !ok || (tag != fs.Read && tag != fs.Write && tag != fs.List) {
		return st
	}
	dir, guest := fs.SplitTarget(target)
	if dir == "" || filepath.IsAbs(dir) {
		return st
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return st
	}
	if guest != "" || strings.Contains(target, "=") {
		abs += "=" + guest
	}
	return tag + ":" + abs
}

// printEventTo is how a command that drives prints a run's event: the
// invocation, then the event's line, on stderr.
func printEventTo(w io.Writer, ev events.Event, color bool) {
	if !events.Quiet(&ev) {
		fmt.Fprintf(w, "%s %s\n", ev.Run, events.Line(&ev, color))
	}
}

// local is the store opened by this command.
type local struct {
	s     *server.Service
	done  func()
	w     io.Writer
	color bool
	p     *progress

	mu   sync.Mutex
	live bool           // printing events as they come: Drive has begun
	held []events.Event // events before, printed when it begins
}

// event prints an event once Drive began, holding it until then: Run's
// admission logs before the command names the invocation.
func (l *local) event(ev events.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live {
		l.held = append(l.held, ev)
		return
	}
	if l.p != nil && ev.Kind == events.KindToolCall {
		l.p.act()
	}
	printEventTo(l.w, ev, l.color)
}

func (l *local) Show(p *progress) {
	l.mu.Lock()
	l.p, l.w = p, p
	l.mu.Unlock()
	l.s.E.OnSlice = func(_ string, steps uint64) { p.slice(steps) }
}

func (l *local) Run(ctx context.Context, req api.RunRequest) (*api.RunResponse, error) {
	return l.s.Run(ctx, req)
}

func (l *local) Send(_ context.Context, inv string, req api.Send) (*api.RunState, error) {
	return l.s.Send(inv, req)
}

func (l *local) Resume(_ context.Context, inv string) (*api.RunState, error) {
	return l.s.Resume(inv)
}

func (l *local) Resolve(_ context.Context, inv string, ordinal uint64, req api.Resolve) (*api.RunState, error) {
	return l.s.Resolve(inv, ordinal, req)
}

func (l *local) Drive(ctx context.Context, inv, _ string) (*api.RunState, error) {
	l.mu.Lock()
	l.live = true
	for _, ev := range l.held {
		printEventTo(l.w, ev, l.color)
	}
	l.held = nil
	l.mu.Unlock()
	for last := int64(0); ; {
		rs, err := l.s.Drive(ctx, inv)
		if err != nil || rs == nil || rs.Sleeps == 0 || rs.Sleeps == last {
			return rs, err // (the same deadline again: it did not wake, and waiting again would not help)
		}
		last = rs.Sleeps
		// Its tree only sleeps: nothing but this command drives it here,
		// so it waits for the first deadline and goes on.
		sleepNote(l.w, inv, rs.Sleeps, false)
		if !sleepUntil(ctx, rs.Sleeps) {
			return rs, nil // interrupted while it sleeps: drive says so
		}
	}
}

// sleepNote says, on w, that inv's tree sleeps until a deadline, and what
// Ctrl-C does meanwhile.
func sleepNote(w io.Writer, inv string, until int64, served bool) {
	then := time.UnixMilli(until).Format("15:04:05 MST")
	if served {
		fmt.Fprintf(w, "%s sleeping until %s (the server goes on then; Ctrl-C detaches)\n", inv, then)
		return
	}
	fmt.Fprintf(w, "%s sleeping until %s (Ctrl-C detaches; runehost resume %s goes on)\n", inv, then, inv)
}

// sleepUntil waits until the unix ms until, or ctx's end (false).
func sleepUntil(ctx context.Context, until int64) bool {
	t := time.NewTimer(time.Until(time.UnixMilli(until)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (l *local) Cancel(_ context.Context, inv string) error { return l.s.Cancel(inv) }

// Each reads a page of records at a time: a million invocations cost
// their ids, not their records.
func (l *local) Each(_ context.Context, statuses []string, fn func(api.Invocation) error) error {
	return l.s.Each(statuses, "", naturalCompare, fn)
}

func (l *local) Inspect(_ context.Context, inv string) (*api.Inspection, error) {
	return l.s.Inspect(inv)
}

func (l *local) Checkpoint(_ context.Context, inv string) ([]byte, error) {
	return l.s.Checkpoint(inv)
}

func (l *local) Grants(_ context.Context, prog string) ([]api.Grant, error) {
	return l.s.Grants(prog)
}

func (l *local) Grant(_ context.Context, prog, statement string) error {
	_, err := l.s.Grant(api.GrantRequest{Prog: prog, Statements: []string{absStatement(statement)}})
	return err
}

func (l *local) Revoke(_ context.Context, prog, statement string) error {
	_, err := l.s.Revoke(api.GrantRequest{Prog: prog, Statements: []string{absStatement(statement)}})
	return err
}

func (l *local) CreateLink(_ context.Context, run string, ttl time.Duration) (*api.Link, error) {
	return l.s.CreateLink(run, api.LinkRequest{TTL: ttl.String()})
}

func (l *local) Links(_ context.Context, run string) ([]api.Link, error) { return l.s.Links(run) }

func (l *local) RevokeLinks(_ context.Context, run, id string) (int, error) {
	return l.s.RevokeLinks(run, id)
}

func (l *local) Close() { l.done() }

// remote is the server that owns the store.
type remote struct {
	c     *client.Client
	w     io.Writer
	color bool
	p     *progress // counts acts; the server's slices are not seen here
}

func (r *remote) Show(p *progress) {
	p.mu.Lock()
	p.served = true
	p.mu.Unlock()
	r.p, r.w = p, p
}

func (r *remote) Run(ctx context.Context, req api.RunRequest) (*api.RunResponse, error) {
	return r.c.Run(ctx, req)
}

func (r *remote) Send(ctx context.Context, inv string, req api.Send) (*api.RunState, error) {
	return r.c.Send(ctx, inv, req)
}

func (r *remote) Resume(ctx context.Context, inv string) (*api.RunState, error) {
	return r.c.Resume(ctx, inv)
}

func (r *remote) Resolve(ctx context.Context, inv string, ordinal uint64, req api.Resolve) (*api.RunState, error) {
	return r.c.Resolve(ctx, inv, ordinal, req)
}

func (r *remote) Drive(ctx context.Context, inv, cursor string) (*api.RunState, error) {
	var noted int64
	for {
		st, err := r.c.Follow(ctx, inv, client.FollowOptions{Tree: true, Cursor: cursor, UntilSettled: true, Busy: busyNote(r.w)}, func(ev events.Event) {
			if r.p != nil && ev.Kind == events.KindToolCall {
				r.p.act()
			}
			printEventTo(r.w, ev, r.color)
		})
		if err == nil && st != nil && st.Status == "running" && st.Paused != "" {
			// The server's turn failed and paused it, as a local RunTree fails.
			return nil, fmt.Errorf("invocation %s: %s", inv, st.Paused)
		}
		if err != nil || st == nil || st.Sleeps == 0 || st.Cursor == "" {
			return st, err
		}
		// Its tree only sleeps, and the server wakes it: follow on, from
		// where the stream stopped, at the deadline (or sooner: a cancel,
		// say, is seen within a poll).
		if st.Sleeps != noted && st.Sleeps > time.Now().UnixMilli() { // (not a run woken meanwhile)
			sleepNote(r.w, inv, st.Sleeps, true)
			noted = st.Sleeps
		}
		cursor = st.Cursor
		if !sleepUntil(ctx, min(st.Sleeps, time.Now().Add(sleepPoll).UnixMilli())) {
			return st, nil
		}
	}
}

// sleepPoll is how often a command attached to a server looks at a run
// that sleeps.
const sleepPoll = 2 * time.Second

// busyNote says, on w, that the server refused an event stream for its
// cap of live streams, and when it is tried again.
func busyNote(w io.Writer) func(*api.Error, time.Duration) {
	return func(ae *api.Error, wait time.Duration) {
		fmt.Fprintf(w, "runehost: the server is at its cap of live event streams (429 Too Many Requests): %s; following again in %v\n", ae.Message, wait)
	}
}

func (r *remote) Cancel(ctx context.Context, inv string) error {
	_, err := r.c.Cancel(ctx, inv)
	return err
}

// Each pages through the server's list (its own order), and sorts the
// rows it kept.
func (r *remote) Each(ctx context.Context, statuses []string, fn func(api.Invocation) error) error {
	var all []api.Invocation
	for after := ""; ; {
		l, err := r.c.List(ctx, statuses, after, remotePage)
		if err != nil {
			return err
		}
		all = append(all, l.Invocations...)
		if l.Next == "" {
			break
		}
		after = l.Next
	}
	slices.SortStableFunc(all, func(a, b api.Invocation) int { return naturalCompare(a.ID, b.ID) })
	for _, inv := range all {
		if err := fn(inv); err != nil {
			return err
		}
	}
	return nil
}

// remotePage is how many invocations one request to the server lists (a
// variable for tests).
var remotePage = 1000

func (r *remote) Inspect(ctx context.Context, inv string) (*api.Inspection, error) {
	return r.c.Inspect(ctx, inv)
}

func (r *remote) Checkpoint(ctx context.Context, inv string) ([]byte, error) {
	return r.c.Checkpoint(ctx, inv)
}

func (r *remote) Grants(ctx context.Context, prog string) ([]api.Grant, error) {
	return r.c.Grants(ctx, prog)
}

func (r *remote) Grant(ctx context.Context, prog, statement string) error {
	_, err := r.c.Grant(ctx, api.GrantRequest{Prog: prog, Statements: []string{absStatement(statement)}})
	return err
}

func (r *remote) Revoke(ctx context.Context, prog, statement string) error {
	_, err := r.c.Revoke(ctx, api.GrantRequest{Prog: prog, Statements: []string{absStatement(statement)}})
	return err
}

func (r *remote) CreateLink(ctx context.Context, run string, ttl time.Duration) (*api.Link, error) {
	return r.c.CreateLink(ctx, run, api.LinkRequest{TTL: ttl.String()})
}

func (r *remote) Links(ctx context.Context, run string) ([]api.Link, error) {
	return r.c.Links(ctx, run)
}

func (r *remote) RevokeLinks(ctx context.Context, run, id string) (int, error) {
	return r.c.RevokeLinks(ctx, run, id)
}

func (r *remote) Close() {}
