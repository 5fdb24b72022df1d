// args.go reads model.chat's arguments into the request to send, each
// error of kind "value" naming the field that is wrong.

package model

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/runehost/runehost/acts/args"
	"github.com/runehost/runehost/checkpoint"
)

// chat is an act's arguments, read.
type chat struct {
	endpoint  string
	req       wireRequest // without the endpoint's model, before assembly
	maxTokens int64       // as the prog gave it; 0 when it gave none
	format    string      // "", "json_object" or "json_schema"
	schema    *jsonschema.Resolved
}

const want = "{messages, tools, tool_choice, response_format, max_tokens, temperature, stop, seed, stream, endpoint}"

var known = map[string]bool{"messages": true, "tools": true, "tool_choice": true, "response_format": true,
	"max_tokens": true, "temperature": true, "stop": true, "seed": true, "stream": true, "endpoint": true}

func bad(format string, a ...any) error { return args.Errorf("model.chat: "+format, a...) }

func parse(b []byte) (*chat, error) {
	m, err := args.Map(b, Tag, want)
	if err != nil {
		return nil, err
	}
	for _, k := range m.Keys {
		if ks, _ := k.(string); !known[ks] {
			return nil, bad("unknown argument %v (it takes %s)", k, want)
		}
	}
	c := &chat{endpoint: DefaultEndpoint}
	if v, ok := m.Get("endpoint"); ok {
		if c.endpoint, ok = v.(string); !ok {
			return nil, bad("endpoint must be a string")
		}
	}
	msgs, _ := m.Get("messages")
	list, ok := msgs.([]any)
	if !ok || len(list) == 0 {
		return nil, bad("messages must be a non-empty list of {role, content}")
	}
	for i, x := range list {
		wm, err := message(i, x)
		if err != nil {
			return nil, err
		}
		c.req.Messages = append(c.req.Messages, wm)
	}
	if v, ok := m.Get("tools"); ok {
		if c.req.Tools, err = tools(v); err != nil {
			return nil, err
		}
	}
	if v, ok := m.Get("tool_choice"); ok {
		if c.req.ToolChoice, err = toolChoice(v, c.req.Tools); err != nil {
			return nil, err
		}
	}
	if v, ok := m.Get("response_format"); ok {
		if err := c.responseFormat(v); err != nil {
			return nil, err
		}
	}
	if v, ok := m.Get("max_tokens"); ok {
		if c.maxTokens, ok = v.(int64); !ok || c.maxTokens <= 0 {
			return nil, bad("max_tokens must be a positive int")
		}
	}
	if v, ok := m.Get("temperature"); ok {
		f, ok := v.(float64)
		if i, iok := v.(int64); iok {
			f, ok = float64(i), true
		}
		if !ok {
			return nil, bad("temperature must be a number")
		}
		c.req.Temperature = &f
	}
	if v, ok := m.Get("stop"); ok {
		if c.req.Stop, err = stop(v); err != nil {
			return nil, err
		}
	}
	if v, ok := m.Get("seed"); ok {
		s, ok := v.(int64)
		if !ok {
			return nil, bad("seed must be an int")
		}
		c.req.Seed = &s
	}
	if v, ok := m.Get("stream"); ok {
		if c.req.Stream, ok = v.(bool); !ok {
			return nil, bad("stream must be true or false")
		}
	}
	return c, nil
}

// message reads messages[i].
func message(i int, x any) (wireMessage, error) {
	mm, ok := x.(*checkpoint.Map)
	if !ok {
		return wireMessage{}, bad("messages[%d] must be a map {role, content}", i)
	}
	r, _ := mm.Get("role")
	c, hasContent := mm.Get("content")
	role, _ := r.(string)
	wm := wireMessage{Role: role}
	switch role {
	case "system", "user":
		s, ok := c.(string)
		if !ok {
			return wm, bad("messages[%d].content must be a string", i)
		}
		wm.Content = &s
	case "assistant":
		if s, ok := c.(string); ok {
			wm.Content = &s
		} else if c != nil {
			return wm, bad("messages[%d].content must be a string or nil", i)
		}
		if tc, ok := mm.Get("tool_calls"); ok && tc != nil {
			calls, ok := tc.([]any)
			if !ok {
				return wm, bad("messages[%d].tool_calls must be a list of {id, name, arguments}", i)
			}
			for j, y := range calls {
				call, err := toolCall(i, j, y)
				if err != nil {
					return wm, err
				}
				wm.ToolCalls = append(wm.ToolCalls, call)
			}
		}
		if wm.Content != nil && *wm.Content == "" && len(wm.ToolCalls) > 0 {
			wm.Content = nil // as openai-go sends a turn that only calls tools
		}
		if wm.Content == nil && len(wm.ToolCalls) == 0 {
			empty := "" // a server wants content when there are no calls
			wm.Content = &empty
		}
	case "tool":
		id, ok := get(mm, "tool_call_id").(string)
		if !ok || id == "" {
			return wm, bad("messages[%d].tool_call_id must be the id of the call it answers", i)
		}
		if !hasContent {
			return wm, bad("messages[%d].content must be given: the tool's result", i)
		}
		s, err := text(c)
		if err != nil {
			return wm, bad("messages[%d].content: %v", i, err)
		}
		wm.ToolCallID, wm.Content = id, &s
	default:
		return wm, bad("messages[%d].role must be system, user, assistant or tool", i)
	}
	return wm, nil
}

