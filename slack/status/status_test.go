// status_test.go: the coalescer's and the budget's rules, each with a fake
// clock, one test per rule.

package status

import (
	"fmt"
	"testing"
	"time"

	"github.com/runehost/runehost/slack/clock"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

type sink struct {
	clk  *clock.Fake
	sent []string // key@seconds
}

func (s *sink) send(f Frame) {
	s.sent = append(s.sent, fmt.Sprintf("%s@%d", f.Key, int(s.clk.Now().Sub(t0).Seconds())))
}

func coalescer() (*Coalescer, *clock.Fake, *sink) {
	clk := clock.NewFake(t0)
	s := &sink{clk: clk}
	return NewCoalescer(clk, 3*time.Second, s.send), clk, s
}

func TestCoalescerFirstFrameAtOnce(t *testing.T) {
	c, clk, s := coalescer()
	c.Update(Frame{Key: "a"})
	clk.Advance(10 * time.Second) // a quiet stretch
	c.Update(Frame{Key: "b"})
	if fmt.Sprint(s.sent) != "[a@0 b@10]" {
		t.Fatal(s.sent)
	}
}

func TestCoalescerBurstOneTrailingEdit(t *testing.T) {
	c, clk, s := coalescer()
	c.Update(Frame{Key: "a"})
	clk.Advance(500 * time.Millisecond)
	c.Update(Frame{Key: "b"})
	c.Update(Frame{Key: "c"})
	clk.Advance(time.Second)
	c.Update(Frame{Key: "d"})
	clk.Advance(5 * time.Second)
	if fmt.Sprint(s.sent) != "[a@0 d@3]" {
		t.Fatal(s.sent)
	}
}

func TestCoalescerIdenticalSkipped(t *testing.T) {
	c, clk, s := coalescer()
	c.Update(Frame{Key: "a"})
	clk.Advance(time.Second)
	c.Update(Frame{Key: "b"}) // pending...
	c.Update(Frame{Key: "a"}) // ...and back to what is shown: nothing to send
	clk.Advance(10 * time.Second)
	c.Update(Frame{Key: "a"}) // after a quiet stretch, still the same
	if fmt.Sprint(s.sent) != "[a@0]" {
		t.Fatal(s.sent)
	}
}

func TestCoalescerTerminalAtOnceNothingAfter(t *testing.T) {
	c, clk, s := coalescer()
	c.Update(Frame{Key: "a"})
	clk.Advance(time.Second)
	c.Update(Frame{Key: "b"}) // pending trailing edit
	c.Close(Frame{Key: "done"})
	c.Update(Frame{Key: "late"})
	clk.Advance(time.Minute)
	if fmt.Sprint(s.sent) != "[a@0 done@1]" || clk.Pending() != 0 {
		t.Fatal(s.sent)
	}
}

func budget() (*Budget, *clock.Fake) {
	clk := clock.NewFake(t0)
	return NewBudget(clk, BudgetConfig{PerMinute: 70, Burst: 10, Refill: 60, Reserve: 4, ChannelGap: time.Second, LiveWindow: 30 * time.Second}), clk
}

func TestBudgetProgressStopsAtReserve(t *testing.T) {
	b, _ := budget()
	n := 0
	for i := 0; i < 20; i++ {
		if b.Progress("card", fmt.Sprintf("C%d", i)) {
			n++
		}
	}
	if n != 6 || b.Tokens() != 4 { // 10 tokens, 4 kept for terminal frames
		t.Fatalf("%d progress frames, %v tokens left", n, b.Tokens())
	}
}

func TestBudgetChannelSpacing(t *testing.T) {
	b, clk := budget()
	if !b.Progress("a", "C1") || b.Progress("b", "C1") {
		t.Fatal("two edits in one channel within a second")
	}
	if !b.Progress("b", "C2") {
		t.Fatal("another channel was held up")
	}
	clk.Advance(time.Second)
	if !b.Progress("b", "C1") {
		t.Fatal("the channel did not free up")
	}
}

func TestBudgetFairShare(t *testing.T) {
	clk := clock.NewFake(t0)
	b := NewBudget(clk, BudgetConfig{PerMinute: 106, Burst: 100, Refill: 6, Reserve: 1, ChannelGap: time.Millisecond, LiveWindow: 30 * time.Second})
	b.Touch("quiet")
	n := 0
	for i := 0; i < 10; i++ {
		if b.Progress("busy", fmt.Sprintf("C%d", i)) {
			n++
		}
	}
	if n != 3 { // 6 a minute shared by two live cards
		t.Fatalf("busy card got %d edits", n)
	}
	clk.Advance(31 * time.Second) // the quiet card is swept out of the share
	n = 0
	for i := 0; i < 10; i++ {
		if b.Progress("busy", fmt.Sprintf("D%d", i)) {
			n++
		}
	}
	if n != 3 { // its share is all 6 now, 3 used in the last minute
		t.Fatalf("busy card alone got %d more edits", n)
	}
}

func TestBudgetTerminalTakesTheReserve(t *testing.T) {
	b, _ := budget()
	for i := 0; i < 20; i++ {
		b.Progress("p", fmt.Sprintf("C%d", i))
	}
	if at := b.Terminal("card", "T1"); !at.Equal(t0) {
		t.Fatalf("terminal frame waits until %v with the reserve full", at)
	}
}

func TestBudgetTerminalReservesAndProgressYields(t *testing.T) {
	b, clk := budget()
	for i := 0; i < 10; i++ {
		b.Terminal(fmt.Sprintf("c%d", i), fmt.Sprintf("C%d", i)) // empties the bucket
	}
	at := b.Terminal("late", "T")
	if want := t0.Add(time.Second); !at.Equal(want) { // 1 token a second
		t.Fatalf("funded at %v, want %v", at, want)
	}
	clk.Advance(500 * time.Millisecond)
	if b.Progress("p", "P") {
		t.Fatal("a progress frame jumped ahead of a terminal frame's reservation")
	}
}

func TestBudgetRefillCapped(t *testing.T) {
	b, clk := budget()
	for i := 0; i < 6; i++ {
		b.Progress("p", fmt.Sprintf("C%d", i))
	}
	clk.Advance(3 * time.Second)
	if got := b.Tokens(); got != 7 {
		t.Fatalf("refilled to %v, want 7", got)
	}
	clk.Advance(time.Hour)
	if got := b.Tokens(); got != 10 {
		t.Fatalf("refilled to %v, want the cap 10", got)
	}
}

func TestBudgetClockBackwards(t *testing.T) {
	b, clk := budget()
	for i := 0; i < 6; i++ {
		b.Progress("p", fmt.Sprintf("C%d", i))
	}
	clk.Set(t0.Add(-time.Hour))
	if got := b.Tokens(); got != 4 {
		t.Fatalf("a clock going backwards moved the bucket to %v", got)
	}
	clk.Set(t0.Add(2 * time.Second))
	if got := b.Tokens(); got != 6 {
		t.Fatalf("after the clock came back: %v, want 6", got)
	}
}

func TestBudgetThrottled(t *testing.T) {
	b, clk := budget()
	b.Throttled(5 * time.Second)
	if b.Progress("p", "C") {
		t.Fatal("progress during Retry-After")
	}
	if at := b.Terminal("t", "T"); !at.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("terminal at %v", at)
	}
	clk.Advance(6 * time.Second)
	if !b.Progress("p", "C") {
		t.Fatal("still blocked after Retry-After")
	}
}
