// blocks.go: what Slack checks in a message's text and blocks, with its error
// codes: invalid_blocks_format, invalid_blocks (with the [ERROR] lines Slack
// puts in response_metadata.messages), msg_blocks_too_long, msg_too_long and
// no_text.

package fakeslack

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Slack's limits on a message, as documented (Block Kit reference) or, for
// the blocks' text, as projects report it ("roughly 12-13k" characters).
const (
	MaxBlocks        = 50      // blocks in one message
	MaxBlockID       = 255     // characters of a block_id
	maxSectionText   = 3000    // characters of a section's text
	maxFieldText     = 2000    // characters of each of a section's fields
	maxFields        = 10      // fields in a section
	maxHeaderText    = 150     // characters of a header's text
	maxContextItems  = 10      // elements of a context block
	maxActions       = 25      // elements of an actions block
	maxMarkdownText  = 12000   // characters of a markdown block
	MaxBlocksText    = 12000   // characters of text in all the blocks of a message
	MaxMessageText   = 40000   // characters of a message's top-level text
	maxListIndent    = 8       // indent of a rich_text_list
	maxBlocksPayload = 1 << 20 // bytes of the blocks field (far above the rest)
)

// checkMessage answers what Slack would for a message with this text and
// blocks (the form fields as sent): "" and nil when it would take it.
func checkMessage(text, blocks, attachments string, maxText int) (string, []string) {
	if text == "" && blocks == "" && attachments == "" {
		return "no_text", nil
	}
	if utf8.RuneCountInString(text) > MaxMessageText {
		return "msg_too_long", nil
	}
	if blocks == "" {
		return "", nil
	}
	if len(blocks) > maxBlocksPayload {
		return "msg_blocks_too_long", nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(blocks), &list); err != nil {
		return "invalid_blocks_format", nil
	}
	v := &validator{ids: map[string]bool{}}
	if len(list) > MaxBlocks {
		v.errf("/blocks", "no more than %d items allowed", MaxBlocks)
	}
	for i, raw := range list {
		var b map[string]any
		if err := json.Unmarshal(raw, &b); err != nil || b == nil {
			v.errf(fmt.Sprintf("/blocks/%d", i), "must be an object")
			continue
		}
		v.block(fmt.Sprintf("/blocks/%d", i), b)
	}
	if len(v.msgs) > 0 {
		return "invalid_blocks", v.msgs
	}
	if maxText <= 0 {
		maxText = MaxBlocksText
	}
	n := 0
	for _, raw := range list {
		var b any
		json.Unmarshal(raw, &b)
		n += textIn(b)
	}
	if n > maxText {
		return "msg_blocks_too_long", nil
	}
	return "", nil
}

// textIn counts the characters of every "text" string in v.
func textIn(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "text" {
				n += utf8.RuneCountInString(s)
			} else {
				n += textIn(x)
			}
		}
	case []any:
		for _, x := range v {
			n += textIn(x)
		}
	}
	return n
}

type validator struct {
	ids  map[string]bool
	msgs []string
}

// errf adds an error the way Slack words them in response_metadata.
func (v *validator) errf(ptr, format string, args ...any) {
	v.msgs = append(v.msgs, fmt.Sprintf("[ERROR] "+format+" [json-pointer:%s]", append(args, ptr)...))
}

// Block types Slack takes in a message that the fake checks only by type.
var otherBlocks = map[string]bool{
	"actions": true, "context_actions": true, "file": true, "input": true, "call": true, "video": true,
	"table": true, "data_table": true, "data_visualization": true, "task_card": true, "plan": true,
	"alert": true, "auth_provider": true, "card": true, "carousel": true, "container": true, "layout": true,
}

func (v *validator) block(ptr string, b map[string]any) {
	if id, ok := b["block_id"]; ok {
		s, isStr := id.(string)
		switch {
		case !isStr:
			v.errf(ptr+"/block_id", "must be a string")
		case utf8.RuneCountInString(s) > MaxBlockID:
			v.errf(ptr+"/block_id", "must be less than %d characters", MaxBlockID+1)
		case s == "":
			v.errf(ptr+"/block_id", "must be more than 0 characters")
		case v.ids[s]:
			v.errf(ptr+"/block_id", "duplicate block_id %q", s)
		default:
			v.ids[s] = true
		}
	}
	typ, _ := b["type"].(string)
	switch typ {
	case "":
		v.errf(ptr, "missing required field: type")
	case "section":
		text, hasText := b["text"]
		fields, hasFields := b["fields"]
		if !hasText && !hasFields {
			v.errf(ptr, "must provide either text or fields")
		}
		if hasText {
			v.textObject(ptr+"/text", text, "", maxSectionText)
		}
		if hasFields {
			fs, ok := fields.([]any)
			switch {
			case !ok:
				v.errf(ptr+"/fields", "must be an array")
			case len(fs) == 0 && !hasText:
				v.errf(ptr+"/fields", "must provide at least 1 item")
			case len(fs) > maxFields:
				v.errf(ptr+"/fields", "no more than %d items allowed", maxFields)
			}
			for i, f := range fs {
				v.textObject(fmt.Sprintf("%s/fields/%d", ptr, i), f, "", maxFieldText)
			}
		}
		if acc, ok := b["accessory"]; ok {
			if m, ok := acc.(map[string]any); !ok || m["type"] == nil {
				v.errf(ptr+"/accessory", "missing required field: type")
			}
		}
	case "divider":
	case "header":
		text, ok := b["text"]
		if !ok {
			v.errf(ptr, "missing required field: text")
		} else {
			v.textObject(ptr+"/text", text, "plain_text", maxHeaderText)
		}
	case "context":
		els := v.elements(ptr, b, maxContextItems)
		for i, e := range els {
			p := fmt.Sprintf("%s/elements/%d", ptr, i)
			if m, ok := e.(map[string]any); ok && m["type"] == "image" {
				v.image(p, m)
			} else {
				v.textObject(p, e, "", maxSectionText)
			}
		}
	case "image":
		v.image(ptr, b)
	case "markdown":
		v.text(ptr, b, maxMarkdownText)
	case "rich_text":
		els := v.elements(ptr, b, 0)
		for i, e := range els {
			v.richElement(fmt.Sprintf("%s/elements/%d", ptr, i), e)
		}
	default:
		if !otherBlocks[typ] {
			v.errf(ptr+"/type", "unsupported type: %s", typ)
			return
		}
		if typ == "actions" {
			v.elements(ptr, b, maxActions)
		}
	}
}

