// service.go holds Service: the operations of the API over an engine, in
// the API's types. The HTTP handlers call it in `runehost serve`; the CLI
// calls it directly when no server runs, so both give the same answers.

package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/events"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/syntax"
	"github.com/runehost/runehost/host"
)

// DefaultLimit is a run's step limit when its request gives none.
const DefaultLimit = 10_000_000

// Service is the API's operations on one engine.
type Service struct {
	E *host.Engine
	// Loop, when set, drives what the operations make runnable (serve);
	// without one the caller drives (the CLI's RunTree).
	Loop *host.Loop
	// Clock is unix ms, for seeds and links; the wall clock's when nil.
	Clock func() int64
	// BaseURL, when set, is where the server is reached: a link made is
	// given its URL under it.
	BaseURL string
}

func (s *Service) now() int64 {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now().UnixMilli()
}

func (s *Service) notify() {
	if s.Loop != nil {
		s.Loop.Notify()
	}
}

// engineError is an engine's error in the API's terms.
func engineError(err error) error {
	var ae *api.Error
	var se *syntax.Error
	var le *host.LedgerError
	var be *host.BoundError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.As(err, &se):
		return &api.Error{Code: api.CodeCompile, Message: err.Error()}
	case errors.As(err, &be):
		return &api.Error{Code: api.CodeConflict, Message: err.Error(), Bound: be.Bound}
	case errors.Is(err, host.ErrNoSuchInvocation), errors.Is(err, host.ErrUnknownOp), errors.Is(err, host.ErrNoSuchProg):
		return &api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, host.ErrBadTransition), errors.Is(err, host.ErrEnded), errors.As(err, &le):
		return &api.Error{Code: api.CodeConflict, Message: err.Error()}
	case errors.Is(err, host.ErrBadStatement):
		return &api.Error{Code: api.CodeBadRequest, Message: err.Error()}
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error()}
}

// Run checks a prog against its grants and admits it. With a Loop it is
// driven there; without, the caller drives it (Engine.RunTree).
func (s *Service) Run(ctx context.Context, req api.RunRequest) (*api.RunResponse, error) {
	if err := checkProgName(req.Prog); err != nil {
		return nil, err
	}
	if req.Path != "" && !filepath.IsAbs(req.Path) {
		return nil, api.Errorf(api.CodeBadRequest, "run: path %q: want the source file's absolute path", req.Path)
	}
	input, err := encodeJSON(req.Input)
	if err != nil {
		return nil, api.Errorf(api.CodeBadRequest, "run: input: %v", err)
	}
	info, err := s.E.Runtime.Load(ctx, []byte(req.Source))
	if err != nil {
		return nil, engineError(err)
	}
	missing, err := s.E.Ward().Missing(req.Prog, info.ActTags)
	if err != nil {
		return nil, engineError(err)
	}
	if len(missing) > 0 && req.StrictGrants {
		e := api.Errorf(api.CodeRefused, "run: refused by --strict-grants: %s has no grant for %s", req.Prog, strings.Join(missing, ", "))
		e.Missing = missing
		for _, tag := range missing {
			e.GrantHints = append(e.GrantHints, s.E.GrantHint(req.Prog, tag))
		}
		return nil, e
	}
	limit := req.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	seed := uint64(s.now())
	if req.Seed != nil {
		seed = *req.Seed
	}
	bind := host.Binding{To: host.FileBinding(req.Path), Replace: req.Replace}
	if req.Path == "" {
		bind.To = host.SourceBinding(fmt.Sprintf("%x", info.Hash))
	}
	if err := s.E.CheckBinding(req.Prog, bind); err != nil {
		return nil, engineError(err) // before an id is spent on it
	}
	inv, err := s.E.NewInvocationID()
	if err != nil {
		return nil, engineError(err)
	}
	if req.Tokens != nil {
		ctx = host.WithTokens(ctx, *req.Tokens)
	}
	if err := s.E.AdmitBound(ctx, inv, req.Prog, "", bind, []byte(req.Source), input, limit, seed); err != nil {
		return nil, engineError(err)
	}
	s.notify()
	out := &api.RunResponse{Invocation: inv, Missing: missing}
	for _, tag := range missing {
		out.GrantHints = append(out.GrantHints, s.E.GrantHint(req.Prog, tag))
	}
	return out, nil
}

// maxProgName is the longest prog name, in bytes.
const maxProgName = 128

