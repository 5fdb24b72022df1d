// fuzz_test.go feeds model.chat any reply a server could send, whole or
// streamed: the act never panics, its reply is data the machine takes, and
// its error is one the prog sees, with the key taken out.

package model_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/runehost/runehost/acts/acttest"
	"github.com/runehost/runehost/acts/model"
	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/host"
)

// canned answers every request with one body, without a network.
type canned struct {
	contentType string
	body        []byte
}

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {c.contentType}},
		Body: io.NopCloser(strings.NewReader(string(c.body))), Request: r}, nil
}

func FuzzReply(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}],"usage":{"total_tokens":3}}`,
		`{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":[1,{\"b\":null}]}"}}]}}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`,
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"He\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
		"data: {\"error\":{\"message\":\"bad key sk-fuzz-key-0123456789\"}}\n\n",
		"event: error\ndata: oops\n\n: keep-alive\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}",
		`{"choices":[{"index":0,"message":{"content":"{\"n\":1}"},"finish_reason":"stop"}]}`,
	} {
		f.Add([]byte(s), strings.HasPrefix(s, "data") || strings.HasPrefix(s, "event"), false)
		f.Add([]byte(s), strings.HasPrefix(s, "data") || strings.HasPrefix(s, "event"), true)
	}
	const key = "sk-fuzz-key-0123456789"
	f.Fuzz(func(t *testing.T, body []byte, stream, schema bool) {
		ct := "application/json"
		args := `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "f"}]`
		if stream {
			ct, args = "text/event-stream", args+`, "stream": true`
		}
		if schema {
			args += `, "response_format": {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}`
		}
		a := &model.Adapter{Client: &http.Client{Transport: canned{ct, body}},
			Endpoints: map[string]model.Endpoint{"default": {Name: "default", BaseURL: "http://model.test/v1", Key: key}}}
		v, err := a.Do(context.Background(), &host.Operation{Tag: model.Tag, Args: acttest.Data(t, args+`}`)})
		if err != nil {
			var ce *checkpoint.Error
			if !errors.As(err, &ce) || ce.Kind == "" {
				t.Fatalf("an error the prog does not see: %v", err)
			}
			if strings.Contains(ce.Msg, key) {
				t.Fatalf("the key in the error: %s", ce.Msg)
			}
			return
		}
		b, err := checkpoint.EncodeData(v)
		if err != nil {
			t.Fatalf("the reply is not data: %v", err)
		}
		if _, err := checkpoint.DecodeData(b); err != nil {
			t.Fatalf("the reply does not decode: %v", err)
		}
		if a.Spent(v) > 1<<40 {
			t.Fatalf("spent %d", a.Spent(v))
		}
	})
}