// toolCall reads messages[i].tool_calls[j]: {id, name, arguments}, or the
// wire's {id, type: "function", function: {name, arguments}}.
func toolCall(i, j int, y any) (wireToolCall, error) {
	cm, ok := y.(*checkpoint.Map)
	if !ok {
		return wireToolCall{}, bad("messages[%d].tool_calls[%d] must be a map {id, name, arguments}", i, j)
	}
	fm := cm
	if f, ok := get(cm, "function").(*checkpoint.Map); ok {
		fm = f
	}
	id, _ := get(cm, "id").(string)
	name, _ := get(fm, "name").(string)
	if id == "" || name == "" {
		return wireToolCall{}, bad("messages[%d].tool_calls[%d] needs a string id and name", i, j)
	}
	a, ok := fm.Get("arguments")
	s := "{}"
	if ok {
		var err error
		if s, err = text(a); err != nil {
			return wireToolCall{}, bad("messages[%d].tool_calls[%d].arguments: %v", i, j, err)
		}
	}
	return wireToolCall{ID: id, Type: "function", Function: wireFunction{Name: name, Arguments: wireArgs(s)}}, nil
}

func tools(v any) ([]wireTool, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, bad("tools must be a list of {name, description, parameters}")
	}
	var out []wireTool
	seen := map[string]bool{}
	for i, x := range list {
		tm, ok := x.(*checkpoint.Map)
		if !ok {
			return nil, bad("tools[%d] must be a map {name, description, parameters}", i)
		}
		if f, ok := get(tm, "function").(*checkpoint.Map); ok {
			tm = f // the wire's {type: "function", function: {...}}
		}
		name, _ := get(tm, "name").(string)
		if name == "" {
			return nil, bad("tools[%d].name must be a non-empty string", i)
		}
		if seen[name] {
			return nil, bad("tools[%d].name %q is given twice", i, name)
		}
		seen[name] = true
		def := wireFunctionDef{Name: name, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
		if d, ok := tm.Get("description"); ok && d != nil {
			if def.Description, ok = d.(string); !ok {
				return nil, bad("tools[%d].description must be a string", i)
			}
		}
		if p, ok := tm.Get("parameters"); ok && p != nil {
			if _, ok := p.(*checkpoint.Map); !ok {
				return nil, bad("tools[%d].parameters must be a map (a JSON Schema)", i)
			}
			b, err := checkpoint.DataToJSON(p)
			if err != nil {
				return nil, bad("tools[%d].parameters: %v", i, err)
			}
			def.Parameters = b
		}
		out = append(out, wireTool{Type: "function", Function: def})
	}
	return out, nil
}

func toolChoice(v any, tools []wireTool) (json.RawMessage, error) {
	if s, ok := v.(string); ok && (s == "auto" || s == "none" || s == "required") {
		return json.Marshal(s)
	}
	m, ok := v.(*checkpoint.Map)
	name, _ := get(m, "name").(string)
	if !ok || name == "" {
		return nil, bad(`tool_choice must be "auto", "none", "required" or {name: TOOL}`)
	}
	for _, t := range tools {
		if t.Function.Name == name {
			return json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name}})
		}
	}
	return nil, bad("tool_choice names %q, which is not one of tools", name)
}

func (c *chat) responseFormat(v any) error {
	if v == "json_object" {
		c.format, c.req.ResponseFormat = "json_object", json.RawMessage(`{"type":"json_object"}`)
		return nil
	}
	m, ok := v.(*checkpoint.Map)
	if !ok {
		return bad(`response_format must be "json_object" or {name, schema, strict}`)
	}
	for _, k := range m.Keys {
		if k != "name" && k != "schema" && k != "strict" {
			return bad("response_format: unknown field %v (it takes name, schema, strict)", k)
		}
	}
	js := map[string]any{"name": "reply"}
	if n, ok := m.Get("name"); ok {
		if js["name"], ok = n.(string); !ok || n == "" {
			return bad("response_format.name must be a non-empty string")
		}
	}
	if s, ok := m.Get("strict"); ok {
		if js["strict"], ok = s.(bool); !ok {
			return bad("response_format.strict must be true or false")
		}
	}
	s, _ := m.Get("schema")
	if _, ok := s.(*checkpoint.Map); !ok {
		return bad("response_format.schema must be a map (a JSON Schema)")
	}
	b, err := checkpoint.DataToJSON(s)
	if err != nil {
		return bad("response_format.schema: %v", err)
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(b, &sch); err != nil {
		return bad("response_format.schema is not a JSON Schema: %v", err)
	}
	if c.schema, err = sch.Resolve(nil); err != nil {
		return bad("response_format.schema: %v", err)
	}
	js["schema"] = json.RawMessage(b)
	c.format = "json_schema"
	c.req.ResponseFormat, _ = json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
	return nil
}

func stop(v any) (json.RawMessage, error) {
	if s, ok := v.(string); ok {
		return json.Marshal(s)
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, bad("stop must be a string or a non-empty list of strings")
	}
	out := make([]string, len(list))
	for i, x := range list {
		if out[i], ok = x.(string); !ok {
			return nil, bad("stop[%d] must be a string", i)
		}
	}
	return json.Marshal(out)
}

// text is a value sent as a string: a string as is, any other data value
// JSON-encoded.
func text(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := checkpoint.DataToJSON(v)
	if err != nil {
		return "", fmt.Errorf("has no JSON form: %v", err)
	}
	return string(b), nil
}

// get is m's value for k, nil when m is nil or has no k.
func get(m *checkpoint.Map, k string) any {
	if m == nil {
		return nil
	}
	v, _ := m.Get(k)
	return v
}
