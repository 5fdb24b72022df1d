// tokens.go holds model-token accounting: the adapters whose acts spend
// tokens, and the invocation's token allowance beside its step allowance.
//
// The token allowance is an Allowance stored under "tok" (the steps' is
// under "alw"), with the same invariant charged + held + lent <= limit, kept
// by the same checked change in synced transactions. An act of a Metered
// adapter holds what it may spend in the transaction that records its
// attempt (the figure is kept on the attempt), and the transaction that
// records its outcome charges what it spent and returns the rest. Only one
// act of an invocation is open at a time, so what is held is the open
// attempt's reservation; a crash between the two leaves it held, and
// whatever settles the attempt settles it: a reconciliation that reopens
// it charges it in full (it may have been spent), an operator's resolution
// charges it in full, a recorded reply charges its usage.

package host

import (
	"context"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/store"
)

// DefaultTokens is the model-token limit of an invocation admitted without
// one (WithTokens): about a hundred short chat turns, or a few long ones.
// A limit of 0 allows no model calls.
const DefaultTokens = 200_000

// Metered is an adapter whose acts spend model tokens from the invocation's
// token allowance. Reserve says, before the act is attempted, the most it
// can spend (its prompt as estimated, and its max_tokens, which the adapter
// sends so the server keeps to it); an act that would exceed what is left
// is refused with a limit error before anything is sent. Spent says, from
// the act's reply (a decoded data value), what it did spend (its usage).
type Metered interface {
	Adapter
	Reserve(op *Operation) (uint64, error)
	Spent(reply any) uint64
}

func tokenKey(inv string) store.Key { return store.K("tok", inv) }

type tokensCtx struct{}

// WithTokens returns ctx carrying the model-token limit of the invocation
// admitted under it (Start, Admit, AdmitBound); without it an invocation
// gets DefaultTokens. Admission's signature stays as it is for its callers.
func WithTokens(ctx context.Context, limit uint64) context.Context {
	return context.WithValue(ctx, tokensCtx{}, limit)
}

// tokensOf is the token limit ctx carries, or DefaultTokens.
func tokensOf(ctx context.Context) uint64 {
	if n, ok := ctx.Value(tokensCtx{}).(uint64); ok {
		return n
	}
	return DefaultTokens
}

// Tokens returns an invocation's model-token allowance. One admitted
// before token allowances has DefaultTokens, none spent.
func (a *Accounts) Tokens(inv string) (Allowance, error) {
	var al Allowance
	err := a.s.View(func(tx *store.Tx) error {
		al = Allowance{} // a View may run again
		found, err := tx.Get(tokenKey(inv), &al)
		if err == nil && !found {
			if found, err = tx.Get(allowanceKey(inv), &Allowance{}); err == nil && !found {
				err = fmt.Errorf("%s: %w", inv, ErrNoAllowance)
			}
			al = Allowance{Limit: DefaultTokens}
		}
		return err
	})
	return al, err
}

// recoverTokens charges the tokens an invocation holds for an attempt left
// open (a cancel): they may have been spent. Settling the attempt later
// charges nothing more (chargeTokensTx).
func (a *Accounts) recoverTokens(inv string) error {
	return a.s.RetryInReserve(store.Synced, func(tx *store.Tx) error {
		var al Allowance
		found, err := tx.Get(tokenKey(inv), &al)
		if err != nil || !found || al.Held == 0 {
			return err
		}
		_, err = changeTokens(tx, inv, func(al *Allowance) error {
			al.Charged += al.Held
			al.Held = 0
			return nil
		})
		return err
	})
}

// changeTokens applies f to inv's token allowance within tx, checked as
// changeAllowance checks. An invocation admitted before token allowances
// (no record) starts from DefaultTokens.
func changeTokens(tx *store.Tx, inv string, f func(al *Allowance) error) (Allowance, error) {
	return changeAt(tx, tokenKey(inv), inv, func(al *Allowance, found bool) error {
		if !found {
			*al = Allowance{Limit: DefaultTokens}
		}
		return f(al)
	})
}

// reserveTokensTx holds want tokens for an attempt of inv, within tx. ok is
// false, and nothing is held, when fewer are available; al says what was.
func reserveTokensTx(tx *store.Tx, inv string, want uint64) (al Allowance, ok bool, err error) {
	al, err = changeTokens(tx, inv, func(al *Allowance) error {
		if ok = al.Available() >= want; ok {
			al.Held += want
		}
		return nil
	})
	return al, ok, err
}

// chargeTokensTx ends an attempt's reservation within tx: what it spent is
// charged, the rest returned. Spending more than was reserved is charged up
// to what is available beside it, never past the limit; charged says what
// was. A reservation no longer held (a child's tree settled, an old
// record) charges nothing more.
func chargeTokensTx(tx *store.Tx, inv string, reserved, spent uint64) (charged uint64, err error) {
	if reserved == 0 && spent == 0 {
		return 0, nil
	}
	_, err = changeTokens(tx, inv, func(al *Allowance) error {
		if al.Held < reserved {
			charged = 0
			return nil
		}
		al.Held -= reserved
		charged = min(spent, al.Available()) // the reservation is available again
		al.Charged += charged
		return nil
	})
	return charged, err
}

