// wire.go holds the chat completions wire format, written by hand with the
// field names and JSON tags of github.com/openai/openai-go/v3, so that a
// later switch to the SDK stays cheap (docs/acts.md says why not now).

package model

import (
	"bytes"
	"encoding/json"
	"strings"
)

// wireRequest is ChatCompletionNewParams: a field left at its zero value is
// not sent.
type wireRequest struct {
	// Model is the endpoint's; with none configured (RUNEHOST_MODEL unset)
	// the field is left out, for a server that serves one model, rather
	// than sent empty.
	Model          string             `json:"model,omitempty"`
	Messages       []wireMessage      `json:"messages"`
	Tools          []wireTool         `json:"tools,omitempty"`
	ToolChoice     json.RawMessage    `json:"tool_choice,omitempty"`
	ResponseFormat json.RawMessage    `json:"response_format,omitempty"`
	MaxTokens      int64              `json:"max_tokens,omitempty"`
	Temperature    *float64           `json:"temperature,omitempty"`
	Stop           json.RawMessage    `json:"stop,omitempty"`
	Seed           *int64             `json:"seed,omitempty"`
	Stream         bool               `json:"stream,omitempty"`
	StreamOptions  *wireStreamOptions `json:"stream_options,omitempty"`
}

// wireStreamOptions asks for the usage-only chunk at the end of a stream.
type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage is a message both ways: sent (ChatCompletionMessageParamUnion)
// and received (ChatCompletionMessage, or a chunk's delta). Content is nil
// for an assistant turn that only calls tools, which then sends no content.
type wireMessage struct {
	Role       string         `json:"role,omitempty"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// UnmarshalJSON reads a message as servers send it: content a string, null,
// or a list of parts whose text parts are joined (other parts, images and
// the like, are left out).
func (m *wireMessage) UnmarshalJSON(b []byte) error {
	type plain wireMessage
	var aux struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*m = wireMessage(aux.plain)
	c := bytes.TrimSpace(aux.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return err
		}
		var s strings.Builder
		for _, p := range parts {
			if p.Text != nil && (p.Type == "text" || p.Type == "output_text") {
				s.WriteString(*p.Text)
			}
		}
		text := s.String()
		m.Content = &text
	default:
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return err
		}
		m.Content = &s
	}
	return nil
}

// wireToolCall is a function tool call; in a stream, a fragment of one
// (Index says which).
type wireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

// wireFunction is a call's function: Arguments is JSON text in a string.
type wireFunction struct {
	Name      string   `json:"name,omitempty"`
	Arguments wireArgs `json:"arguments"`
}

// wireArgs is a call's arguments: the wire's JSON string, or (from a server
// that sends them as an object) that object's text.
type wireArgs string

// UnmarshalJSON takes a string as is and any other JSON value as its text.
func (a *wireArgs) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		err := json.Unmarshal(b, &s)
		*a = wireArgs(s)
		return err
	}
	if bytes.Equal(b, []byte("null")) {
		*a = ""
		return nil
	}
	*a = wireArgs(b)
	return nil
}

// wireTool is ChatCompletionFunctionTool.
type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

// wireFunctionDef is shared.FunctionDefinitionParam.
type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// wireResponse is a ChatCompletion, or a ChatCompletionChunk of a stream
// (its choices carry Delta), or an error event of a stream.
type wireResponse struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// wireChoice is one choice; runehost asks for one and reads index 0.
type wireChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	Delta        wireMessage `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

// wireUsage is CompletionUsage.
type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// errorMessage is the message of a wire error: {"message": ...} or a string,
// or the raw text when it is neither.
func errorMessage(raw json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	return string(raw)
}
