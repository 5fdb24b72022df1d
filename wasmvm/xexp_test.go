package wasmvm

import (
	"context"
	"os"
	"testing"

	"github.com/runehost/runehost/guest/port"
)

func TestXExp(t *testing.T) {
	mod, err := os.ReadFile(os.Getenv("XGUEST"))
	if err != nil {
		t.Skip()
	}
	ctx := context.Background()
	sb, err := New(ctx, Config{Module: mod, CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	src := os.Getenv("XSRC")
	cp, err := sb.Start(ctx, port.Input{Source: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		r, err := sb.Step(ctx, port.Request{Checkpoint: cp, Slice: 1000})
		if err != nil {
			t.Fatal(err)
		}
		cp = r.Checkpoint
		if r.Kind != port.Yield {
			t.Logf("%s %d", r.Kind, r.Used)
			return
		}
	}
}
