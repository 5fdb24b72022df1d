// reply.go turns a completion into the reply the prog sees: content, tool
// calls with parsed arguments, the parsed value under a response_format
// (checked against its schema), finish, model, usage and context.

package model

import (
	"encoding/json"
	"fmt"

	"github.com/runehost/runehost/checkpoint"
)

// replyOf builds the reply; a content that breaks the response format is
// an error of kind "model" (its message not yet redacted).
func (c *chat) replyOf(msg wireMessage, finish, model string, u *wireUsage, admitted, dropped []any) (*checkpoint.Map, error) {
	content := ""
	if msg.Content != nil {
		content = *msg.Content
	}
	out := &checkpoint.Map{}
	out.Set("content", content)
	calls := []any{}
	for _, tc := range msg.ToolCalls {
		cm := &checkpoint.Map{}
		cm.Set("id", tc.ID)
		cm.Set("name", tc.Function.Name)
		raw := string(tc.Function.Arguments)
		if raw == "" {
			raw = "{}" // a call with no arguments, as some servers stream it
		}
		if v, err := checkpoint.DataFromJSON([]byte(raw)); err == nil {
			cm.Set("arguments", v)
		} else {
			// Models emit invalid JSON at times: the prog decides what to
			// do (say so to the model), the act does not fail.
			cm.Set("arguments", string(tc.Function.Arguments))
			cm.Set("arguments_error", err.Error())
		}
		calls = append(calls, cm)
	}
	out.Set("tool_calls", calls)
	if c.format != "" {
		v, err := c.check(content)
		if err != nil {
			return nil, err
		}
		out.Set("parsed", v)
	}
	out.Set("finish_reason", finish)
	out.Set("model", model)
	if u == nil {
		u = &wireUsage{}
	}
	um := &checkpoint.Map{}
	um.Set("prompt_tokens", u.PromptTokens)
	um.Set("completion_tokens", u.CompletionTokens)
	um.Set("total_tokens", u.TotalTokens)
	out.Set("usage", um)
	ctxm := &checkpoint.Map{}
	ctxm.Set("admitted", admitted)
	ctxm.Set("dropped", dropped)
	out.Set("context", ctxm)
	return out, nil
}

// check parses content as the response format wants, and validates it
// against the schema.
func (c *chat) check(content string) (any, error) {
	var inst any
	if err := json.Unmarshal([]byte(content), &inst); err != nil {
		return nil, &streamError{kind: "model", msg: fmt.Sprintf("the reply is not JSON (response_format %s): %v", c.format, err)}
	}
	if _, ok := inst.(map[string]any); c.format == "json_object" && !ok {
		return nil, &streamError{kind: "model", msg: "the reply is not a JSON object (response_format json_object)"}
	}
	if c.schema != nil {
		if err := c.schema.Validate(inst); err != nil {
			return nil, &streamError{kind: "model", msg: "the reply does not match its schema: " + err.Error()}
		}
	}
	v, err := checkpoint.DataFromJSON([]byte(content))
	if err != nil {
		return nil, &streamError{kind: "model", msg: "the reply: " + err.Error()}
	}
	return v, nil
}
