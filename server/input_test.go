// input_test.go checks that an input or a payload a prog could not take is
// refused as a bad request before anything is admitted or delivered.

package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runehost/runehost/api"
	"github.com/runehost/runehost/guest/port"
	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/store"
)

func TestOversizedInputRefused(t *testing.T) {
	s, err := store.Open(store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := host.NewEngine(s, port.NewNative(), 1, func() int64 { return time.Now().UnixMilli() })
	svc := &Service{E: e}
	list := json.RawMessage("[" + strings.Repeat("0,", 1<<20) + "0]")
	str := json.RawMessage(`"` + strings.Repeat("a", 8<<20+1) + `"`)
	for _, in := range []json.RawMessage{list, str} {
		_, err := svc.Run(context.Background(), api.RunRequest{Prog: "p", Source: "let ev = await {key: \"go\"}\nreturn ev", Input: in})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeBadRequest || !strings.Contains(ae.Message, "exceeds the limit") {
			t.Fatalf("run: %v", err)
		}
	}
	if ids, err := e.InvocationIDs("", 10); err != nil || len(ids) != 0 {
		t.Fatalf("admitted: %v %v", ids, err)
	}
	if _, err := svc.Run(context.Background(), api.RunRequest{Prog: "p", Source: "let ev = await {key: \"go\"}\nreturn ev"}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Send("r1", api.Send{Tag: "go", Payload: list})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeBadRequest || !strings.Contains(ae.Message, "exceeds the limit") {
		t.Fatalf("send: %v", err)
	}
}