// tokenCharge is what recording an act's outcome charged of its reservation.
type tokenCharge struct {
	tag                      string
	reserved, spent, charged uint64
}

// warnCharge warns of an act that spent more than it reserved.
func (e *Engine) warnCharge(inv string, c *tokenCharge) {
	if c == nil || c.spent <= c.reserved {
		return
	}
	e.warn(inv, "tokens", fmt.Sprintf("act %s spent %d model tokens, over its reservation of %d: %d charged", c.tag, c.spent, c.reserved, c.charged))
}

// spentBy is what an outcome spent of a reservation: the adapter's Spent of
// its reply; for an error, what its data says it spent (errorSpent), else
// the whole reservation for an error of kind "model" (the model answered,
// but not as its contract says) and nothing for any other (refused, or the
// server never answered); the whole reservation when an operator settled it
// (it may have been spent), when the adapter is no longer Metered, or when
// its Spent panics (it runs inside the outcome's transaction: it must not
// take the host down).
func (e *Engine) spentBy(tag string, o Outcome, reply []byte, reserved uint64) (spent uint64) {
	defer func() {
		if recover() != nil {
			spent = reserved
		}
	}()
	m, ok := e.Adapters[tag].(Metered)
	if !ok || o.Source == "operator" {
		return reserved
	}
	r, err := checkpoint.DecodeReply(reply)
	switch {
	case err != nil:
		return reserved
	case r.Err != nil:
		if n, ok := errorSpent(r.Err); ok {
			return n
		}
		if r.Err.Kind == "model" {
			return reserved
		}
		return 0
	}
	return m.Spent(r.Value)
}

// errorSpent is what a failed act says it spent: its error's data
// {spent_tokens: N}, which an adapter gives an error that came once the
// model had begun to answer (a stream cut, a reply over its cap).
func errorSpent(ce *checkpoint.Error) (uint64, bool) {
	if len(ce.Data) == 0 {
		return 0, false
	}
	d, err := checkpoint.DecodeData(ce.Data)
	m, ok := d.(*checkpoint.Map)
	if err != nil || !ok {
		return 0, false
	}
	v, _ := m.Get("spent_tokens")
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, false
	}
	return uint64(n), true
}

// recordChargedTx is recordTx that also charges the tokens the attempt
// held: the outcome and the charge are one transaction. A receipt (the
// outcome recorded before) charges nothing; nor does an attempt that held
// none. reply is the outcome's reply, also when o names it by reference.
func (e *Engine) recordChargedTx(tx *store.Tx, id OpID, o Outcome, reply []byte) (*Operation, *tokenCharge, error) {
	var before Operation
	found, err := tx.Get(id.key(), &before)
	if err != nil {
		return nil, nil, err
	}
	op, err := recordTx(tx, id, o)
	if err != nil || !found || before.Attempt == nil || before.Attempt.Tokens == 0 || (before.Phase != Attempted && before.Phase != Unresolved) {
		return op, nil, err
	}
	c := &tokenCharge{tag: op.Tag, reserved: before.Attempt.Tokens}
	c.spent = e.spentBy(op.Tag, o, reply, c.reserved)
	if c.charged, err = chargeTokensTx(tx, id.Invocation, c.reserved, c.spent); err != nil {
		return nil, nil, err
	}
	return op, c, nil
}

// attemptPreparedTx records pr's attempt within tx. An act of a Metered
// adapter holds its reservation in the same transaction, or, when the
// allowance has too little left, is refused with a reply of kind "limit"
// (pr.refused) before anything is sent.
func attemptPreparedTx(tx *store.Tx, pr *prepared) (*Operation, error) {
	if pr.stamped {
		if err := checkGrantsTx(tx, pr.stamp); err != nil {
			return nil, err
		}
	}
	a := pr.plain
	if pr.metered {
		pr.refused = nil // this transaction decides, retried or not
		al, ok, err := reserveTokensTx(tx, pr.id.Invocation, pr.tokens)
		if err != nil {
			return nil, err
		}
		if ok {
			a.Tokens = pr.tokens
		} else {
			a.Executor = "tokens"
			why := fmt.Sprintf("act %s: it may spend %d model tokens, and the allowance has %d left (%d of %d charged, %d held, %d lent)",
				pr.tag, pr.tokens, al.Available(), al.Charged, al.Limit, al.Held, al.Lent)
			if al.Limit == 0 {
				why += "; it was given none: run it with --tokens N, or spawn it with tokens: N"
			}
			pr.refused = limitReply("%s", why)
		}
	}
	op, err := attemptTx(tx, pr.id, a)
	if err == nil {
		pr.op, pr.attempt = op, a
	}
	return op, err
}