// textObject checks a plain_text or mrkdwn object (only kind, if set).
func (v *validator) textObject(ptr string, x any, kind string, limit int) {
	m, ok := x.(map[string]any)
	if !ok {
		v.errf(ptr, "must be an object")
		return
	}
	typ, _ := m["type"].(string)
	if typ != "plain_text" && typ != "mrkdwn" || kind != "" && typ != kind {
		want := "plain_text or mrkdwn"
		if kind != "" {
			want = kind
		}
		v.errf(ptr+"/type", "must be %s, not %q", want, typ)
	}
	v.text(ptr, m, limit)
}

// text checks m's text field: present, not empty, at most limit characters.
func (v *validator) text(ptr string, m map[string]any, limit int) {
	s, ok := m["text"].(string)
	switch {
	case !ok:
		v.errf(ptr, "missing required field: text")
	case s == "":
		v.errf(ptr+"/text", "must be more than 0 characters")
	case utf8.RuneCountInString(s) > limit:
		v.errf(ptr+"/text", "must be less than %d characters", limit+1)
	}
}

func (v *validator) image(ptr string, m map[string]any) {
	url, _ := m["image_url"].(string)
	if url == "" && m["slack_file"] == nil {
		v.errf(ptr, "must provide either image_url or slack_file")
	}
	if alt, _ := m["alt_text"].(string); alt == "" {
		v.errf(ptr, "missing required field: alt_text")
	}
}

// Inline elements of a rich_text section, quote or preformatted, with the
// field each must carry.
var inline = map[string]string{
	"text": "text", "link": "url", "emoji": "name", "user": "user_id", "channel": "channel_id",
	"usergroup": "usergroup_id", "team": "team_id", "broadcast": "range", "date": "timestamp", "color": "value",
	"attachment_mention": "", "canvas": "", "canvas_message_unfurl": "", "canvas_user_mention": "", "citation": "",
	"file": "", "list_record": "", "message_mention": "", "salesforce_data_field": "", "tag": "",
	"work_object_mention": "", "workflow_mention": "",
}

func (v *validator) richElement(ptr string, x any) {
	m, ok := x.(map[string]any)
	if !ok {
		v.errf(ptr, "must be an object")
		return
	}
	typ, _ := m["type"].(string)
	switch typ {
	case "rich_text_section", "rich_text_quote", "rich_text_preformatted":
		els := v.elements(ptr, m, 0)
		for i, e := range els {
			v.inlineElement(fmt.Sprintf("%s/elements/%d", ptr, i), e)
		}
	case "rich_text_list":
		if style, _ := m["style"].(string); style != "bullet" && style != "ordered" {
			v.errf(ptr+"/style", "must be one of bullet, ordered")
		}
		if in, ok := m["indent"]; ok {
			if f, ok := in.(float64); !ok || f < 0 || f > maxListIndent || f != float64(int(f)) {
				v.errf(ptr+"/indent", "must be an integer from 0 to %d", maxListIndent)
			}
		}
		els := v.elements(ptr, m, 0)
		for i, e := range els {
			p := fmt.Sprintf("%s/elements/%d", ptr, i)
			if em, ok := e.(map[string]any); !ok || em["type"] != "rich_text_section" {
				v.errf(p+"/type", "must be rich_text_section")
				continue
			}
			v.richElement(p, e)
		}
	default:
		v.errf(ptr+"/type", "must be one of rich_text_section, rich_text_list, rich_text_preformatted, rich_text_quote, not %q", typ)
	}
}

func (v *validator) inlineElement(ptr string, x any) {
	m, ok := x.(map[string]any)
	if !ok {
		v.errf(ptr, "must be an object")
		return
	}
	typ, _ := m["type"].(string)
	field, known := inline[typ]
	if !known {
		v.errf(ptr+"/type", "unsupported type: %q", typ)
		return
	}
	if field == "" {
		return
	}
	switch f := m[field].(type) {
	case string:
		if f == "" {
			v.errf(ptr+"/"+field, "must be more than 0 characters")
		}
	case float64:
		if field != "timestamp" {
			v.errf(ptr+"/"+field, "must be a string")
		}
	default:
		v.errf(ptr, "missing required field: %s", field)
	}
}

// elements is the elements list of the object m at ptr, reported missing,
// empty or (max > 0) over max as Slack does.
func (v *validator) elements(ptr string, m map[string]any, max int) []any {
	els, ok := m["elements"].([]any)
	switch {
	case !ok:
		v.errf(ptr, "missing required field: elements")
	case len(els) == 0:
		v.errf(ptr+"/elements", "must provide at least 1 item")
	case max > 0 && len(els) > max:
		v.errf(ptr+"/elements", "no more than %d items allowed", max)
	}
	return els
}
