// role_test.go checks roles on a shared store: one host holds a role while
// it lives, and another takes it once it is gone.

package host

import (
	"context"
	"testing"
	"time"
)

func TestRoleHeldByOneHost(t *testing.T) {
	es := sharedHosts(t, 2, newJournal())
	a, b := es[0], es[1]
	heldA, err := a.HoldRole(context.Background(), "slack")
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := b.RoleHolder("slack"); h != a.Host() {
		t.Fatalf("the role is %q's, want %s's", h, a.Host())
	}
	// While a lives, b does not get it; should a's beat lapse on a busy
	// machine, a has let it go first.
	short, cancel := context.WithTimeout(context.Background(), 2*ClaimFor)
	heldB, err := b.HoldRole(short, "slack")
	cancel()
	if err == nil && heldA.Err() == nil {
		t.Fatal("two hosts hold the role at once")
	}
	if err == nil { // a's beat lapsed on a busy machine, and it let the role go first: as it must
		t.Logf("host a's beat lapsed (%v); host b took the role after", heldA.Err())
		return
	}
	kill(a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if heldB, err = b.HoldRole(ctx, "slack"); err != nil {
		t.Fatalf("host b never took the role of a dead host: %v", err)
	}
	if heldA.Err() == nil {
		t.Fatal("host b took the role while host a still held it")
	}
	if heldB.Err() != nil {
		t.Fatalf("host b lost the role at once: %v", heldB.Err())
	}
	if h, _ := b.RoleHolder("slack"); h != b.Host() {
		t.Fatalf("the role is %q's, want %s's", h, b.Host())
	}
}

// On a store of its own a host holds every role at once.
func TestRoleOnAStoreOfItsOwn(t *testing.T) {
	e := engine(t, memStore(t), 1)
	ctx, err := e.HoldRole(context.Background(), "slack")
	if err != nil || ctx.Err() != nil {
		t.Fatalf("held: %v %v", err, ctx.Err())
	}
}