// checkProgName refuses a name a person could not type back: empty, long,
// or with spaces or control characters.
func checkProgName(name string) error {
	if name == "" {
		return api.Errorf(api.CodeBadRequest, "run: want the prog's name")
	}
	if len(name) > maxProgName {
		return api.Errorf(api.CodeBadRequest, "run: prog name %.20q...: longer than %d bytes", name, maxProgName)
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return api.Errorf(api.CodeBadRequest, "run: prog name %q: no spaces or control characters (--name names it otherwise)", name)
		}
	}
	if name[0] == '-' {
		return api.Errorf(api.CodeBadRequest, "run: prog name %q: may not begin with -", name)
	}
	return nil
}

// encodeJSON is a JSON value as a data value; null when empty.
func encodeJSON(j []byte) ([]byte, error) {
	if len(j) == 0 {
		j = []byte("null")
	}
	d, err := checkpoint.DataFromJSON(j)
	if err != nil {
		return nil, err
	}
	if err := machine.CheckData(d); err != nil { // what a prog could not take is bad input, refused now
		return nil, err
	}
	return checkpoint.EncodeData(d)
}

// dataJSON is a data value as JSON.
func dataJSON(b []byte) ([]byte, error) {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		return nil, err
	}
	return checkpoint.DataToJSON(d)
}

