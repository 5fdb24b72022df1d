// context.go fits a request to the endpoint's context budget, estimating
// tokens at four bytes each: messages (their calls' arguments and tool
// results included) and the tools' schemas.

package model

import (
	"encoding/json"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
)

// estimate is the tokens of n bytes of text.
func estimate(n int) int64 { return int64(n+3) / 4 }

// tokens estimates a message's tokens, and a few for the message itself.
func tokens(m wireMessage) int64 {
	n := len(m.ToolCallID)
	if m.Content != nil {
		n += len(*m.Content)
	}
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments) + 8
	}
	return estimate(n) + 4
}

// toolTokens estimates what the tools' definitions (and a response
// schema) take of the context: the server puts them in the prompt.
func toolTokens(req *wireRequest) int64 {
	if len(req.Tools) == 0 && len(req.ResponseFormat) == 0 {
		return 0
	}
	b, _ := json.Marshal(req.Tools)
	return estimate(len(b) + len(req.ResponseFormat))
}

// blocks groups messages into what is kept or dropped as one: an assistant
// turn with tool calls and the tool replies that follow it, since a server
// rejects a reply whose call is gone (and a call left without its reply).
// Every other message is a block of its own. It returns each block's first
// index; a block runs to the next one's.
func blocks(msgs []wireMessage) []int {
	var starts []int
	for i, m := range msgs {
		if m.Role == "tool" && i > 0 && len(starts) > 0 {
			if first := msgs[starts[len(starts)-1]]; first.Role == "assistant" && len(first.ToolCalls) > 0 {
				continue
			}
		}
		starts = append(starts, i)
	}
	return starts
}

// assemble fits messages to a budget less what the tools take: every system
// message and the last block stay; the others are admitted newest first
// while they fit, and the older ones dropped (no holes in a conversation).
// It returns the messages in their order, the admitted and dropped messages
// as {name, tokens}, and the prompt's estimated tokens.
func assemble(req *wireRequest, budget int64) ([]wireMessage, []any, []any, int64) {
	if budget <= 0 {
		budget = DefaultContextTokens
	}
	msgs := req.Messages
	starts := blocks(msgs)
	end := func(b int) int {
		if b+1 < len(starts) {
			return starts[b+1]
		}
		return len(msgs)
	}
	cost := func(b int) (n int64) {
		for i := starts[b]; i < end(b); i++ {
			n += tokens(msgs[i])
		}
		return n
	}
	keep := make([]bool, len(starts))
	used := toolTokens(req)
	for b := range starts {
		if msgs[starts[b]].Role == "system" || b == len(starts)-1 {
			keep[b] = true
			used += cost(b)
		}
	}
	for b := len(starts) - 2; b >= 0; b-- {
		if keep[b] {
			continue
		}
		if used+cost(b) > budget {
			break // older ones are dropped too
		}
		keep[b] = true
		used += cost(b)
	}
	var out []wireMessage
	admitted, dropped := []any{}, []any{}
	for b := range starts {
		for i := starts[b]; i < end(b); i++ {
			e := &checkpoint.Map{}
			e.Set("name", fmt.Sprintf("%s#%d", msgs[i].Role, i+1))
			e.Set("tokens", tokens(msgs[i]))
			if keep[b] {
				out = append(out, msgs[i])
				admitted = append(admitted, e)
			} else {
				dropped = append(dropped, e)
			}
		}
	}
	return out, admitted, dropped, used
}