// List is the invocations in id order after after (all when ""), at most
// limit of them (all when 0), whose shown status is in statuses (all when
// empty): persisted, or projected (queued, unknown, damaged).
func (s *Service) List(statuses []string, after string, limit int) (*api.List, error) {
	out := &api.List{Invocations: []api.Invocation{}}
	err := s.Each(statuses, after, nil, func(row api.Invocation) error {
		if limit > 0 && len(out.Invocations) == limit {
			out.Next = out.Invocations[limit-1].ID
			return errEnough
		}
		out.Invocations = append(out.Invocations, row)
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	return out, nil
}

// errEnough ends an Each early.
var errEnough = errors.New("enough")

// eachPage is how many invocations Each reads at a time.
const eachPage = 1024

// Each calls fn with each invocation whose shown status is in statuses
// (all when empty), after after (in the store's bytewise order; all when
// ""), in the order of compare (the store's when nil), until fn returns an
// error, which Each returns. It holds one page of records at a time, never
// the whole list: in the store's order a page of ids too, so that a page
// of the API's list costs its own records, not the rest; in another order
// every id (a million cost about 50 MB).
func (s *Service) Each(statuses []string, after string, compare func(a, b string) int, fn func(api.Invocation) error) error {
	for _, name := range statuses {
		if !validStatus(name) {
			return api.Errorf(api.CodeBadRequest, "unknown status %q (want running, waiting, joining, completed, failed, cancelled, conflict, queued, unknown or damaged)", name)
		}
	}
	if compare == nil {
		for {
			ids, err := s.E.InvocationIDs(after, eachPage)
			if err != nil {
				return engineError(err)
			}
			if len(ids) == 0 {
				return nil
			}
			if ids[0] <= after && after != "" {
				// A store that does not keep its order would loop here.
				return api.Errorf(api.CodeInternal, "list: the store gave %s after %s", ids[0], after)
			}
			if err := s.page(ids, statuses, fn); err != nil {
				return err
			}
			after = ids[len(ids)-1]
		}
	}
	ids, err := s.E.InvocationIDs(after, 0)
	if err != nil {
		return engineError(err)
	}
	slices.SortFunc(ids, compare)
	for len(ids) > 0 {
		page := ids[:min(eachPage, len(ids))]
		ids = ids[len(page):]
		if err := s.page(page, statuses, fn); err != nil {
			return err
		}
	}
	return nil
}

// page calls fn with the rows of the invocations of ids whose shown status
// is in statuses (all when empty).
func (s *Service) page(ids, statuses []string, fn func(api.Invocation) error) error {
	invs, err := s.E.Invocations(ids)
	if err != nil {
		return engineError(err)
	}
	shown, err := s.E.Project(invs)
	if err != nil {
		return engineError(err)
	}
	for _, inv := range invs {
		st := shown[inv.ID]
		if len(statuses) > 0 && !slices.Contains(statuses, st) && !slices.Contains(statuses, inv.Status.String()) {
			continue
		}
		row := api.Invocation{ID: inv.ID, Prog: inv.Prog, Revision: inv.Revision, Status: st, Parent: inv.Parent, Paused: inv.Paused, Damage: inv.Damage, Admitted: inv.Admitted, Ended: inv.Ended}
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

func validStatus(name string) bool {
	switch name {
	case host.Queued, host.Unknown, host.Damaged:
		return true
	}
	for st := host.Running; st <= host.Conflict; st++ {
		if st.String() == name {
			return true
		}
	}
	return false
}

// State is where an invocation stands.
func (s *Service) State(inv string) (*api.RunState, error) {
	rs, err := s.E.State(inv)
	if err != nil {
		return nil, engineError(err)
	}
	return s.runState(inv, rs), nil
}

// runState is a host's RunState in the API's terms.
func (s *Service) runState(inv string, rs *host.RunState) *api.RunState {
	out := &api.RunState{Invocation: inv, Status: rs.Status.String(), Waiting: rs.Waiting, Awaits: rs.Awaits, Deadline: rs.Deadline, Paused: s.E.Clean(rs.Paused, 0),
		Started: rs.Admitted, Ended: rs.Ended}
	out.Steps, out.Tokens = s.E.Spent(inv)
	if len(rs.Result) > 0 {
		if j, err := dataJSON(rs.Result); err == nil {
			out.Result = j
			out.Answer = s.E.Clean(host.AnswerText(rs.Result), 0) // as the answer event has it
		}
	}
	if rs.Err != nil {
		out.Error = &api.RunError{Kind: rs.Err.Kind, Message: s.E.Clean(rs.Err.Msg, 0), Text: s.E.Clean(rs.Err.Error(), 0), Trace: rs.Err.Trace}
	}
	switch rs.Status {
	case host.Waiting:
		out.Command = fmt.Sprintf("runehost send %s TAG JSON", inv)
		if len(rs.Awaits) == 1 {
			out.Command = fmt.Sprintf("runehost send %s %s JSON", inv, host.ShellWord(rs.Awaits[0]))
		}
		if rs.Unknown != nil {
			out.Command = fmt.Sprintf("runehost resolve %s %d --outcome JSON", inv, rs.Unknown.Ordinal)
			out.Unknown = &api.Act{Invocation: inv, Ordinal: rs.Unknown.Ordinal, Tag: rs.Unknown.Tag, Phase: rs.Unknown.Phase.String()}
		}
	case host.Joining:
		out.Command = fmt.Sprintf("runehost ps (its children), runehost resume %s", inv)
	}
	// A tree sleeps only if its root sleeps at a timer or joins: any other
	// wait of the root answers without reading the tree.
	if rs.Status == host.Waiting && rs.Deadline != 0 && host.IsTimer(rs.Awaits) || rs.Status == host.Joining {
		until, err := s.E.Sleeps(inv)
		if err != nil && rs.Status == host.Waiting {
			until = rs.Deadline // the tree unread: looked at again at its root's deadline, not left for stuck
		}
		if until != 0 {
			out.Sleeps, out.Command = until, fmt.Sprintf("runehost resume %s", inv) // nothing to send: it goes on at its deadline
		}
	}
	return out
}

// Send delivers an event. Without a Loop it does not drive: the caller does.
func (s *Service) Send(inv string, req api.Send) (*api.RunState, error) {
	if req.Tag == "" {
		return nil, api.Errorf(api.CodeBadRequest, "send: want a tag")
	}
	payload, err := encodeJSON(req.Payload)
	if err != nil {
		return nil, api.Errorf(api.CodeBadRequest, "send: %v", err)
	}
	if err := s.room("send to "+inv, false); err != nil {
		return nil, err
	}
	if err := s.E.Deliver(inv, req.Tag, payload); err != nil {
		return nil, engineError(err)
	}
	s.notify()
	return s.State(inv)
}

// Resume makes an invocation runnable again (a pause lifted, a lost
// settlement charged).
func (s *Service) Resume(inv string) (*api.RunState, error) {
	if err := s.E.Ready(inv); err != nil {
		return nil, engineError(err)
	}
	s.notify()
	return s.State(inv)
}

// Cancel stops an invocation that has not ended; a turn running ends at
// its next slice.
func (s *Service) Cancel(inv string) error {
	return engineError(s.E.Cancel(inv))
}

// Resolve settles an act of unknown outcome as an operator says it ended.
func (s *Service) Resolve(inv string, ordinal uint64, req api.Resolve) (*api.RunState, error) {
	var r checkpoint.Reply
	switch {
	case (len(req.Outcome) > 0) == (req.Error != nil):
		return nil, api.Errorf(api.CodeBadRequest, "resolve: give exactly one of an outcome and an error")
	case req.Error != nil:
		if req.Error.Kind == "" || req.Error.Kind == "steps" || req.Error.Kind == "fault" {
			return nil, api.Errorf(api.CodeBadRequest, "resolve: an error wants a kind other than steps or fault")
		}
		r.Err = &checkpoint.Error{Kind: req.Error.Kind, Msg: req.Error.Message}
	default:
		d, err := checkpoint.DataFromJSON(req.Outcome)
		if err != nil {
			return nil, api.Errorf(api.CodeBadRequest, "resolve: outcome: %v", err)
		}
		r.Value = d
	}
	reply, err := checkpoint.EncodeReply(r)
	if err != nil {
		return nil, api.Errorf(api.CodeBadRequest, "resolve: %v", err)
	}
	if err := s.E.Settle(host.OpID{Invocation: inv, Ordinal: ordinal}, reply); err != nil {
		return nil, engineError(err)
	}
	if err := s.E.Ready(inv); err != nil {
		return nil, engineError(err)
	}
	s.notify()
	return s.State(inv)
}

// Grants lists the grants of prog (all when "").
func (s *Service) Grants(prog string) ([]api.Grant, error) {
	gs, err := s.E.Ward().List(prog)
	if err != nil {
		return nil, engineError(err)
	}
	out := []api.Grant{}
	for _, g := range gs {
		out = append(out, apiGrant(g))
	}
	return out, nil
}

func apiGrant(g host.Grant) api.Grant {
	if g.Damage != "" {
		return api.Grant{Prog: g.Subject, Statement: g.Statement, Damage: g.Damage}
	}
	return api.Grant{Prog: g.Subject, Statement: g.Statement, Tag: g.Tag(), Target: g.Target(), Granted: g.At}
}

// Grant grants each statement to prog, in order, stopping at the first
// refused; it returns those granted.
func (s *Service) Grant(req api.GrantRequest) ([]api.Grant, error) {
	if len(req.Statements) == 0 {
		return nil, api.Errorf(api.CodeBadRequest, "grant: want at least one statement")
	}
	if err := s.room("grant", false); err != nil {
		return nil, err
	}
	out := []api.Grant{}
	for _, st := range req.Statements {
		g, err := s.E.Grant(prog(req.Prog), st)
		if err != nil {
			return out, engineError(err)
		}
		out = append(out, apiGrant(*g))
	}
	return out, nil
}

// Revoke takes each statement back from prog, in order, stopping at the
// first that prog does not hold.
func (s *Service) Revoke(req api.GrantRequest) (*api.Revoked, error) {
	if len(req.Statements) == 0 {
		return nil, api.Errorf(api.CodeBadRequest, "revoke: want at least one statement")
	}
	if err := s.room("revoke", true); err != nil {
		return nil, err
	}
	out := &api.Revoked{Revoked: []string{}}
	for _, st := range req.Statements {
		ok, err := s.E.Revoke(prog(req.Prog), st)
		if err != nil {
			return out, engineError(err)
		}
		if !ok {
			return out, api.Errorf(api.CodeNotFound, "%s has no grant %q (runehost grants lists them)", prog(req.Prog), st)
		}
		out.Revoked = append(out.Revoked, st)
	}
	return out, nil
}

// room refuses what, before it writes anything, where the store has no
// room for it (host's Engine.room: inReserve for what stops work).
func (s *Service) room(what string, inReserve bool) error {
	if err := s.E.Store.Room(inReserve); err != nil {
		return engineError(fmt.Errorf("%s: nothing done: %w", what, err))
	}
	return nil
}

func prog(p string) string {
	if p == "" {
		return host.AnyProg
	}
	return p
}

// Events returns up to max events of inv from seq from (all when max is 0).
func (s *Service) Events(inv string, from uint64, max int) ([]events.Event, error) {
	evs, err := s.E.Events(inv, from, max)
	return evs, engineError(err)
}

// ParseOrdinal reads an act's ordinal.
func ParseOrdinal(s string) (uint64, error) {
	ord, err := strconv.ParseUint(s, 10, 64)
	if err != nil || ord == 0 {
		return 0, api.Errorf(api.CodeBadRequest, "ORDINAL must be a positive number (see runehost inspect)")
	}
	return ord, nil
}

// Drive runs inv's tree here until nothing in it is runnable, for a caller
// without a Loop (the CLI when no server runs), and says where inv stands.
// A failure of the engine in a child is returned with the state.
func (s *Service) Drive(ctx context.Context, inv string) (*api.RunState, error) {
	rs, err := s.E.RunTree(ctx, inv)
	if rs == nil {
		return nil, err
	}
	return s.runState(inv, rs), err
}
